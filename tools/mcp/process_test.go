package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/proctree"
	"github.com/fenixrt/fenix/tools/mcp"
)

// recordingLauncher starts what it is given, as a confiner would, and
// records what and where.
type recordingLauncher struct {
	mu       sync.Mutex
	started  []string
	readOnly [][]string
	cgroups  []bool
	released int
}

func (l *recordingLauncher) StartCommand(cmd *exec.Cmd, o confine.CommandOptions) (func(), error) {
	l.mu.Lock()
	l.started = append(l.started, o.Workspace)
	l.readOnly = append(l.readOnly, o.ReadOnly)
	l.cgroups = append(l.cgroups, cmd.SysProcAttr != nil && cmd.SysProcAttr.UseCgroupFD)
	l.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		l.mu.Lock()
		l.released++
		l.mu.Unlock()
	}, nil
}

// A stdio server starts through the launcher, in a cgroup of its own,
// and stopping it ends what it started too: `npx` runs the server as a
// child of its own, which outlived the npx process killed alone.
func TestStdioServersStartThroughTheLauncherAndEndWholly(t *testing.T) {
	if proctree.Parent() == "" {
		t.Skip("no writable cgroup v2 here")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// A wrapper like npx: a child it leaves running, then the server.
	wrapper := "sleep 300 & echo $! > " + pidFile + "; " + exe
	cfgJSON := `{"mcpServers": {"go": {"command": "sh", "args": ["-c", ` + strconv.Quote(wrapper) + `],
		"env": {"FENIX_TEST_MCP_SERVER": "1"}}}}`
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := mcp.Load([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	launcher := &recordingLauncher{}
	governing := func(workspace string) []string { return []string{".git/config", workspace} }
	m, err := mcp.NewManager(loaded.Servers, mcp.Options{HostID: "test-host", WorkDir: dir, Launcher: launcher, ReadOnly: governing})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.WaitReady(ctx, "go"); err != nil {
		m.Close()
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pidFile)
	child, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || child <= 0 {
		m.Close()
		t.Fatalf("the wrapper's child left no pid: %v", err)
	}
	m.Close()

	launcher.mu.Lock()
	started, readOnly, cgroups, released := launcher.started, launcher.readOnly, launcher.cgroups, launcher.released
	launcher.mu.Unlock()
	if len(started) != 1 || started[0] != dir || !cgroups[0] {
		t.Fatalf("launcher started %v (in a cgroup: %v), want the server once, in the workspace %s, in its cgroup", started, cgroups, dir)
	}
	if want := governing(dir); !slices.Equal(readOnly[0], want) {
		t.Errorf("the server's read-only paths = %q, want %q (Options.ReadOnly of its workspace)", readOnly[0], want)
	}
	if released != 1 {
		t.Errorf("the launcher's thread was released %d times, want once after the server was reaped", released)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("process %d, which the server's wrapper started, outlived the server", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
