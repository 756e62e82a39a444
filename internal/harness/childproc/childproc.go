// Package childproc runs the long-lived child processes the harnesses
// manage — the production Temporal server, worker hosts, worker binaries
// in fault tests — and owns the one way to watch, stop and kill them.
package childproc

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// Process is a started child process.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid once done is closed
}

// Start starts cmd and watches for its exit. A cmd started with
// SysProcAttr.Setpgid leads its own process group, and Kill and Stop
// then reach the whole group.
func Start(cmd *exec.Cmd) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// PID is the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once Done is closed, nil before.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig to the process (not its group).
func (p *Process) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill SIGKILLs the process (its group, when it leads one) and waits for
// it to exit.
func (p *Process) Kill() {
	if p.Running() {
		p.kill()
	}
	<-p.done
}

// Stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it and says so.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM to process %d: %w", p.PID(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("process %d did not exit within %s of SIGTERM; killed", p.PID(), grace)
	}
}

func (p *Process) kill() {
	if p.cmd.SysProcAttr != nil && p.cmd.SysProcAttr.Setpgid {
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		return
	}
	_ = p.cmd.Process.Kill()
}
