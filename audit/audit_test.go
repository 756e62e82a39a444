package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func sampleRows(session string) []Row {
	return []Row{
		{SessionID: session, RunID: "run-1", ConversationID: "conv", TurnID: "turn", CallID: "c1",
			ToolName: "calculator", Event: EventToolCall, Status: "completed", DurationMS: 4, OutputPreview: "4",
			ArgsHash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{SessionID: session, RunID: "run-1", CallID: "c2", ToolName: "exec_command",
			Event: EventToolFailure, Status: "failed", DurationMS: 30000, Error: "ToolTimeoutError: too slow"},
		{SessionID: session, RunID: "run-1", Event: EventSessionStop, Status: "completed"},
	}
}

// exerciseStore is the behaviour every backend must have.
func exerciseStore(t *testing.T, store Store, session string) {
	t.Helper()
	ctx := context.Background()
	rows := sampleRows(session)
	for attempt := range 2 { // the second pass is an activity retry
		for _, r := range rows {
			if attempt == 1 {
				r.CreatedAt = time.Now().Add(time.Hour) // a retry must not overwrite
			}
			if err := store.Record(ctx, r); err != nil {
				t.Fatalf("attempt %d: %v", attempt, err)
			}
		}
	}
	n, err := store.Count(ctx, Filter{SessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("count = %d after recording 3 rows twice, want 3", n)
	}
	stops, err := store.Query(ctx, Filter{SessionID: session, Event: EventSessionStop})
	if err != nil {
		t.Fatal(err)
	}
	if len(stops) != 1 || stops[0].Status != "completed" || stops[0].CallID != "" || stops[0].RunID != "run-1" {
		t.Fatalf("SESSION_STOP rows = %+v", stops)
	}
	got, err := store.Query(ctx, Filter{SessionID: session})
	if err != nil {
		t.Fatal(err)
	}
	first := got[0]
	want := rows[0]
	if first.ID == 0 || first.CallID != want.CallID || first.ToolName != want.ToolName || first.ConversationID != "conv" ||
		first.TurnID != "turn" || first.DurationMS != 4 || first.OutputPreview != "4" || first.Event != EventToolCall || first.ArgsHash != want.ArgsHash {
		t.Errorf("first row = %+v", first)
	}
	if first.CreatedAt.After(time.Now().Add(time.Minute)) || first.CreatedAt.IsZero() {
		t.Errorf("created_at = %s: the retry's time overwrote the first write", first.CreatedAt)
	}
	if got[1].Error != "ToolTimeoutError: too slow" {
		t.Errorf("failure row = %+v", got[1])
	}
	// A new run of the same workflow (continue-as-new) is a new key.
	next := rows[2]
	next.RunID = "run-2"
	if err := store.Record(ctx, next); err != nil {
		t.Fatal(err)
	}
	if n, _ := store.Count(ctx, Filter{SessionID: session, Event: EventSessionStop}); n != 2 {
		t.Errorf("SESSION_STOP rows across runs = %d, want 2", n)
	}
	if n, _ := store.Count(ctx, Filter{SessionID: session, RunID: "run-2"}); n != 1 {
		t.Errorf("rows of run-2 = %d, want 1", n)
	}
	if limited, _ := store.Query(ctx, Filter{SessionID: session, Limit: 2}); len(limited) != 2 {
		t.Errorf("limit 2 returned %d rows", len(limited))
	}

	long := Row{SessionID: session, RunID: "run-1", CallID: "big", Event: EventToolCall,
		OutputPreview: strings.Repeat("é", 600) + "\x00\xff"}
	if err := store.Record(ctx, long); err != nil {
		t.Fatal(err)
	}
	big, _ := store.Query(ctx, Filter{SessionID: session, CallID: "big"})
	if len(big) != 1 || len(big[0].OutputPreview) > MaxOutputPreviewBytes || !utf8.ValidString(big[0].OutputPreview) || !strings.HasSuffix(big[0].OutputPreview, "…") {
		t.Errorf("preview of a long output = %q (%d bytes)", big[0].OutputPreview, len(big[0].OutputPreview))
	}
}

func openSQLite(t *testing.T) *SQLStore {
	t.Helper()
	store, err := Open(context.Background(), filepath.Join(t.TempDir(), "nested", "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if store.Dialect() != "sqlite" {
		t.Fatalf("dialect = %s", store.Dialect())
	}
	return store
}

func TestSQLiteStore(t *testing.T) {
	exerciseStore(t, openSQLite(t), "wf-sqlite")
}

func TestSQLiteStoreIsWALAndSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	ctx := context.Background()
	store, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := store.DB().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, err = %v, want wal", mode, err)
	}
	var busy int
	if err := store.DB().QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil || busy != int(SQLiteBusyTimeout.Milliseconds()) {
		t.Errorf("busy_timeout = %d, err = %v", busy, err)
	}
	if err := store.Record(ctx, sampleRows("wf")[2]); err != nil {
		t.Fatal(err)
	}
	store.Close()

	again, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := again.Record(ctx, sampleRows("wf")[2]); err != nil {
		t.Fatal(err)
	}
	if n, _ := again.Count(ctx, Filter{}); n != 1 {
		t.Errorf("rows after reopen and re-record = %d, want 1", n)
	}
}

func TestSQLiteConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	ctx := context.Background()
	// Two stores on one file: two workers on one host.
	var stores []*SQLStore
	for range 2 {
		s, err := OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				// Every call is written by two writers, as a retry racing the original would.
				row := Row{SessionID: "wf", RunID: "r", CallID: fmt.Sprintf("c%d", i+25*(w/2)), Event: EventToolCall}
				if err := stores[w%2].Record(ctx, row); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, _ := stores[0].Count(ctx, Filter{SessionID: "wf"}); n != 50 {
		t.Errorf("rows = %d, want 50 distinct calls", n)
	}
}

func TestMemorySQLite(t *testing.T) {
	store, err := OpenSQLite(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	exerciseStore(t, store, "wf-memory")
}

func TestRecordValidates(t *testing.T) {
	store := openSQLite(t)
	ctx := context.Background()
	tests := []struct {
		row  Row
		want string
	}{
		{Row{Event: EventSessionStop}, "no session_id"},
		{Row{SessionID: "s"}, "no event"},
		{Row{SessionID: "s", Event: EventToolCall, ToolName: "calculator"}, "no call_id"},
	}
	for _, tc := range tests {
		if err := store.Record(ctx, tc.row); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Record(%+v) = %v, want an error about %s", tc.row, err, tc.want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, "  "); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty DSN: %v", err)
	}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(blocker, "audit.db")
	if _, err := Open(ctx, bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("unusable path: %v, want an error naming it", err)
	}
}

// A DSN with a scheme the audit log does not speak is refused, naming
// it: "mysql://x" became a SQLite file "mysql:/x" in the working
// directory, which no command was kept from. A libpq keyword string is
// PostgreSQL's; a relative SQLite path is made absolute, as the worker
// hides it by that name.
func TestDSNs(t *testing.T) {
	for _, dsn := range []string{"mysql://x", "redis://127.0.0.1:6379/0"} {
		_, err := Open(context.Background(), dsn)
		if err == nil || !strings.Contains(err.Error(), "unknown scheme") {
			t.Errorf("Open(%q) = %v, want an unknown scheme", dsn, err)
		}
		if _, ok := SQLiteFile(dsn); ok {
			t.Errorf("SQLiteFile(%q) names a file", dsn)
		}
	}
	wd, _ := os.Getwd()
	for dsn, want := range map[string]string{
		"audit.db":                      filepath.Join(wd, "audit.db"),
		"sqlite:///var/lib/fenix/a.db":  "/var/lib/fenix/a.db",
		"/var/lib/fenix/a.db?_txlock=x": "/var/lib/fenix/a.db",
		"file:/srv/a.db?cache=shared":   "/srv/a.db",
	} {
		if got, ok := SQLiteFile(dsn); !ok || got != want {
			t.Errorf("SQLiteFile(%q) = %q, %v, want %q", dsn, got, ok, want)
		}
	}
	for _, dsn := range []string{"POSTGRES://h/db", "postgresql://h/db", "host=127.0.0.1 dbname=audit user=fenix", ":memory:", "file:x?mode=memory"} {
		if got, ok := SQLiteFile(dsn); ok {
			t.Errorf("SQLiteFile(%q) = %q, want no file", dsn, got)
		}
	}
}

func TestPreview(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456…"},
		{"ééééé", 8, "éé…"}, // 10 bytes; cut must not split a rune
		{"bad\xffbyte\x00", 100, "bad\uFFFDbyte"},
		{"abc", 2, ""},
	}
	for _, tc := range tests {
		got := Preview(tc.in, tc.max)
		if got != tc.want || len(got) > tc.max || !utf8.ValidString(got) {
			t.Errorf("Preview(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// TestPostgresStore runs against a real server when FENIX_TEST_POSTGRES_DSN
// is set, e.g. postgres://postgres:postgres@localhost:5432/postgres?sslmode=disable.
func TestPostgresStore(t *testing.T) {
	dsn := os.Getenv("FENIX_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("FENIX_TEST_POSTGRES_DSN is not set: skipping the PostgreSQL audit store test (set it to a postgres:// URL to run it)")
	}
	ctx := context.Background()
	store, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if store.Dialect() != "postgres" {
		t.Fatalf("dialect = %s", store.Dialect())
	}
	session := fmt.Sprintf("wf-pg-test-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = store.DB().ExecContext(context.Background(), "DELETE FROM agent_audit_log WHERE session_id = $1", session)
	})
	// Opening twice (a second worker) must not fail on the existing table.
	second, err := Open(ctx, dsn)
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	second.Close()
	exerciseStore(t, store, session)
}

// A log written before args_hash existed gains the column when a newer
// worker opens it; its rows read back with an empty hash and new rows keep
// theirs.
func TestSQLiteAddsArgsHashToAnOlderLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	old, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	db := old.DB()
	for _, stmt := range []string{
		"DROP TABLE " + TableName,
		sqliteSchema, // the table as it was, without args_hash
		"INSERT INTO " + TableName + " (session_id, run_id, call_id, event, created_at) VALUES ('wf-old', 'r', 'c0', 'TOOL_CALL', '2026-01-01T00:00:00.000000Z')",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	old.Close()

	store, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("opening a log without args_hash: %v", err)
	}
	defer store.Close()
	if err := store.Record(ctx, Row{SessionID: "wf-old", RunID: "r", CallID: "c1", Event: EventToolCall, ArgsHash: "sha256:ab"}); err != nil {
		t.Fatal(err)
	}
	rows, err := store.Query(ctx, Filter{SessionID: "wf-old"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ArgsHash != "" || rows[1].ArgsHash != "sha256:ab" {
		t.Fatalf("rows = %+v, want the old row without a hash and the new one with it", rows)
	}
	// Opening again finds the column and adds nothing.
	again, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	again.Close()
}
