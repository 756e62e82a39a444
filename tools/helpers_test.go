package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/workspace"
)

// helperEnv makes the test binary act as a small HTTP service when a test
// starts it through process_exec.
const helperEnv = "FENIX_TOOLS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "http":
		serveHelper()
		return
	case "worker":
		fakeWorker()
		return
	}
	os.Exit(m.Run())
}

// serveHelper answers on $PORT, which process_exec sets from its port
// argument.
func serveHelper() {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "helper says hi: path=%s query=%s prefix=%s", r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Forwarded-Prefix"))
	})
	fmt.Println("helper listening on", os.Getenv("PORT"))
	if err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// testRig is a host, a workspace and an Env for running tools the way the
// activity does: through the registry, with validation.
type testRig struct {
	host    *Host
	ws      *workspace.Workspace
	dir     string
	env     *Env
	reg     *Registry
	mu      sync.Mutex
	chunks  []contract.ToolOutputChunk
	beats   int
	outside string // a directory outside the workspace, for escape tests
}

type rigOption func(*HostConfig)

func withLocalFetch() rigOption {
	return func(c *HostConfig) {
		c.Fetch = netguard.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	}
}

func newRig(t testing.TB, opts ...rigOption) *testRig {
	t.Helper()
	cfg := HostConfig{
		ID:      "test-host",
		DataDir: t.TempDir(),
		Environ: []string{
			"PATH=" + os.Getenv("PATH"),
			"LANG=C.UTF-8",
			"FENIX_TEST_SECRET=hunter2",
			"AWS_SECRET_ACCESS_KEY=do-not-leak",
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := NewHost(cfg)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r := &testRig{host: h, ws: ws, dir: dir, reg: Builtin(), outside: t.TempDir()}
	r.env = &Env{
		CallID:         "call-1",
		ConversationID: "conv-1",
		TurnID:         "turn-1",
		AgentProfile:   "main",
		Workspace:      ws,
		Host:           h,
		Progress: func(c contract.ToolOutputChunk) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.chunks = append(r.chunks, c)
		},
		Heartbeat: func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.beats++
		},
	}
	return r
}

// call runs a tool through Execute and Project.
func (r *testRig) call(t *testing.T, tool string, args map[string]any) (Projection, json.RawMessage, error) {
	t.Helper()
	return r.callCtx(context.Background(), t, tool, args)
}

func (r *testRig) callCtx(ctx context.Context, t *testing.T, tool string, args map[string]any) (Projection, json.RawMessage, error) {
	t.Helper()
	call := contract.ToolCall{CallID: r.env.CallID, ToolName: tool, Arguments: args}
	raw, err := r.reg.Execute(ctx, r.env, call)
	if err != nil {
		return Projection{}, nil, err
	}
	p, err := r.reg.Project(call, raw)
	if err != nil {
		t.Fatalf("projecting %s: %v", tool, err)
	}
	return p, raw, nil
}

// mustCall fails the test on an error.
func (r *testRig) mustCall(t *testing.T, tool string, args map[string]any) (Projection, json.RawMessage) {
	t.Helper()
	p, raw, err := r.call(t, tool, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	return p, raw
}

func (r *testRig) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *testRig) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("raw result does not decode into %T: %v\n%s", v, err, raw)
	}
	return v
}

// errorIs checks a Fenix error's type (through the hierarchy) and, when
// code is set, its code.
func errorIs(t *testing.T, err error, sentinel *fenixerr.Error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", sentinel.Type)
	}
	fe := fenixerr.As(err)
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %q is %s, want %s", err, fe.Type, sentinel.Type)
	}
	if code != "" && fe.Code != code {
		t.Fatalf("error %q has code %q, want %q", err, fe.Code, code)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func itoa(n int) string { return strconv.Itoa(n) }
