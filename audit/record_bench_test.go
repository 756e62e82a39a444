package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
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

// BenchmarkSQLiteRecordConcurrent is the same write from 20 concurrent
// calls, as a worker under load makes it: rows that arrive while a
// transaction commits share the next one.
func BenchmarkSQLiteRecordConcurrent(b *testing.B) {
	ctx := context.Background()
	store, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	row := sampleRows("wf")[2]
	var n atomic.Int64
	b.SetParallelism(10) // 20 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := row
			r.SessionID = fmt.Sprintf("wf-%d", n.Add(1))
			if err := store.Record(ctx, r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
