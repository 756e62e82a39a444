package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// hookReloader is the worker's ReloadHooks.
type hookReloader interface {
	ReloadHooks() (string, error)
}

// reloadHooksOnHangup reloads the hook settings and scripts on each
// SIGHUP until ctx is done or stop is called: a change on disk takes
// effect only then (`kill -HUP <worker pid>`). ReloadHooks logs the new
// policy fingerprint, or the error and keeps the loaded policy.
func reloadHooksOnHangup(ctx context.Context, w hookReloader, logger *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-hup:
				logger.Info("SIGHUP: reloading hook settings and scripts")
				_, _ = w.ReloadHooks()
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}
