package observability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Paths served by NewOpsMux.
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// OpsConfig configures the operational HTTP mux.
type OpsConfig struct {
	// Metrics serves /metrics (usually Metrics.Handler); nil leaves it out.
	Metrics http.Handler
	// Ready decides /readyz: nil error means 200, otherwise 503 with the
	// error text. Nil Ready means always ready.
	Ready func(context.Context) error
}

// NewOpsMux serves /metrics, /healthz (200 while the process serves HTTP)
// and /readyz. Mount further handlers on the returned mux, e.g.
// mux.Handle("/codec/", codecHandler).
func NewOpsMux(cfg OpsConfig) *http.ServeMux {
	mux := http.NewServeMux()
	if cfg.Metrics != nil {
		mux.Handle("GET "+PathMetrics, cfg.Metrics)
	}
	mux.HandleFunc("GET "+PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET "+PathReadyz, func(w http.ResponseWriter, r *http.Request) {
		if cfg.Ready != nil {
			if err := cfg.Ready(r.Context()); err != nil {
				writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		writeText(w, http.StatusOK, "ready")
	})
	return mux
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// ErrNotReady is what Readiness.Check returns before MarkReady.
var ErrNotReady = errors.New("worker has not started polling yet")

// Readiness is a flag for OpsConfig.Ready: not ready until MarkReady, and
// not ready again after MarkNotReady (e.g. while draining on shutdown).
type Readiness struct{ ready atomic.Bool }

func (r *Readiness) MarkReady()    { r.ready.Store(true) }
func (r *Readiness) MarkNotReady() { r.ready.Store(false) }

// Check suits OpsConfig.Ready.
func (r *Readiness) Check(context.Context) error {
	if r.ready.Load() {
		return nil
	}
	return ErrNotReady
}

// OpsServer is the operational HTTP listener.
type OpsServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// StartOpsServer listens on addr (host:port; ":0" picks a free port) before
// returning, so a taken port fails startup, then serves h in the
// background. Serve errors after startup are logged.
func StartOpsServer(addr string, h http.Handler, logger *slog.Logger) (*OpsServer, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("operational HTTP listener on %q: %w", addr, err)
	}
	s := &OpsServer{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("operational HTTP listener stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	return s, nil
}

// Addr is the bound address (useful after ":0").
func (s *OpsServer) Addr() string { return s.ln.Addr().String() }

// Shutdown stops accepting, waits for in-flight requests until ctx ends,
// and waits for the serve loop to return.
func (s *OpsServer) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return err
}
