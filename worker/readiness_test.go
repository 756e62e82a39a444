package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fenixrt/fenix/internal/observability"
)

// /readyz said ready through a Temporal frontend down for half a minute
// and a full data directory that failed every run (the chaos session's
// findings): it now asks the frontend and looks at the data directory's
// room, answering from the last check for two seconds.
func TestReadinessFollowsTheFrontendAndTheDataDirectory(t *testing.T) {
	started := &observability.Readiness{}
	down := errors.New("connection refused")
	var frontendErr error
	r := &readiness{started: started, dataDir: t.TempDir(), frontend: func(context.Context) error { return frontendErr }}
	ctx := context.Background()
	if err := r.Check(ctx); !errors.Is(err, observability.ErrNotReady) {
		t.Fatalf("before polling: %v", err)
	}
	started.MarkReady()
	if err := r.Check(ctx); err != nil {
		t.Fatalf("polling, frontend up: %v", err)
	}
	frontendErr = down
	if err := r.Check(ctx); err != nil {
		t.Fatalf("within two seconds of the last check: %v, want its answer", err)
	}
	r.checked = r.checked.Add(-readinessFor)
	if err := r.Check(ctx); !errors.Is(err, down) || !strings.Contains(err.Error(), "Temporal frontend") {
		t.Fatalf("frontend down: %v", err)
	}

	frontendErr = nil
	full := t.TempDir()
	if err := unix.Mount("tmpfs", full, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(full, unix.MNT_DETACH) })
	r = &readiness{started: started, dataDir: full, frontend: func(context.Context) error { return nil }}
	if err := r.Check(ctx); err == nil || !strings.Contains(err.Error(), "bytes free") {
		t.Fatalf("a data directory with 1 MiB: %v", err)
	}
}
