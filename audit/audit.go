// Package audit stores the agent audit log: one row per tool call, tool
// failure, session stop and run ended from outside, in the
// agent_audit_log table of an embedded SQLite file (the default) or a
// PostgreSQL database.
//
// Rows are idempotent: (session_id, run_id, call_id, event) is unique and a
// second Record of the same key does nothing, so an activity retried after
// a lost result neither duplicates nor loses a row.
package audit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenixrt/fenix/redact"
)

// Row events.
const (
	EventToolCall    = "TOOL_CALL"
	EventToolFailure = "TOOL_FAILURE"
	EventSessionStop = "SESSION_STOP"
	// EventRunEnded rows record a run Temporal ended from outside, where
	// no stage ran to record it: terminated by an operator, or past its
	// execution timeout (Status "terminated" or "timed_out").
	EventRunEnded = "RUN_ENDED"
)

// Size caps applied by Record, so one huge tool output cannot bloat the log.
const (
	MaxOutputPreviewBytes = 512
	MaxErrorBytes         = 2048
	// MaxArgsHashBytes fits "sha256:" and 64 hex digits with room.
	MaxArgsHashBytes = 128
)

// Row is one audit log entry.
type Row struct {
	// ID is assigned by the store; Record ignores it.
	ID             int64  `json:"id"`
	SessionID      string `json:"session_id"`
	RunID          string `json:"run_id"`
	ConversationID string `json:"conversation_id"`
	TurnID         string `json:"turn_id"`
	// CallID is empty for SESSION_STOP rows.
	CallID        string `json:"call_id"`
	ToolName      string `json:"tool_name"`
	Event         string `json:"event"`
	Status        string `json:"status"`
	DurationMS    int64  `json:"duration_ms"`
	OutputPreview string `json:"output_preview"`
	Error         string `json:"error"`
	// ArgsHash is contract.ArgumentsHash of the arguments a TOOL_CALL or
	// TOOL_FAILURE row's call ran with (after hooks' updatedInput), the
	// hash a PERMISSION_DECISION row approved; empty on other rows and on
	// rows written before the column existed.
	ArgsHash string `json:"args_hash,omitempty"`
	// CreatedAt defaults to the time of Record. On a retried Record the
	// first row's time is kept.
	CreatedAt time.Time `json:"created_at"`
}

// Key is the row's idempotency key.
func (r Row) Key() string {
	return r.SessionID + "/" + r.RunID + "/" + r.CallID + "/" + r.Event
}

// Validate checks the fields the idempotency key needs.
func (r Row) Validate() error {
	switch {
	case r.SessionID == "":
		return fmt.Errorf("audit row for event %q has no session_id", r.Event)
	case r.Event == "":
		return fmt.Errorf("audit row for session %q has no event", r.SessionID)
	case (r.Event == EventToolCall || r.Event == EventToolFailure || r.Event == EventPermissionDecision) && r.CallID == "":
		return fmt.Errorf("audit row %s for tool %q in session %q has no call_id: it would collide with every other call", r.Event, r.ToolName, r.SessionID)
	}
	return nil
}

// normalize caps and cleans the row so every backend stores the same bytes
// (PostgreSQL rejects invalid UTF-8 and NUL bytes in text columns).
func (r Row) normalize(now time.Time) Row {
	r.SessionID = cleanText(r.SessionID)
	r.RunID = cleanText(r.RunID)
	r.ConversationID = cleanText(r.ConversationID)
	r.TurnID = cleanText(r.TurnID)
	r.CallID = cleanText(r.CallID)
	r.ToolName = cleanText(r.ToolName)
	r.Event = cleanText(r.Event)
	r.Status = cleanText(r.Status)
	r.OutputPreview = Preview(r.OutputPreview, MaxOutputPreviewBytes)
	r.Error = Preview(r.Error, MaxErrorBytes)
	r.ArgsHash = Preview(r.ArgsHash, MaxArgsHashBytes)
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	// Microseconds: the precision both backends keep, so a row reads back
	// equal to what was written.
	r.CreatedAt = r.CreatedAt.UTC().Truncate(time.Microsecond)
	return r
}

const ellipsis = "…"

// Preview returns s as valid UTF-8 without NUL bytes, cut to at most max
// bytes on a rune boundary, with "…" marking a cut.
func Preview(s string, max int) string {
	s = cleanText(s)
	if len(s) <= max {
		return s
	}
	if max <= len(ellipsis) {
		return ""
	}
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

// Filter selects rows; empty fields match everything.
type Filter struct {
	SessionID string
	RunID     string
	CallID    string
	Event     string
	// Limit caps Query's rows; 0 means no cap.
	Limit int
}

// Store is an audit log backend.
type Store interface {
	// Record writes r unless a row with the same key exists.
	Record(ctx context.Context, r Row) error
	// Count counts the rows matching f.
	Count(ctx context.Context, f Filter) (int, error)
	// Query returns the rows matching f, oldest first.
	Query(ctx context.Context, f Filter) ([]Row, error)
	Close() error
}

// Open opens the store named by dsn: a "postgres://" or "postgresql://" URL
// (any case) or a libpq keyword string ("host=… dbname=…") selects
// PostgreSQL, a SQLite file path (optionally prefixed "sqlite://";
// relative to the working directory) SQLite, created with its directory
// if missing. Another URL scheme is an error: "mysql://x" used to become
// a SQLite file named "mysql:/x" in the working directory, which no
// command was kept from.
func Open(ctx context.Context, dsn string) (*SQLStore, error) {
	postgres, sqlite, err := parseDSN(dsn)
	switch {
	case err != nil:
		return nil, err
	case postgres:
		return OpenPostgres(ctx, strings.TrimSpace(dsn))
	default:
		return OpenSQLite(ctx, sqlite)
	}
}

// SQLiteFile is the SQLite file dsn names, absolute, or false where it
// names PostgreSQL, an in-memory database or nothing valid: what the
// worker hides from commands with the journal files beside it.
func SQLiteFile(dsn string) (string, bool) {
	postgres, sqlite, err := parseDSN(dsn)
	if err != nil || postgres {
		return "", false
	}
	file, query, _ := strings.Cut(sqlite, "?")
	file = strings.TrimPrefix(file, "file:")
	if file == "" || file == ":memory:" || strings.Contains(query, "mode=memory") {
		return "", false
	}
	return file, true
}

var (
	urlScheme   = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)
	libpqKeyval = regexp.MustCompile(`^\s*(host|hostaddr|dbname|user|port|service)\s*=`)
)

// parseDSN reads dsn: PostgreSQL's, or the SQLite path it names, absolute
// unless it is a "file:" URI or in memory.
func parseDSN(dsn string) (postgres bool, sqlite string, err error) {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return false, "", errors.New("audit store DSN is empty: pass a SQLite file path or a postgres:// URL")
	}
	if m := urlScheme.FindStringSubmatch(dsn); m != nil {
		switch strings.ToLower(m[1]) {
		case "postgres", "postgresql":
			return true, "", nil
		case "sqlite":
			dsn = dsn[len(m[0]):]
		default:
			return false, "", fmt.Errorf("audit store DSN %s: unknown scheme %q: use a postgres:// URL or a SQLite file path (sqlite:// optional)", redact.DSN(dsn), m[1])
		}
	} else if libpqKeyval.MatchString(dsn) {
		return true, "", nil
	}
	file, query, hasQuery := strings.Cut(dsn, "?")
	if file == "" || file == ":memory:" || strings.HasPrefix(file, "file:") || filepath.IsAbs(file) {
		return false, dsn, nil
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return false, "", fmt.Errorf("audit SQLite path %s: %w", file, err)
	}
	if hasQuery {
		abs += "?" + query
	}
	return false, abs, nil
}
