//go:build !unix

package claudecode

import (
	"os"
	"os/exec"
	"time"
)

// processTree on other platforms is the process exec starts; see
// tree_linux.go for the whole-tree kill.
type processTree struct{ cmd *exec.Cmd }

func newProcessTree(cmd *exec.Cmd) *processTree { return &processTree{cmd: cmd} }

func (t *processTree) mechanism() string { return "process" }

func (t *processTree) kill() {
	if t.cmd.Process != nil {
		_ = t.cmd.Process.Kill()
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
