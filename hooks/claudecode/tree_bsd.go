//go:build unix && !linux

package claudecode

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// processTree on other Unix systems is the command's process group; see
// tree_linux.go for the whole-tree kill (cgroup or marker).
type processTree struct{ cmd *exec.Cmd }

func newProcessTree(cmd *exec.Cmd) *processTree {
	t := &processTree{cmd: cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { t.kill(); return nil }
	return t
}

func (t *processTree) mechanism() string { return "process group" }

func (t *processTree) kill() {
	if t.cmd.Process != nil {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (t *processTree) close() { t.kill() }

// stalled is unknown here: a hook's timeout is its clock's.
func (t *processTree) stalled() (time.Duration, bool) { return 0, false }

// stopped is unknown here.
func (t *processTree) stopped() bool { return false }

// killedFromOutside is unknown here: a killed hook fails as before.
func killedFromOutside(*os.ProcessState) (string, bool) { return "", false }

// shellReportedKill is unknown here: a hook's exit status is its own.
func shellReportedKill(int) (string, bool) { return "", false }
