package contextstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/redact"
)

// DefaultMaxBlobBytes is the default size limit of one stored message list.
const DefaultMaxBlobBytes = 32 << 20

// MaxBytesSetting names the limit in errors.
const MaxBytesSetting = "FENIX_CONTEXT_MAX_BYTES"

// Tables of the PostgreSQL store.
const (
	BlobTable = "fenix_context_blobs"
	RefTable  = "fenix_context_refs"
)

const postgresSchema = `
CREATE TABLE IF NOT EXISTS fenix_context_blobs (
	ref         TEXT        PRIMARY KEY,
	data        BYTEA       NOT NULL,
	size_bytes  BIGINT      NOT NULL,
	created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
	last_put_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS fenix_context_refs (
	ref     TEXT        NOT NULL REFERENCES fenix_context_blobs (ref) ON DELETE CASCADE,
	run_id  TEXT        NOT NULL,
	seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
	PRIMARY KEY (ref, run_id)
);
CREATE INDEX IF NOT EXISTS fenix_context_refs_run ON fenix_context_refs (run_id);
CREATE INDEX IF NOT EXISTS fenix_context_blobs_last_put ON fenix_context_blobs (last_put_at)`

// Advisory lock keys: schema creation (shared with no one else) and the
// garbage collector, so one worker of a fleet collects at a time.
const (
	schemaLockKey = 0x66656e6978_6373 // "fenix" "cs"
	gcLockKey     = 0x66656e6978_6763 // "fenix" "gc"
)

// Postgres is a Store in a PostgreSQL database every worker of a fleet
// reaches, so no shared filesystem is needed: a transcript one host stores
// is read by any other. Blobs are keyed by their content hash; a put of an
// existing blob only refreshes its timestamp, so retries and concurrent
// writers of the same content agree on one row. Each put and get made on
// behalf of a run (WithRun) records that run as a referrer, which is what
// Collect keeps blobs alive for.
type Postgres struct {
	pool     *pgxpool.Pool
	maxBytes int64
	location string
	stats    counters
}

// PostgresOptions configure OpenPostgres.
type PostgresOptions struct {
	// MaxBlobBytes limits one blob (default DefaultMaxBlobBytes).
	MaxBlobBytes int64
	// MaxConns bounds the pool (default pgxpool's: 4 or the CPU count).
	MaxConns int32
}

// OpenPostgres connects to dsn (a postgres:// URL) and creates the store's
// tables if they do not exist.
func OpenPostgres(ctx context.Context, dsn string, opts PostgresOptions) (*Postgres, error) {
	location := redact.DSN(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("context store %s: %w", location, err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("context store %s: %w", location, err)
	}
	if opts.MaxBlobBytes <= 0 {
		opts.MaxBlobBytes = DefaultMaxBlobBytes
	}
	p := &Postgres{pool: pool, maxBytes: opts.MaxBlobBytes, location: location}
	if err := p.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("context store %s: creating tables: %w", location, err)
	}
	return p, nil
}

func (p *Postgres) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLockKey)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, postgresSchema); err != nil {
			return err
		}
		return preferLZ4(ctx, tx)
	})
}

// preferLZ4 compresses blobs with lz4 instead of the default pglz where the
// server supports it (PostgreSQL 14+ built with lz4, as Debian's is):
// storing a 1 MB transcript took ~75 ms with pglz and ~23 ms with lz4.
// Elsewhere the default stays; the store works the same.
func preferLZ4(ctx context.Context, tx pgx.Tx) error {
	var method string
	err := tx.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute
		WHERE attrelid = 'fenix_context_blobs'::regclass AND attname = 'data'`).Scan(&method)
	if err != nil || method == "l" {
		return nil // before PostgreSQL 14 there is no such column: nothing to do
	}
	if _, err := tx.Exec(ctx, "SAVEPOINT lz4"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "ALTER TABLE fenix_context_blobs ALTER COLUMN data SET COMPRESSION lz4"); err != nil {
		_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT lz4")
		return err
	}
	return nil
}

// Close releases the pool.
func (p *Postgres) Close() { p.pool.Close() }

// String names the store for logs (no password).
func (p *Postgres) String() string { return "postgres " + p.location }

// MaxBlobBytes is the size limit of one blob.
func (p *Postgres) MaxBlobBytes() int64 { return p.maxBytes }

// Put stores data under its hash. It is idempotent: storing content that
// exists only refreshes its last-put time (which starts the retention
// window again) and never sends the bytes twice.
func (p *Postgres) Put(ctx context.Context, data []byte) (string, error) {
	if int64(len(data)) > p.maxBytes {
		p.stats.tooLarge.Add(1)
		return "", fenixerr.PayloadTooLarge("context of %d bytes exceeds the context store's limit of %d bytes (%s)", len(data), p.maxBytes, MaxBytesSetting)
	}
	ref := RefFor(data)
	run := runFrom(ctx)
	// Most puts of existing content are retries: touch the row first.
	tag, err := p.pool.Exec(ctx, `UPDATE fenix_context_blobs SET last_put_at = now() WHERE ref = $1`, ref)
	if err != nil {
		return "", p.transient("put", ref, err)
	}
	existed := tag.RowsAffected() == 1
	if !existed {
		// Concurrent writers of the same content meet here: one inserts,
		// the others wait for it and only touch the row.
		if _, err := p.pool.Exec(ctx, `INSERT INTO fenix_context_blobs (ref, data, size_bytes) VALUES ($1, $2, $3)
			ON CONFLICT (ref) DO UPDATE SET last_put_at = now()`, ref, data, len(data)); err != nil {
			return "", p.transient("put", ref, err)
		}
	}
	if run != "" {
		if err := p.recordRun(ctx, ref, run); err != nil {
			return "", err
		}
	}
	p.stats.puts.Add(1)
	if existed {
		p.stats.dedupPuts.Add(1)
	} else {
		p.stats.putBytes.Add(int64(len(data)))
	}
	return ref, nil
}

// recordRun marks run as a referrer of ref (which must exist).
func (p *Postgres) recordRun(ctx context.Context, ref, run string) error {
	_, err := p.pool.Exec(ctx, `INSERT INTO fenix_context_refs (ref, run_id)
		SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM fenix_context_blobs WHERE ref = $1)
		ON CONFLICT (ref, run_id) DO UPDATE SET seen_at = now()`, ref, run)
	if err != nil {
		return p.transient("record the run of", ref, err)
	}
	return nil
}

// Get reads the data of ref and verifies its hash.
func (p *Postgres) Get(ctx context.Context, ref string) ([]byte, error) {
	if !validRef(ref) {
		return nil, fenixerr.Validation("context reference %q is malformed: expected %s<64 hex digits>", ref, refPrefix)
	}
	if run := runFrom(ctx); run != "" {
		if err := p.recordRun(ctx, ref, run); err != nil {
			return nil, err
		}
	}
	var data []byte
	err := p.pool.QueryRow(ctx, `SELECT data FROM fenix_context_blobs WHERE ref = $1`, ref).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		p.stats.misses.Add(1)
		return nil, fenixerr.Validation("context reference %q is not in the context store (%s): it was never stored there, or was collected after its retention window", ref, p.location).WithCode("context_not_found")
	}
	if err != nil {
		return nil, p.transient("get", ref, err)
	}
	if RefFor(data) != ref {
		return nil, fenixerr.Runtime("context %q is corrupt: its content does not match its hash", ref)
	}
	p.stats.gets.Add(1)
	p.stats.getBytes.Add(int64(len(data)))
	return data, nil
}

func (p *Postgres) transient(op, ref string, err error) error {
	p.stats.errors.Add(1)
	return fenixerr.Transient(fmt.Errorf("context store %s: %s %s: %w", p.location, op, ref, err))
}

// GCOptions configure Collect.
type GCOptions struct {
	// Retention keeps every blob put, and every run's reference seen,
	// within this window, whatever the runs' state: a kernel may store a
	// context before the run that reads it starts, and read a result's
	// messages after the run ended. Zero keeps nothing by age.
	Retention time.Duration
	// OpenRuns lists the workflow IDs of runs still open (running); their
	// references keep blobs alive however old. Required.
	OpenRuns func(ctx context.Context) ([]string, error)
}

// GCResult is what one collection did.
type GCResult struct {
	// Skipped is true when another worker held the collector lock.
	Skipped      bool
	OpenRuns     int
	DroppedRefs  int64
	DeletedBlobs int64
	DeletedBytes int64
	Duration     time.Duration
}

// Collect deletes the blobs no open run references and nothing put or read
// (as a run) within the retention window. Only one worker of a fleet
// collects at a time; the others return Skipped.
func (p *Postgres) Collect(ctx context.Context, opts GCOptions) (GCResult, error) {
	started := time.Now()
	if opts.OpenRuns == nil {
		return GCResult{}, errors.New("context store collection needs the list of open runs")
	}
	// Listed before the cutoff is taken: a run that starts after the list
	// was made has only references younger than the cutoff.
	open, err := opts.OpenRuns(ctx)
	if err != nil {
		return GCResult{}, fmt.Errorf("context store collection: listing open runs: %w", err)
	}
	if open == nil {
		open = []string{}
	}
	res := GCResult{OpenRuns: len(open)}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", int64(gcLockKey)).Scan(&locked); err != nil {
			return err
		}
		if !locked {
			res.Skipped = true
			return nil
		}
		tag, err := tx.Exec(ctx, `DELETE FROM fenix_context_refs
			WHERE seen_at < now() - make_interval(secs => $1) AND NOT (run_id = ANY($2))`, opts.Retention.Seconds(), open)
		if err != nil {
			return err
		}
		res.DroppedRefs = tag.RowsAffected()
		return tx.QueryRow(ctx, `WITH deleted AS (
				DELETE FROM fenix_context_blobs b
				WHERE b.last_put_at < now() - make_interval(secs => $1)
				  AND NOT EXISTS (SELECT 1 FROM fenix_context_refs r WHERE r.ref = b.ref)
				RETURNING b.size_bytes)
			SELECT count(*), coalesce(sum(size_bytes), 0) FROM deleted`, opts.Retention.Seconds()).Scan(&res.DeletedBlobs, &res.DeletedBytes)
	})
	res.Duration = time.Since(started)
	if err != nil {
		p.stats.errors.Add(1)
		return res, fmt.Errorf("context store %s: collection: %w", p.location, err)
	}
	if !res.Skipped {
		p.stats.gcRuns.Add(1)
		p.stats.gcDeletedBlobs.Add(res.DeletedBlobs)
		p.stats.gcDeletedBytes.Add(res.DeletedBytes)
		// The store's size, as of this collection, for the gauges.
		if u, err := p.Usage(ctx); err == nil {
			p.stats.storedBlobs.Store(u.Blobs)
			p.stats.storedBytes.Store(u.Bytes)
		}
	}
	return res, nil
}

// Usage is the store's current size.
type Usage struct {
	Blobs int64
	Bytes int64
	Refs  int64
}

// Usage counts what the store holds now.
func (p *Postgres) Usage(ctx context.Context) (Usage, error) {
	var u Usage
	err := p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM fenix_context_blobs),
		(SELECT coalesce(sum(size_bytes), 0) FROM fenix_context_blobs),
		(SELECT count(*) FROM fenix_context_refs)`).Scan(&u.Blobs, &u.Bytes, &u.Refs)
	return u, err
}

// Stats are this process's counters since the store was opened.
func (p *Postgres) Stats() Stats { return p.stats.snapshot() }

// Stats count a store's traffic (this process only).
type Stats struct {
	Puts           int64 // successful puts, dedup hits included
	DedupPuts      int64 // puts of content already stored
	PutBytes       int64 // bytes written (new blobs only)
	Gets           int64
	GetBytes       int64
	Misses         int64 // gets of a reference not in the store
	TooLarge       int64 // puts refused by the size limit
	Errors         int64 // database errors
	GCRuns         int64
	GCDeletedBlobs int64
	GCDeletedBytes int64
	// StoredBlobs and StoredBytes are the whole store's size after this
	// process's last collection (0 before the first).
	StoredBlobs int64
	StoredBytes int64
}

type counters struct {
	puts, dedupPuts, putBytes, gets, getBytes, misses, tooLarge, errors atomic.Int64
	gcRuns, gcDeletedBlobs, gcDeletedBytes, storedBlobs, storedBytes    atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Puts: c.puts.Load(), DedupPuts: c.dedupPuts.Load(), PutBytes: c.putBytes.Load(),
		Gets: c.gets.Load(), GetBytes: c.getBytes.Load(), Misses: c.misses.Load(),
		TooLarge: c.tooLarge.Load(), Errors: c.errors.Load(),
		GCRuns: c.gcRuns.Load(), GCDeletedBlobs: c.gcDeletedBlobs.Load(), GCDeletedBytes: c.gcDeletedBytes.Load(),
		StoredBlobs: c.storedBlobs.Load(), StoredBytes: c.storedBytes.Load(),
	}
}

// runKey carries the run a context operation is made for.
type runKey struct{}

// WithRun marks ctx as acting for run (a workflow ID): a store that tracks
// references records it on put and get, and keeps the blob while the run
// is open. The worker sets it for every activity.
func WithRun(ctx context.Context, run string) context.Context {
	return context.WithValue(ctx, runKey{}, run)
}

func runFrom(ctx context.Context) string {
	run, _ := ctx.Value(runKey{}).(string)
	return run
}
