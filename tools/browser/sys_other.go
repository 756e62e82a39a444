//go:build !linux

package browser

import (
	"os/exec"
	"syscall"
)

func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

func killUsingProfile(string) int { return 0 }

// ProcessesUsingProfile needs /proc; elsewhere it finds nothing.
func ProcessesUsingProfile(string) []int { return nil }
