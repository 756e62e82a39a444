package contextstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/pgtest"
)

func openPG(tb testing.TB, dsn string, opts PostgresOptions) *Postgres {
	tb.Helper()
	s, err := OpenPostgres(context.Background(), dsn, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// transcript builds a message list of about size bytes of text: a few
// common words among random ones, so it compresses about as well as a real
// transcript of prose, code and tool output (lz4 to ~70%), not better.
func transcript(size int, seed uint64) []contract.Message {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	words := strings.Fields("the worker reads a file and runs the command then reports its output to the kernel")
	for range 2000 {
		w := make([]byte, 2+r.IntN(8))
		for i := range w {
			w[i] = byte('a' + r.IntN(26))
		}
		words = append(words, string(w))
	}
	var msgs []contract.Message
	total := 0
	for total < size {
		var b strings.Builder
		for b.Len() < 2000 {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		role := "user"
		if len(msgs)%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, contract.Message{Role: role, Content: b.String()})
		total += b.Len() + 32
	}
	return msgs
}

// TestPostgresTranscriptStoredByOneHostIsReadByAnother: two stores with
// their own connection pools and no directory in common, as two worker
// hosts have; what one stores the other reads, byte for byte.
func TestPostgresTranscriptStoredByOneHostIsReadByAnother(t *testing.T) {
	dsn := pgtest.Schema(t)
	hostA, hostB := openPG(t, dsn, PostgresOptions{}), openPG(t, dsn, PostgresOptions{})
	ctx := WithRun(context.Background(), "agent-turn-conv-1-turn-1")
	msgs := transcript(300<<10, 1)
	set, err := Pack(ctx, hostA, msgs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if set.Ref == "" || set.Count != len(msgs) {
		t.Fatalf("a 300 KiB transcript must be stored by reference: %+v", set)
	}
	got, err := Unpack(ctx, hostB, set)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) || got[len(got)-1].Content != msgs[len(msgs)-1].Content {
		t.Fatalf("host B read %d messages, want %d equal to host A's", len(got), len(msgs))
	}
	if s := hostB.Stats(); s.Gets != 1 || s.GetBytes != int64(set.Bytes) {
		t.Errorf("host B stats = %+v", s)
	}
}

// TestPostgresPutIsIdempotentUnderConcurrentWriters: retries and writers
// on several hosts storing the same content at once agree on one row.
func TestPostgresPutIsIdempotentUnderConcurrentWriters(t *testing.T) {
	dsn := pgtest.Schema(t)
	hosts := []*Postgres{openPG(t, dsn, PostgresOptions{}), openPG(t, dsn, PostgresOptions{}), openPG(t, dsn, PostgresOptions{})}
	blob := []byte(fmt.Sprintf("%v", transcript(1<<20, 2)))
	other := []byte(fmt.Sprintf("%v", transcript(64<<10, 3)))
	const writers = 12
	refs := make([]string, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			data := blob
			if i%4 == 3 {
				data = other
			}
			refs[i], errs[i] = hosts[i%len(hosts)].Put(WithRun(context.Background(), fmt.Sprintf("run-%d", i%2)), data)
		}()
	}
	close(start)
	wg.Wait()
	for i := range writers {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		want := RefFor(blob)
		if i%4 == 3 {
			want = RefFor(other)
		}
		if refs[i] != want {
			t.Errorf("writer %d got %s, want %s", i, refs[i], want)
		}
	}
	// A retry after everything settled is a dedup hit.
	if _, err := hosts[0].Put(context.Background(), blob); err != nil {
		t.Fatal(err)
	}
	u, err := hosts[0].Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// blob was put by run-0 and run-1, other (writers 3, 7, 11) by run-1.
	if u.Blobs != 2 || u.Bytes != int64(len(blob)+len(other)) || u.Refs != 3 {
		t.Errorf("usage = %+v, want 2 blobs of %d bytes and 3 run references", u, len(blob)+len(other))
	}
	var puts, dedup int64
	for _, h := range hosts {
		puts += h.Stats().Puts
		dedup += h.Stats().DedupPuts
	}
	if puts != writers+1 || dedup < 1 {
		t.Errorf("puts %d (dedup %d), want %d puts with at least the retry deduplicated", puts, dedup, writers+1)
	}
	got, err := hosts[2].Get(context.Background(), RefFor(blob))
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("read back: %v", err)
	}
}

func TestPostgresSizeLimit(t *testing.T) {
	s := openPG(t, pgtest.Schema(t), PostgresOptions{MaxBlobBytes: 64 << 10})
	_, err := Pack(context.Background(), s, transcript(100<<10, 4), 1024)
	if !errors.Is(err, fenixerr.ErrPayloadTooLarge) || !strings.Contains(err.Error(), MaxBytesSetting) || !strings.Contains(err.Error(), "65536") {
		t.Fatalf("oversized put: %v; want a PayloadTooLargeError naming %s and the limit", err, MaxBytesSetting)
	}
	if s.Stats().TooLarge != 1 {
		t.Errorf("stats = %+v", s.Stats())
	}
	if _, err := Pack(context.Background(), s, transcript(32<<10, 5), 1024); err != nil {
		t.Fatalf("a blob under the limit: %v", err)
	}
}

func TestPostgresRejectsBadReferencesAndCorruption(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := openPG(t, dsn, PostgresOptions{})
	ctx := context.Background()
	if _, err := s.Get(ctx, "../../etc/passwd"); !errors.Is(err, fenixerr.ErrValidation) {
		t.Errorf("malformed ref: %v", err)
	}
	if _, err := s.Get(ctx, RefFor([]byte("never stored"))); fenixerr.As(err).Code != "context_not_found" {
		t.Errorf("missing ref: %v", err)
	}
	ref, err := s.Put(ctx, []byte(`[{"role":"user","content":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE fenix_context_blobs SET data = 'tampered' WHERE ref = $1`, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, ref); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("tampered content: %v", err)
	}
}

// TestPostgresCollect: collection deletes exactly the blobs no open run
// references and nothing used within the retention window.
func TestPostgresCollect(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := openPG(t, dsn, PostgresOptions{})
	ctx := context.Background()
	put := func(run, content string) string {
		t.Helper()
		c := ctx
		if run != "" {
			c = WithRun(ctx, run)
		}
		ref, err := s.Put(c, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	age := func(ref string, d time.Duration) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, `UPDATE fenix_context_blobs SET last_put_at = now() - make_interval(secs => $2) WHERE ref = $1`, ref, d.Seconds()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `UPDATE fenix_context_refs SET seen_at = now() - make_interval(secs => $2) WHERE ref = $1`, ref, d.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	const day = 24 * time.Hour
	openOld := put("open-run", "held by an open run, old")
	closedOld := put("closed-run", "held by a closed run, old")
	orphanOld := put("", "put by no run, old")
	closedRecent := put("closed-run", "held by a closed run, recent")
	readByOpen := put("", "old, but just read by an open run")
	for _, ref := range []string{openOld, closedOld, orphanOld, readByOpen} {
		age(ref, 3*day)
	}
	if _, err := s.Get(WithRun(ctx, "open-run-2"), readByOpen); err != nil {
		t.Fatal(err)
	}
	age(readByOpen, 3*day) // the read itself is old too: only the open run keeps it

	openRuns := func(context.Context) ([]string, error) { return []string{"open-run", "open-run-2"}, nil }
	res, err := s.Collect(ctx, GCOptions{Retention: day, OpenRuns: openRuns})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.DeletedBlobs != 2 || res.OpenRuns != 2 {
		t.Fatalf("collect = %+v, want 2 blobs deleted", res)
	}
	for ref, want := range map[string]bool{openOld: true, closedOld: false, orphanOld: false, closedRecent: true, readByOpen: true} {
		_, err := s.Get(ctx, ref)
		if kept := err == nil; kept != want {
			t.Errorf("blob %s kept = %v, want %v (%v)", ref[:20], kept, want, err)
		}
	}
	if st := s.Stats(); st.GCRuns != 1 || st.GCDeletedBlobs != 2 || st.GCDeletedBytes != int64(len("held by a closed run, old")+len("put by no run, old")) {
		t.Errorf("stats = %+v", st)
	}

	// A put of collected content brings it back; a retry of a kept one
	// restarts its window.
	if again := put("", "put by no run, old"); again != orphanOld {
		t.Fatal("content addressing changed")
	}
	if _, err := s.Get(ctx, orphanOld); err != nil {
		t.Errorf("re-put blob: %v", err)
	}

	// One collector at a time: while another holds the lock, Collect skips.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(gcLockKey)); err != nil {
		t.Fatal(err)
	}
	res, err = s.Collect(ctx, GCOptions{Retention: day, OpenRuns: openRuns})
	if err != nil || !res.Skipped {
		t.Fatalf("collect while another worker collects = %+v, %v; want skipped", res, err)
	}
	if _, err := s.Collect(ctx, GCOptions{Retention: day}); err == nil {
		t.Error("collect without the open-run list must refuse")
	}
}

func TestOpenSelectsTheStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), "", Options{DataDir: dir})
	if _, ok := s.(*FS); err != nil || !ok {
		t.Fatalf("default: %T, %v", s, err)
	}
	s, err = Open(context.Background(), "file://"+dir+"/shared", Options{})
	if fs, ok := s.(*FS); err != nil || !ok || fs.dir != dir+"/shared" {
		t.Fatalf("file URL: %T, %v", s, err)
	}
	if _, err := Open(context.Background(), "s3://bucket/x", Options{}); err == nil || !strings.Contains(err.Error(), Setting) {
		t.Fatalf("unknown scheme: %v", err)
	}
	if _, err := Open(context.Background(), "relative/dir", Options{}); err == nil {
		t.Fatal("a relative directory is ambiguous and must be refused")
	}
}
