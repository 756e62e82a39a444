// Package mcpservers installs the official MCP reference servers from npm
// for tests and benchmarks, once, into a cache outside the repository
// ($(go env GOPATH)/../fenix-npm/mcp-servers, or FENIX_NPM_CACHE), and
// says where their entry points are. .ci/run installs the same versions
// ahead of time; a test that calls Require skips with a clear message when
// node or npm is missing or the install fails.
package mcpservers

import (
	"context"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// CacheDir is where the servers are installed.
func CacheDir() string {
	if d := os.Getenv("FENIX_NPM_CACHE"); d != "" {
		return filepath.Join(d, "mcp-servers")
	}
	gopath := build.Default.GOPATH
	if i := strings.IndexByte(gopath, os.PathListSeparator); i >= 0 {
		gopath = gopath[:i]
	}
	return filepath.Join(filepath.Dir(gopath), "fenix-npm", "mcp-servers")
}

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
// there already. Concurrent callers (test packages run in parallel) are
// serialized with a lock file.
func Install(ctx context.Context) (Servers, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return Servers{}, fmt.Errorf("node is not installed: %w", err)
	}
	dir := CacheDir()
	s := Servers{Dir: dir, Node: node}
	if installed(s) {
		return s, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return Servers{}, fmt.Errorf("npm is not installed: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Servers{}, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Servers{}, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Servers{}, err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if installed(s) {
		return s, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"fenix-mcp-test-servers","private":true}`+"\n"), 0o644); err != nil {
			return Servers{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--save-exact"}, Packages...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return Servers{}, fmt.Errorf("npm install in %s: %v: %s", dir, err, tail(out))
	}
	if !installed(s) {
		return Servers{}, fmt.Errorf("npm install in %s finished but the servers' entry points are missing", dir)
	}
	return s, nil
}

func installed(s Servers) bool {
	for _, pkg := range []string{"server-filesystem", "server-memory", "server-everything"} {
		if _, err := os.Stat(s.Entry(pkg)); err != nil {
			return false
		}
	}
	return true
}

func tail(out []byte) string {
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	return strings.TrimSpace(string(out))
}
