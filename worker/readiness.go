package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fenixrt/fenix/internal/observability"
)

// readiness decides /readyz: ready once the worker polls (started), and
// while the Temporal frontend answers its health check and the data
// directory has room for the audit log and the command-run records. It
// said ready through a frontend down for half a minute and a full data
// directory that failed every run.
type readiness struct {
	started  *observability.Readiness
	frontend func(context.Context) error
	dataDir  string

	mu      sync.Mutex
	checked time.Time
	last    error
}

const (
	// readinessFor is how long a check's answer is kept: a probe every
	// second does not make a health check every second.
	readinessFor = 2 * time.Second
	// minDataDirFree is the room below which the data directory cannot
	// take a run's records.
	minDataDirFree = 4 << 20
)

// Check suits observability.OpsConfig.Ready.
func (r *readiness) Check(ctx context.Context) error {
	if err := r.started.Check(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.checked.IsZero() && time.Since(r.checked) < readinessFor {
		return r.last
	}
	r.last, r.checked = r.check(ctx), time.Now()
	return r.last
}

func (r *readiness) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.frontend(ctx); err != nil {
		return fmt.Errorf("the Temporal frontend does not answer its health check: %w", err)
	}
	if r.dataDir == "" {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.dataDir, &st); err != nil {
		return fmt.Errorf("data directory %s: %w", r.dataDir, err)
	}
	if free := st.Bavail * uint64(st.Bsize); free < minDataDirFree {
		return fmt.Errorf("data directory %s has %d bytes free: runs fail to record their audit rows", r.dataDir, free)
	}
	return nil
}
