package audit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// benchRow is the i-th row of a benchmark: a tool call's, each of another
// session.
func benchRow(i int64) Row {
	r := sampleRows("wf")[2]
	r.SessionID = fmt.Sprintf("wf-%d", i)
	return r
}

// BenchmarkSQLiteRecord is the audit write a governed call pays (twice:
// its TOOL_CALL row and the run's SESSION_STOP row), on a WAL file with
// synchronous=NORMAL as the worker opens it.
func BenchmarkSQLiteRecord(b *testing.B) {
	ctx := context.Background()
	store := openTestSQLite(b)
	var i int64
	for b.Loop() {
		i++
		if err := store.Record(ctx, benchRow(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSQLiteRecordConcurrent is the same write from 20 concurrent
// calls, as a worker under load makes it: rows that arrive while a
// transaction commits share the next one.
func BenchmarkSQLiteRecordConcurrent(b *testing.B) {
	ctx := context.Background()
	store := openTestSQLite(b)
	var n atomic.Int64
	b.SetParallelism(10) // 20 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := store.Record(ctx, benchRow(n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
