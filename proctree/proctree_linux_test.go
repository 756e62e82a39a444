package proctree

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A worker that died mid-run leaves an empty run cgroup; the next worker
// removes it, and leaves a fresh one (another worker's run) alone.
func TestStaleRunCgroupsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	stale, fresh := filepath.Join(dir, PrefixHook+"stale"), filepath.Join(dir, PrefixCommand+"fresh")
	staleCmd, staleMCP := filepath.Join(dir, PrefixCommand+"stale"), filepath.Join(dir, PrefixMCP+"stale")
	for _, d := range []string{stale, staleCmd, staleMCP, fresh, filepath.Join(dir, "other")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{stale, staleCmd, staleMCP} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir, time.Now().Add(-staleAge))
	for _, d := range []string{stale, staleCmd, staleMCP} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the stale run cgroup %s is still there: %v", d, err)
		}
	}
	for _, d := range []string{fresh, filepath.Join(dir, "other")} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// A process that leaves its process group (setsid) is still in the tree's
// cgroup: the cgroup counts it while it runs and Kill ends it.
func TestCgroupHoldsAProcessThatLeftItsGroup(t *testing.T) {
	cg, err := New(Parent(), PrefixCommand)
	if err != nil {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	defer cg.Close()
	cmd := exec.Command("/bin/sh", "-c", "setsid sh -c 'echo $$; exec sleep 60 >/dev/null 2>&1' &")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cg.Attach(cmd.SysProcAttr)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	if n, err := cg.Processes(); err != nil || n != 1 {
		t.Fatalf("processes = %d, %v; want the detached sleep", n, err)
	}
	if populated, _ := cg.Populated(); !populated {
		t.Fatal("the cgroup says it is empty while the detached sleep runs")
	}
	if err := cg.Kill(); err != nil {
		t.Fatal(err)
	}
	if !cg.WaitEmpty(5 * time.Second) {
		t.Fatal("the cgroup is still populated after Kill")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(stat), ") Z ") {
			t.Fatalf("the detached sleep %d outlived the kill: %s", pid, stat)
		}
	}
}

// Mounts lists every cgroup hierarchy, the v2 one included, with
// mountinfo's escapes undone.
func TestMountsListEveryCgroupHierarchy(t *testing.T) {
	mounts := Mounts()
	if v2 := cgroup2Mount(); v2 != "" && !slices.Contains(mounts, v2) {
		t.Errorf("Mounts() = %v lacks the cgroup v2 mount %s", mounts, v2)
	}
	for _, m := range mounts {
		if info, err := os.Stat(m); err != nil || !info.IsDir() {
			t.Errorf("mount %s is not a directory: %v", m, err)
		}
	}
	if got := unescapeMountinfo(`/sys/fs/my\040cgroups\134x`); got != `/sys/fs/my cgroups\x` {
		t.Errorf("unescapeMountinfo = %q", got)
	}
}

// A second Close does nothing: the first freed the descriptor's number,
// which the next file opened takes.
func TestCloseTwiceLeavesOtherFilesOpen(t *testing.T) {
	cg, err := New(Parent(), PrefixCommand)
	if err != nil {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	cg.Close()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cg.Close()
	if _, err := f.Stat(); err != nil {
		t.Fatalf("a file opened after the first Close was closed by the second: %v", err)
	}
}

// A worker killed while a hook ran left the hook's processes running
// beside the stage's run on another worker. The next worker on the host
// ends what is left in the hook, MCP server and browser cgroups of a
// worker process that is gone, and leaves a live worker's alone.
func TestOrphanedRunCgroupsAreKilled(t *testing.T) {
	parent := Parent()
	if parent == "" {
		t.Skip("no writable cgroup v2 here")
	}
	start := func(name string) (*exec.Cmd, string) {
		t.Helper()
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
			time.Sleep(50 * time.Millisecond)
			_ = os.Remove(dir)
		})
		fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, dir
	}
	gone, goneDir := start(PrefixHook + "999999999.1-orphan")
	mine, mineDir := start(PrefixHook + owner() + "-mine")
	defer func() { _ = mine.Process.Kill(); _ = mine.Wait() }()
	done := make(chan error, 1)
	go func() { done <- gone.Wait() }()
	killOrphans(parent)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the dead worker's hook process is still running")
	}
	if _, err := os.Stat(goneDir); !os.IsNotExist(err) {
		t.Errorf("the orphaned cgroup is still there: %v", err)
	}
	if _, err := os.Stat(mineDir); err != nil || mine.ProcessState != nil {
		t.Errorf("a live worker's hook cgroup was touched: %v", err)
	}
	if err := mine.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a live worker's hook process was killed: %v", err)
	}
}
