package audit

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// SQLiteBusyTimeout is how long a writer waits for another connection's
// lock before failing with SQLITE_BUSY.
const SQLiteBusyTimeout = 5 * time.Second

const sqliteSchema = `CREATE TABLE IF NOT EXISTS agent_audit_log (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id      TEXT    NOT NULL,
	run_id          TEXT    NOT NULL DEFAULT '',
	conversation_id TEXT    NOT NULL DEFAULT '',
	turn_id         TEXT    NOT NULL DEFAULT '',
	call_id         TEXT    NOT NULL DEFAULT '',
	tool_name       TEXT    NOT NULL DEFAULT '',
	event           TEXT    NOT NULL,
	status          TEXT    NOT NULL DEFAULT '',
	duration_ms     INTEGER NOT NULL DEFAULT 0,
	output_preview  TEXT    NOT NULL DEFAULT '',
	error           TEXT    NOT NULL DEFAULT '',
	created_at      TEXT    NOT NULL,
	CONSTRAINT agent_audit_log_idempotency UNIQUE (session_id, run_id, call_id, event)
)`

const sqliteIndex = `CREATE INDEX IF NOT EXISTS agent_audit_log_session_created
	ON agent_audit_log (session_id, created_at)`

var sqliteDialect = dialect{
	name:        "sqlite",
	placeholder: func(int) string { return "?" },
	encodeTime:  func(t time.Time) any { return t.UTC().Format(timeLayout) },
	migrate: func(ctx context.Context, db *sql.DB) error {
		for _, stmt := range []string{sqliteSchema, sqliteIndex} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		// SQLite has no ADD COLUMN IF NOT EXISTS: ask the table first.
		for _, c := range addedColumns {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?", TableName, c[0]).Scan(&n); err != nil {
				return fmt.Errorf("reading the columns of %s: %w", TableName, err)
			}
			if n > 0 {
				continue
			}
			if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", TableName, c[0], c[1])); err != nil {
				return fmt.Errorf("adding column %s: %w", c[0], err)
			}
		}
		return nil
	},
}

// OpenSQLite opens (creating if needed) the SQLite audit log at path, in
// WAL mode so readers do not block the writer, with a busy timeout so
// concurrent activities wait for each other instead of failing.
func OpenSQLite(ctx context.Context, path string) (*SQLStore, error) {
	file, query, _ := strings.Cut(path, "?")
	if file == "" {
		return nil, fmt.Errorf("audit SQLite path is empty: pass a file path such as ./fenix-audit.db")
	}
	memory := file == ":memory:" || strings.Contains(query, "mode=memory")
	if !memory {
		dir := filepath.Dir(strings.TrimPrefix(file, "file:"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("audit SQLite store %s: creating directory %s: %w", file, dir, err)
		}
	}
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", SQLiteBusyTimeout.Milliseconds()))
	if !memory {
		params.Add("_pragma", "journal_mode(WAL)")
		params.Add("_pragma", "synchronous(NORMAL)")
	}
	dsn := file + "?" + params.Encode()
	if query != "" {
		dsn += "&" + query
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("audit SQLite store %s: %w", file, err)
	}
	if memory {
		// Every connection to ":memory:" is a separate database.
		db.SetMaxOpenConns(1)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit SQLite store %s: opening: %w", file, err)
	}
	if err := sqliteDialect.migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit SQLite store %s: creating table %s: %w", file, TableName, err)
	}
	store, err := newSQLStore(ctx, db, sqliteDialect, file)
	if err != nil {
		db.Close()
		return nil, err
	}
	return store, nil
}
