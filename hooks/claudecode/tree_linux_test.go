package claudecode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Without a writable cgroup v2 the marker scan kills the detached
// descendants too.
func TestCommandHookKillsDetachedDescendantsWithoutCgroup(t *testing.T) {
	probe := newProcessTree(newTestCmd())
	t.Logf("this machine kills hook trees by %q", probe.mechanism())
	probe.close()
	saved := hookCgroupParent
	hookCgroupParent = func() string { return "" }
	t.Cleanup(func() { hookCgroupParent = saved })
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "detach.sh", detachedScript+"\nsleep 1000"), Timeout: 300 * time.Millisecond})
	_, _ = h.PreToolUse(context.Background(), commandPreEvent(dir))
	assertProcessesGone(t, readPIDs(t, filepath.Join(dir, "pids")))
}

func newTestCmd() *exec.Cmd { return exec.Command("/bin/true") }

// A worker that died mid-hook leaves an empty run cgroup; the next worker
// removes it, and leaves a fresh one (another worker's run) alone.
func TestStaleHookCgroupsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	stale, fresh := filepath.Join(dir, "fenix-hook-stale"), filepath.Join(dir, "fenix-hook-fresh")
	for _, d := range []string{stale, fresh, filepath.Join(dir, "other")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	removeStaleCgroups(dir, time.Now().Add(-time.Minute))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale run cgroup is still there: %v", err)
	}
	for _, d := range []string{fresh, filepath.Join(dir, "other")} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
