package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkSQLiteRecord is the audit write a governed call pays (twice:
// its TOOL_CALL row and the run's SESSION_STOP row), on a WAL file with
// synchronous=NORMAL as the worker opens it.
func BenchmarkSQLiteRecord(b *testing.B) {
	ctx := context.Background()
	store, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	row := sampleRows("wf")[2]
	i := 0
	for b.Loop() {
		i++
		r := row
		r.SessionID = fmt.Sprintf("wf-%d", i)
		if err := store.Record(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
