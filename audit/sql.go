package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// TableName is the audit log table.
const TableName = "agent_audit_log"

// columns in insert and select order (id and created_at excluded).
var columns = []string{
	"session_id", "run_id", "conversation_id", "turn_id", "call_id", "tool_name",
	"event", "status", "duration_ms", "output_preview", "error", "args_hash",
}

// addedColumns are the columns later versions added, with their
// definition: migrate adds each to a table created before it existed.
var addedColumns = [][2]string{
	{"args_hash", "TEXT NOT NULL DEFAULT ''"},
}

// dialect is what differs between SQLite and PostgreSQL.
type dialect struct {
	name string
	// placeholder returns the n-th (1-based) bind parameter.
	placeholder func(n int) string
	// encodeTime turns a time into the created_at column's value.
	encodeTime func(time.Time) any
	// migrate creates the table and indexes.
	migrate func(ctx context.Context, db *sql.DB) error
}

// SQLStore is the Store over database/sql used by both backends.
type SQLStore struct {
	db      *sql.DB
	dialect dialect
	now     func() time.Time
	// insert is prepared once: SQLite parses a statement on every
	// unprepared Exec, which was half the cost of a row.
	insert *sql.Stmt
	// location says where the store is, for error messages; no secrets.
	location string
	// writer commits the rows of concurrent Records together.
	writer *groupCommit
}

var _ Store = (*SQLStore)(nil)

func newSQLStore(ctx context.Context, db *sql.DB, d dialect, location string) (*SQLStore, error) {
	ph := make([]string, 0, len(columns)+1)
	for i := range len(columns) + 1 {
		ph = append(ph, d.placeholder(i+1))
	}
	insert := fmt.Sprintf(
		"INSERT INTO %s (%s, created_at) VALUES (%s) ON CONFLICT (session_id, run_id, call_id, event) DO NOTHING",
		TableName, strings.Join(columns, ", "), strings.Join(ph, ", "))
	stmt, err := db.PrepareContext(ctx, insert)
	if err != nil {
		return nil, fmt.Errorf("audit %s store %s: preparing the insert into %s: %w", d.name, location, TableName, err)
	}
	s := &SQLStore{db: db, dialect: d, now: time.Now, insert: stmt, location: location}
	s.writer = newGroupCommit(s.commitGroup)
	return s, nil
}

// Dialect is "sqlite" or "postgres".
func (s *SQLStore) Dialect() string { return s.dialect.name }

// DB exposes the connection pool, for tests and maintenance.
func (s *SQLStore) DB() *sql.DB { return s.db }

// Close closes the connection pool.
func (s *SQLStore) Close() error {
	s.writer.close()
	s.insert.Close()
	return s.db.Close()
}

// Record writes r unless a row with the same key exists, and returns once
// the row is committed (with the rows of concurrent Records: see
// groupCommit).
func (s *SQLStore) Record(ctx context.Context, r Row) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.writer.submit(ctx, r.normalize(s.now())); err != nil {
		return fmt.Errorf("audit %s store %s: recording %s row %s: %w", s.dialect.name, s.location, r.Event, r.Key(), err)
	}
	return nil
}

func (s *SQLStore) where(f Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(col, val string) {
		if val == "" {
			return
		}
		args = append(args, val)
		conds = append(conds, col+" = "+s.dialect.placeholder(len(args)))
	}
	add("session_id", f.SessionID)
	add("run_id", f.RunID)
	add("call_id", f.CallID)
	add("event", f.Event)
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// Count counts the rows matching f.
func (s *SQLStore) Count(ctx context.Context, f Filter) (int, error) {
	where, args := s.where(f)
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+TableName+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("audit %s store %s: counting rows: %w", s.dialect.name, s.location, err)
	}
	return n, nil
}

// Query returns the rows matching f, oldest first.
func (s *SQLStore) Query(ctx context.Context, f Filter) ([]Row, error) {
	where, args := s.where(f)
	q := fmt.Sprintf("SELECT id, %s, created_at FROM %s%s ORDER BY id", strings.Join(columns, ", "), TableName, where)
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit %s store %s: querying rows: %w", s.dialect.name, s.location, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		var created any
		if err := rows.Scan(&r.ID, &r.SessionID, &r.RunID, &r.ConversationID, &r.TurnID, &r.CallID,
			&r.ToolName, &r.Event, &r.Status, &r.DurationMS, &r.OutputPreview, &r.Error, &r.ArgsHash, &created); err != nil {
			return nil, fmt.Errorf("audit %s store %s: reading a row: %w", s.dialect.name, s.location, err)
		}
		if r.CreatedAt, err = decodeTime(created); err != nil {
			return nil, fmt.Errorf("audit %s store %s: row %d: %w", s.dialect.name, s.location, r.ID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit %s store %s: reading rows: %w", s.dialect.name, s.location, err)
	}
	return out, nil
}

// timeLayout is fixed-width so SQLite's text timestamps sort as times.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

func decodeTime(v any) (time.Time, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case string:
		return parseTime(t)
	case []byte:
		return parseTime(string(t))
	default:
		return time.Time{}, fmt.Errorf("created_at has unexpected type %T", v)
	}
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("created_at %q is not an RFC 3339 time: %w", s, err)
	}
	return t.UTC(), nil
}
