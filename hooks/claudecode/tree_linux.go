//go:build linux

package claudecode

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/fenixrt/fenix/proctree"
	"golang.org/x/sys/unix"
)

// processTree is everything a hook run starts, however it detaches: a
// grandchild that calls setsid leaves the process group but not the
// tree. Each run gets its own cgroup v2 when the worker's cgroup is
// writable (see proctree); otherwise every process of the run carries a
// marker variable, FENIX_HOOK_RUN, and the kill scans /proc for it. The
// fallback misses a descendant that clears its environment (env -i) and
// setsid()s; run the worker with a writable cgroup v2 (a delegated systemd
// unit or container) to close that.
type processTree struct {
	marker string
	cgroup *proctree.Cgroup
	cmd    *exec.Cmd
}

// hookRunEnv names the marker variable of a hook run's processes.
const hookRunEnv = "FENIX_HOOK_RUN"

// hookCgroupParent is where hook runs get their cgroups ("" for none); a
// variable so a test can take the fallback.
var hookCgroupParent = proctree.Parent

// newProcessTree prepares cmd (whose Env is set) to run as its own tree:
// its own process group, its own cgroup when one can be made, the marker.
// close kills what is left and releases the cgroup.
func newProcessTree(cmd *exec.Cmd) *processTree {
	var id [8]byte
	_, _ = rand.Read(id[:])
	t := &processTree{marker: hex.EncodeToString(id[:]), cmd: cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(cmd.Env, hookRunEnv+"="+t.marker)
	cmd.Cancel = func() error { t.kill(); return nil }
	if cg, err := proctree.New(hookCgroupParent(), proctree.PrefixHook); err == nil {
		t.cgroup = cg
		cg.Attach(cmd.SysProcAttr)
	}
	return t
}

// mechanism names how the tree is killed, for tests and logs.
func (t *processTree) mechanism() string {
	if t.cgroup != nil {
		return "cgroup"
	}
	return "marker"
}

// kill ends every process of the run: the cgroup's members, else the
// process group and every process carrying the marker.
func (t *processTree) kill() {
	if t.cgroup != nil && t.cgroup.Kill() == nil {
		return
	}
	if t.cmd.Process != nil {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
	killMarked(hookRunEnv + "=" + t.marker)
}

// close kills what is left and removes the run's cgroup once it is empty.
func (t *processTree) close() {
	t.kill()
	if t.cgroup != nil {
		t.cgroup.Close()
	}
}

// killMarked SIGKILLs every process whose environment holds marker.
// Processes of other users cannot be read and are not ours.
func killMarked(marker string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	want := []byte(marker)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}

// stalled is how long the run has been held up by others: its cgroup's
// CPU and memory pressure, else its process group's wait for a CPU, a
// figure that lags while one of them is runnable (see proctree); 0 when
// neither can be read.
func (t *processTree) stalled() (held time.Duration, lagging bool) {
	if t.cgroup != nil {
		if d, err := t.cgroup.Stalled(); err == nil {
			return d, false
		}
	}
	if t.cmd.Process != nil {
		if d, runnable, err := proctree.GroupStalled(t.cmd.Process.Pid); err == nil {
			return d, runnable
		}
	}
	return 0, false
}

// stopped reports whether a process of the run is stopped (SIGSTOP, a
// tracer): its cgroup's members, else its process group.
func (t *processTree) stopped() bool {
	if t.cgroup != nil {
		return t.cgroup.Stopped()
	}
	return t.cmd.Process != nil && proctree.GroupStopped(t.cmd.Process.Pid)
}

// killedFromOutside is the name of the signal that ended a hook's process
// (the worker's own kills come with a timeout or a cancellation, checked
// first). Any signal: who sent one cannot be told after the fact, and a
// SIGSEGV or SIGUSR1 another process sends ends a guard as surely as a
// SIGKILL — code the guard itself runs (a repository's git fsmonitor)
// can send them, and so can commands where signals are not scoped.
func killedFromOutside(ps *os.ProcessState) (string, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return "", false
	}
	return unix.SignalName(ws.Signal()), true
}

// shellReportedKill is the signal a hook's exit status 128+n reports: a
// shell whose command was killed exits so, and a guard run as a child of
// the hook's shell, killed by code it ran itself (an npm script the agent
// rewrote), must fail closed as a guard killed outright does. SIGPIPE is
// left out (a pipeline's reader closing early is an everyday exit), and
// so are the signals that end no process.
func shellReportedKill(code int) (string, bool) {
	if code <= 128 || code > 128+31 {
		return "", false
	}
	switch sig := syscall.Signal(code - 128); sig {
	case syscall.SIGPIPE, syscall.SIGCHLD, syscall.SIGCONT, syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		syscall.SIGURG, syscall.SIGWINCH:
		return "", false
	default:
		return unix.SignalName(sig), true
	}
}
