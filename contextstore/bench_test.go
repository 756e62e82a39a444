package contextstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fenixrt/fenix/internal/harness/pgtest"
)

// Put and get of 10 KB, 1 MB and 10 MB message lists (English-like JSON,
// which compresses as transcripts do), against the local directory and the
// PostgreSQL store (FENIX_TEST_POSTGRES_DSN), issue 21's transcript curve:
//
//	go test -run '^$' -bench . -benchtime 20x ./contextstore
//
// Every put stores new content (a counter in the first bytes), so none is
// a dedup hit; DedupPut measures a retry of content already stored.
var benchSizes = []struct {
	name string
	size int
}{{"10KB", 10 << 10}, {"1MB", 1 << 20}, {"10MB", 10 << 20}}

func benchBlob(b *testing.B, size int) []byte {
	b.Helper()
	data, err := json.Marshal(transcript(size, uint64(size)))
	if err != nil {
		b.Fatal(err)
	}
	return data[:size]
}

func benchStores(b *testing.B, run func(b *testing.B, s Store)) {
	b.Run("fs", func(b *testing.B) {
		s, err := NewFS(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		run(b, s)
	})
	b.Run("postgres", func(b *testing.B) {
		run(b, openPG(b, pgtest.Schema(b), PostgresOptions{}))
	})
}

func BenchmarkPut(b *testing.B) {
	benchStores(b, func(b *testing.B, s Store) {
		for _, sz := range benchSizes {
			b.Run(sz.name, func(b *testing.B) {
				data := benchBlob(b, sz.size)
				ctx := WithRun(context.Background(), "bench-run")
				b.SetBytes(int64(sz.size))
				b.ResetTimer()
				for i := range b.N {
					binary.BigEndian.PutUint64(data, uint64(i)+1)
					if _, err := s.Put(ctx, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

func BenchmarkDedupPut(b *testing.B) {
	benchStores(b, func(b *testing.B, s Store) {
		for _, sz := range benchSizes {
			b.Run(sz.name, func(b *testing.B) {
				data := benchBlob(b, sz.size)
				ctx := WithRun(context.Background(), "bench-run")
				if _, err := s.Put(ctx, data); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(sz.size))
				b.ResetTimer()
				for range b.N {
					if _, err := s.Put(ctx, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

func BenchmarkGet(b *testing.B) {
	benchStores(b, func(b *testing.B, s Store) {
		for _, sz := range benchSizes {
			b.Run(sz.name, func(b *testing.B) {
				data := benchBlob(b, sz.size)
				ctx := WithRun(context.Background(), "bench-run")
				ref, err := s.Put(ctx, data)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(sz.size))
				b.ResetTimer()
				for range b.N {
					got, err := s.Get(ctx, ref)
					if err != nil || len(got) != sz.size {
						b.Fatal(fmt.Sprint(len(got), err))
					}
				}
			})
		}
	})
}

// Unpack is what a stage that needs the messages pays for a stored
// transcript: the read and the JSON decoding (local directory store).
//
//	go test -run '^$' -bench 'Unpack' -benchtime 20x ./contextstore
func BenchmarkUnpack(b *testing.B) {
	s, err := NewFS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := WithRun(context.Background(), "bench-run")
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			msgs := transcript(sz.size, uint64(sz.size))
			set, err := Put(ctx, s, msgs)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(set.Bytes))
			b.ReportAllocs()
			for b.Loop() {
				got, err := Unpack(ctx, s, set)
				if err != nil || len(got) != len(msgs) {
					b.Fatal(len(got), err)
				}
			}
		})
	}
}
