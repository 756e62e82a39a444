package main

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"
)

type countingReloader chan struct{}

func (c countingReloader) ReloadHooks() (string, error) {
	c <- struct{}{}
	return "fp", nil
}

// SIGHUP, and only SIGHUP, reloads the hooks.
func TestSIGHUPReloadsHooks(t *testing.T) {
	reloads := make(countingReloader, 4)
	stop := reloadHooksOnHangup(context.Background(), reloads, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer stop()
	select {
	case <-reloads:
		t.Fatal("reloaded without a signal")
	case <-time.After(50 * time.Millisecond):
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reloads:
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not reload the hooks")
	}
}
