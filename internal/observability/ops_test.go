package observability

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestOpsMux(t *testing.T) {
	m := newTestMetrics(t)
	m.ToolCall("read_file", "ok")
	var ready Readiness
	mux := NewOpsMux(OpsConfig{Metrics: m.Handler(), Ready: ready.Check})
	mux.Handle("/codec/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "codec")
	}))

	if code, _ := get(t, mux, PathHealthz); code != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", code)
	}
	code, body := get(t, mux, PathReadyz)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, ErrNotReady.Error()) {
		t.Errorf("GET /readyz before ready = %d %q, want 503 naming the reason", code, body)
	}
	ready.MarkReady()
	if code, _ := get(t, mux, PathReadyz); code != http.StatusOK {
		t.Errorf("GET /readyz after MarkReady = %d, want 200", code)
	}
	ready.MarkNotReady()
	if code, _ := get(t, mux, PathReadyz); code != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz after MarkNotReady = %d, want 503", code)
	}
	if code, body := get(t, mux, PathMetrics); code != http.StatusOK || !strings.Contains(body, `fenix_tool_calls_total{status="ok",tool="read_file"} 1`) {
		t.Errorf("GET /metrics = %d, body lacks the tool call counter:\n%.1500s", code, body)
	}
	if code, body := get(t, mux, "/codec/decode"); code != http.StatusOK || body != "codec" {
		t.Errorf("mounted handler: GET /codec/decode = %d %q", code, body)
	}
}

func TestOpsMuxReadyFuncError(t *testing.T) {
	mux := NewOpsMux(OpsConfig{Ready: func(context.Context) error { return errors.New("Temporal unreachable") }})
	if code, body := get(t, mux, PathReadyz); code != http.StatusServiceUnavailable || !strings.Contains(body, "Temporal unreachable") {
		t.Errorf("GET /readyz = %d %q, want 503 with the reason", code, body)
	}
	if code, _ := get(t, mux, PathMetrics); code != http.StatusNotFound {
		t.Errorf("GET /metrics without a metrics handler = %d, want 404", code)
	}
}

func TestOpsServer(t *testing.T) {
	srv, err := StartOpsServer("127.0.0.1:0", NewOpsMux(OpsConfig{}), nil)
	if err != nil {
		t.Fatalf("StartOpsServer: %v", err)
	}
	resp, err := http.Get("http://" + srv.Addr() + PathHealthz)
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", resp.StatusCode)
	}

	if _, err := StartOpsServer(srv.Addr(), http.NotFoundHandler(), nil); err == nil || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("second listener on %s: error = %v, want one naming the address", srv.Addr(), err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := http.Get("http://" + srv.Addr() + PathHealthz); err == nil {
		t.Error("server still answers after Shutdown")
	}
}
