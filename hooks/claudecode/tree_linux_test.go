package claudecode

import (
	"context"
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
	withoutHookCgroups(t)
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "detach.sh", detachedScript+"\nsleep 1000"), Timeout: 300 * time.Millisecond})
	_, _ = h.PreToolUse(context.Background(), commandPreEvent(dir))
	assertProcessesGone(t, readPIDs(t, filepath.Join(dir, "pids")))
}

func newTestCmd() *exec.Cmd { return exec.Command("/bin/true") }

// withoutHookCgroups makes the test's hooks run without a cgroup of their
// own, as on a worker whose cgroup is not writable.
func withoutHookCgroups(t *testing.T) {
	saved := hookCgroupParent
	hookCgroupParent = func() string { return "" }
	t.Cleanup(func() { hookCgroupParent = saved })
}
