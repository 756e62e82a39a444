// Package mcpserver drives Fenix's MCP server (starter mcp and the
// mcpserver package) with software this project did not write: the
// official TypeScript SDK client and the MCP conformance suite, installed
// from npm into a cache outside the repository, against a real Temporal dev
// server and worker.
package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/internal/harness/npm"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/tools"
)

// The npm packages, pinned. conformance 0.1.14 and later need Node 22
// (fs.globSync); Debian's and NodeSource's Node 20 runs 0.1.13.
var npmPackages = []string{"@modelcontextprotocol/sdk@1.32.2", "@modelcontextprotocol/conformance@0.1.13"}

var (
	env      *testenv.Env
	npmDir   string // node_modules lives here; the driver is copied in
	npmSkip  string // why the npm-based tests skip, if they do
	queueSeq atomic.Int64
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("mcpserver: skipped in -short mode (needs the Temporal dev server and node)")
		return
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var err error
	env, err = testenv.Start(ctx, devserver.Options{}, "starter")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		return 1
	}
	defer env.Close()
	npmDir, npmSkip = installNPM(ctx)
	if npmSkip != "" {
		fmt.Fprintln(os.Stderr, "warning: mcpserver: "+npmSkip)
	}
	return m.Run()
}

// installNPM installs the pinned packages once into
// $(go env GOPATH)/../fenix-npm/mcp-server (or $FENIX_NPM_CACHE/mcp-server)
// and copies the driver beside them. It returns a reason to skip when
// node or npm is missing or the install fails.
func installNPM(ctx context.Context) (string, string) {
	dir, err := npm.Install(ctx, "mcp-server", npmPackages...)
	if err != nil {
		return "", fmt.Sprintf("%v; the TypeScript SDK client and conformance tests skip (install nodejs and npm, or run .ci/run)", err)
	}
	driver, err := os.ReadFile(filepath.Join("testdata", "driver.mjs"))
	if err != nil {
		return "", err.Error()
	}
	if err := os.WriteFile(filepath.Join(dir, "fenix-mcp-driver.mjs"), driver, 0o644); err != nil {
		return "", err.Error()
	}
	return dir, ""
}

func needNPM(t *testing.T) {
	t.Helper()
	if npmSkip != "" {
		t.Skip(npmSkip)
	}
}

// testWorker is an in-process worker on its own task queue, with Claude
// Code-style hooks and the test_sleep tool (not a built-in: the gateway
// must list it because the worker serves it).
type testWorker struct {
	*worker.Worker
	queue     string
	workspace string
	// dataDir is the worker's data directory (its context store).
	dataDir string
}

func startWorker(t testing.TB, extra ...tools.Definition) *testWorker {
	t.Helper()
	return startWorkerWith(t, nil, extra...)
}

// startWorkerWith is startWorker with the worker's configuration changed
// by configure before it starts.
func startWorkerWith(t testing.TB, configure func(*worker.Config), extra ...tools.Definition) *testWorker {
	t.Helper()
	queue := fmt.Sprintf("fenix-mcp-%d-%d", os.Getpid(), queueSeq.Add(1))
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# Fenix\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "secret.txt"), []byte("hunter2\n"), 0o644))
	registry, err := testtools.WithBuiltins(append([]tools.Definition{testtools.Sleep()}, extra...)...)
	require.NoError(t, err)
	cfg := worker.Config{
		TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: ws, Tools: registry,
		HooksFile: writeHooks(t),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	if configure != nil {
		configure(&cfg)
		ws = cfg.DefaultWorkspaceRoot
	}
	w, err := worker.New(env.Server.Client(), cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return &testWorker{Worker: w, queue: queue, workspace: ws, dataDir: cfg.DataDir}
}

// contexts is the worker's context store, which a gateway reads
// attachments, resource contents and prompt messages from.
func (w *testWorker) contexts(t testing.TB) *contextstore.FS {
	t.Helper()
	store, err := contextstore.NewFS(filepath.Join(w.dataDir, "contexts"))
	require.NoError(t, err)
	return store
}

// startEverythingWorker starts a worker whose project configures the
// official "everything" MCP server and allows its tools, and waits for
// the server to be ready. files are more of the project's files, by path
// (a .claude/settings.json among them replaces the one that allows).
func startEverythingWorker(t *testing.T, files ...map[string]string) (*testWorker, mcpservers.Servers) {
	t.Helper()
	servers := mcpservers.Require(t)
	project := servers.EverythingProject(t, `{"permissions": {"allow": ["mcp__everything"]}}`)
	for _, set := range files {
		for name, body := range set {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(project, name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(project, name), []byte(body), 0o755))
		}
	}
	w := startWorkerWith(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))
	return w, servers
}

// blockingHook is a project's files (for startEverythingWorker): its
// settings allow the everything server's tools, and a PreToolUse hook
// on matcher, a script as a team writes it, blocks every call whose input
// holds needle, with reason.
func blockingHook(matcher, needle, reason string) map[string]string {
	return map[string]string{
		".claude/hooks/block.sh": fmt.Sprintf(`#!/bin/sh
input=$(cat)
case "$input" in
  *'%s'*) echo %q >&2; exit 2 ;;
esac
exit 0
`, needle, reason),
		".claude/settings.json": fmt.Sprintf(`{"permissions": {"allow": ["mcp__everything"]},
  "hooks": {"PreToolUse": [{"matcher": %q, "hooks": [
    {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/block.sh"}]}]}}`, matcher),
	}
}

// writeHooks: a fail-closed guard blocks any workspace_read that mentions
// "secret" (exit 2, the reason on stderr), and workspace_list asks for
// permission.
func writeHooks(t testing.TB) string {
	dir := t.TempDir()
	scripts := map[string]string{
		"guard.sh": "#!/bin/sh\ncase \"$(cat)\" in *secret*) echo \"secrets are off limits\" >&2; exit 2 ;; esac\nexit 0\n",
		"ask.sh":   "#!/bin/sh\ncat >/dev/null\nprintf '%s' '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"listing needs a human\"}}'\n",
	}
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{
		map[string]any{"matcher": "workspace_read", "hooks": []any{map[string]any{"type": "command", "command": filepath.Join(dir, "guard.sh"), "timeout": 5, "fail_closed": true}}},
		map[string]any{"matcher": "workspace_list", "hooks": []any{map[string]any{"type": "command", "command": filepath.Join(dir, "ask.sh"), "timeout": 5}}},
	}}}
	raw, _ := json.Marshal(settings)
	path := filepath.Join(dir, "hooks.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

// gateway runs an in-process HTTP gateway on a loopback port until the
// returned stop is called (or the test ends).
func gateway(t testing.TB, cfg mcpserver.Config, opts mcpserver.HTTPOptions) (url string, stop func()) {
	t.Helper()
	cfg.Client = env.Server.Client()
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := mcpserver.New(context.Background(), cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeHTTP(ctx, ln, opts) }()
	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(shutdown)
	return "http://" + ln.Addr().String() + mcpserver.Path, shutdown
}

// event is one JSON line of the driver.
type event map[string]any

func (e event) kind() string { s, _ := e["event"].(string); return s }

// driver is a running TypeScript SDK client.
type driver struct {
	t      *testing.T
	events chan event
	stderr *testenv.Buffer
	cmd    *exec.Cmd
}

func startDriver(t *testing.T, cfg map[string]any) *driver {
	t.Helper()
	needNPM(t)
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command("node", filepath.Join(npmDir, "fenix-mcp-driver.mjs"), string(raw))
	cmd.Dir = npmDir
	d := &driver{t: t, events: make(chan event, 256), stderr: &testenv.Buffer{}, cmd: cmd}
	cmd.Stderr = d.stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				d.events <- e
			}
		}
		close(d.events)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return d
}

// next returns the next event of one of the kinds, failing on fatal.
func (d *driver) next(timeout time.Duration, kinds ...string) event {
	d.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-d.events:
			if !ok {
				d.t.Fatalf("driver exited before %v; stderr:\n%s", kinds, d.stderr.String())
			}
			if e.kind() == "fatal" {
				d.t.Fatalf("driver failed: %v\nstderr:\n%s", e["message"], d.stderr.String())
			}
			for _, k := range kinds {
				if e.kind() == k {
					return e
				}
			}
		case <-deadline:
			d.t.Fatalf("no %v event within %s; stderr:\n%s", kinds, timeout, d.stderr.String())
		}
	}
}

// callResult is a tools/call result as the driver prints it.
type callResult struct {
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     []byte `json:"data"` // base64 on the wire
		MIMEType string `json:"mimeType"`
		Resource *struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     []byte `json:"blob"`
		} `json:"resource"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
	Meta              map[string]any `json:"_meta"`
}

func (r callResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func (r callResult) workflowID() string { s, _ := r.Meta[mcpserver.MetaWorkflowID].(string); return s }

func (d *driver) result(timeout time.Duration) callResult {
	d.t.Helper()
	e := d.next(timeout, "result")
	raw, _ := json.Marshal(e["result"])
	var r callResult
	require.NoError(d.t, json.Unmarshal(raw, &r))
	return r
}

func step(op string, kv ...any) map[string]any {
	s := map[string]any{"op": op}
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i].(string)] = kv[i+1]
	}
	return s
}

func call(name string, args map[string]any, kv ...any) map[string]any {
	return step("call", append([]any{"name", name, "arguments", args, "progress", true}, kv...)...)
}
