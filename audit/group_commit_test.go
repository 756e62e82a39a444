package audit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func openTestSQLite(t testing.TB) *SQLStore {
	t.Helper()
	store, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// Concurrent Records (the governed calls of many runs) each return once
// their row is stored, duplicates of one key included, whichever
// transaction they shared.
func TestConcurrentRecordsAreEachStoredOnce(t *testing.T) {
	ctx := context.Background()
	store := openTestSQLite(t)
	const runs = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*runs)
	for i := range runs {
		for range 2 { // every row twice, as a retried activity writes it
			wg.Go(func() {
				r := sampleRows(fmt.Sprintf("wf-%d", i))[0]
				errs <- store.Record(ctx, r)
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := store.Count(ctx, Filter{})
	if err != nil || n != runs {
		t.Fatalf("Count = %d (%v), want %d: one row per key", n, err, runs)
	}
}

// A row the database rejects fails alone: the rows committed with it in
// one group are stored, and its Record names it.
func TestARejectedRowFailsOnlyItsOwnRecord(t *testing.T) {
	ctx := context.Background()
	store := openTestSQLite(t)
	if _, err := store.DB().ExecContext(ctx, `CREATE TRIGGER reject_bad BEFORE INSERT ON `+TableName+
		` WHEN NEW.session_id = 'bad' BEGIN SELECT RAISE(ABORT, 'rejected by the test trigger'); END`); err != nil {
		t.Fatal(err)
	}
	var group []pendingRow
	for _, session := range []string{"good-1", "bad", "good-2"} {
		group = append(group, pendingRow{row: sampleRows(session)[0].normalize(store.now()), done: make(chan error, 1)})
	}
	store.commitGroup(group)
	for _, p := range group {
		err := <-p.done
		if (err != nil) != (p.row.SessionID == "bad") {
			t.Errorf("row %s: err = %v", p.row.SessionID, err)
		}
	}
	if n, err := store.Count(ctx, Filter{}); err != nil || n != 2 {
		t.Fatalf("Count = %d (%v), want the two good rows", n, err)
	}
	err := store.Record(ctx, sampleRows("bad")[0])
	if err == nil || !strings.Contains(err.Error(), "bad/run-1/c1/TOOL_CALL") || !strings.Contains(err.Error(), "rejected by the test trigger") {
		t.Errorf("Record of the rejected row = %v, want the row's key and the database's reason", err)
	}
}

// A closed store refuses rows instead of hanging; a caller that gives up
// gets its context's error.
func TestRecordAfterCloseOrCancel(t *testing.T) {
	store, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := store.Record(canceled, sampleRows("wf")[0]); !errors.Is(err, context.Canceled) {
		t.Errorf("Record with a canceled context = %v", err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Record(context.Background(), sampleRows("wf")[0]); !errors.Is(err, errClosed) {
		t.Errorf("Record after Close = %v, want %v", err, errClosed)
	}
}
