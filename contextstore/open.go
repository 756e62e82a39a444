package contextstore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fenixrt/fenix/redact"
)

// Setting is the worker setting that selects the store.
const Setting = "FENIX_CONTEXT_STORE"

// Options configure Open.
type Options struct {
	// DataDir is the worker's data directory; the local store defaults to
	// <DataDir>/contexts.
	DataDir string
	// MaxBlobBytes limits one blob in a shared store (default
	// DefaultMaxBlobBytes).
	MaxBlobBytes int64
}

// Open opens the store spec selects (FENIX_CONTEXT_STORE):
//
//   - "" : the local directory <DataDir>/contexts, the embedded default;
//   - an absolute path or file:///path : a local (or mounted) directory;
//   - postgres://... or postgresql://... : the shared PostgreSQL store,
//     which needs no shared filesystem between workers.
func Open(ctx context.Context, spec string, opts Options) (Store, error) {
	switch {
	case spec == "":
		if opts.DataDir == "" {
			return nil, fmt.Errorf("%s is not set and there is no data directory for the local context store", Setting)
		}
		return NewFS(filepath.Join(opts.DataDir, "contexts"))
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return OpenPostgres(ctx, spec, PostgresOptions{MaxBlobBytes: opts.MaxBlobBytes})
	case strings.HasPrefix(spec, "file://"):
		return NewFS(strings.TrimPrefix(spec, "file://"))
	case filepath.IsAbs(spec):
		return NewFS(spec)
	}
	return nil, fmt.Errorf("%s=%q: want postgres://..., an absolute directory or file:///dir (empty: <data-dir>/contexts)", Setting, redact.DSN(spec))
}
