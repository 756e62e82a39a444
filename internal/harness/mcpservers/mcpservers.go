// Package mcpservers installs the official MCP reference servers from npm
// for tests and benchmarks, once, into a cache outside the repository
// ($(go env GOPATH)/../fenix-npm/mcp-servers, or FENIX_NPM_CACHE), and
// says where their entry points are. .ci/run installs the same versions
// ahead of time; a test that calls Require skips with a clear message when
// node or npm is missing or the install fails.
package mcpservers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenixrt/fenix/internal/harness/childproc"
	"github.com/fenixrt/fenix/internal/harness/npm"
	"github.com/fenixrt/fenix/internal/harness/testenv"
)

// Packages are the pinned servers the tests run.
var Packages = []string{
	"@modelcontextprotocol/server-filesystem@2026.8.31",
	"@modelcontextprotocol/server-memory@2026.8.31",
	"@modelcontextprotocol/server-everything@2026.8.31",
}

// Servers locates the installed servers.
type Servers struct {
	Dir  string // the npm prefix
	Node string // the node binary
}

// Entry is the JavaScript entry point of a server package's binary, e.g.
// Entry("server-memory") for mcp-server-memory.
func (s Servers) Entry(pkg string) string {
	return filepath.Join(s.Dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
}

// EverythingProject makes a project directory as a team's checkout holds
// one: its .mcp.json names the everything server (stdio) and its
// .claude/settings.json is settings.
func (s Servers) EverythingProject(tb testing.TB, settings string) string {
	tb.Helper()
	project := tb.TempDir()
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{s.Entry("server-everything"), "stdio"}}}})
	if err == nil {
		err = os.WriteFile(filepath.Join(project, ".mcp.json"), cfg, 0o644)
	}
	if err == nil {
		err = os.MkdirAll(filepath.Join(project, ".claude"), 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(settings), 0o644)
	}
	if err != nil {
		tb.Fatalf("the everything server's project: %v", err)
	}
	return project
}

// CacheDir is where the servers are installed.
func CacheDir() string { return npm.Dir("mcp-servers") }

// Require returns the installed servers, installing them when needed,
// and skips the test when that is impossible.
func Require(tb testing.TB) Servers {
	tb.Helper()
	s, err := Install(context.Background())
	if err != nil {
		tb.Skipf("MCP reference servers from npm are unavailable (%v); install node and npm, or run .ci/run", err)
	}
	return s
}

// Install installs the pinned packages into CacheDir unless they are
// there already.
func Install(ctx context.Context) (Servers, error) {
	dir, err := npm.Install(ctx, "mcp-servers", Packages...)
	if err != nil {
		return Servers{}, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return Servers{}, fmt.Errorf("node is not installed: %w", err)
	}
	return Servers{Dir: dir, Node: node}, nil
}

// loopbackPreload makes a Node server that listens on a port alone
// (Express's app.listen(PORT)) listen on 127.0.0.1 only: tests never open
// ports on other interfaces.
const loopbackPreload = `const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (args[0] && typeof args[0] === "object" && args[0].port !== undefined && !args[0].host) {
    args[0] = Object.assign({}, args[0], { host: "127.0.0.1" });
  }
  return listen.apply(this, args);
};
`

// StartEverythingHTTP runs server-everything's Streamable HTTP transport
// on a free loopback port until the test ends and returns its MCP URL.
func (s Servers) StartEverythingHTTP(tb testing.TB) string {
	tb.Helper()
	return s.startEverything(tb, "streamableHttp", "/mcp")
}

// StartEverythingSSE runs server-everything's HTTP+SSE transport (the
// 2024-11-05 spec's) on a free loopback port until the test ends and
// returns its SSE URL.
func (s Servers) StartEverythingSSE(tb testing.TB) string {
	tb.Helper()
	return s.startEverything(tb, "sse", "/sse")
}

func (s Servers) startEverything(tb testing.TB, transport, path string) string {
	tb.Helper()
	preload := filepath.Join(tb.TempDir(), "loopback.cjs")
	if err := os.WriteFile(preload, []byte(loopbackPreload), 0o644); err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(s.Node, "--require", preload, s.Entry("server-everything"), transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	p, err := childproc.Start(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Stop(2 * time.Second) })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "http://" + addr + path
		}
		if !p.Running() || time.Now().After(deadline) {
			tb.Fatalf("server-everything %s did not listen on %s: %s", transport, addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
