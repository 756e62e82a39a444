//go:build linux

package browser

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// isolate puts Chromium in its own process group, so closing a session
// kills every helper process it started, and has the kernel kill it when
// the worker dies (Pdeathsig).
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// killGroup kills Chromium's process group.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// killUsingProfile kills every process whose command line names a path
// under prefix, and returns how many it found. Chromium passes its
// profile (--user-data-dir, crashpad's --database) to its helpers, so this
// finds helpers that left the process group or outlived a dead worker.
func killUsingProfile(prefix string) int {
	pids := ProcessesUsingProfile(prefix)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// ProcessesUsingProfile lists the live processes (zombies excluded) whose
// command line names a path under prefix, such as a session's profile.
func ProcessesUsingProfile(prefix string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(prefix)) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			// A zombie has exited; only its parent's wait is missing.
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}
