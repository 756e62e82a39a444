package claudecode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/hooks"
)

// guardWork is a PreToolUse guard that needs about 0.2 s of CPU (a count
// in sh, work rather than time) before it blocks the call; taskset keeps
// it on CPU 0, where hogOn puts the load.
const guardWork = `taskset -c 0 sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo "blocked by the guard" >&2; exit 2'`

// hogOn starts n busy processes on CPU 0, each in a session of its own
// (as an agent's commands are, each its own scheduling group), for the
// test's length.
func hogOn(t *testing.T, n int) {
	t.Helper()
	for range n {
		hog := exec.Command("taskset", "-c", "0", "sh", "-c", "while :; do :; done")
		hog.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := hog.Start(); err != nil {
			t.Skipf("cannot start a busy process on CPU 0 with taskset: %v", err)
		}
		t.Cleanup(func() { _ = hog.Process.Kill(); _ = hog.Wait() })
	}
}

// TestLoadCannotMakeAGuardFailOpen: a guard hook with a short timeout,
// held off its CPU by busy processes, used to time out and fail open —
// the load was a way around it. Its timeout now counts only the time it
// could run: held up 8 to 1, it runs on and its block stands; held up 30
// to 1, it is starved at ten times its timeout and blocks though it does
// not fail closed. Both with the hook in its own cgroup (its pressure is
// the measure) and without one (its process's wait for a CPU).
func TestLoadCannotMakeAGuardFailOpen(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset (util-linux) is not installed")
	}
	for _, mechanism := range []string{"cgroup", "process"} {
		t.Run(mechanism, func(t *testing.T) {
			if mechanism == "process" {
				withoutHookCgroups(t)
			} else if probe := newProcessTree(newTestCmd()); probe.mechanism() != "cgroup" {
				probe.close()
				t.Skip("no writable cgroup v2 for hooks here")
			} else {
				probe.close()
			}
			t.Run("held up, it finishes and blocks", func(t *testing.T) {
				// About 1.8 s of the clock on an idle CPU 0, past its
				// timeout; a loaded CI can make it many times that, so it
				// gets a hundred times its timeout before it is starved.
				starvedStretch.Store(100)
				t.Cleanup(func() { starvedStretch.Store(maxStarvedStretch) })
				hogOn(t, 8)
				dir := t.TempDir()
				h := newCommandHook(t, cmdHook{Command: guardWork, Timeout: time.Second})
				start := time.Now()
				action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
				t.Logf("the guard answered after %s", time.Since(start).Round(time.Millisecond))
				if err != nil || action.Kind != hooks.KindBlock || !strings.Contains(action.Reason, "blocked by the guard") {
					t.Fatalf("action = %+v, err = %v, want the guard's own block", action, err)
				}
			})
			t.Run("starved, it blocks", func(t *testing.T) {
				hogOn(t, 30)
				dir := t.TempDir()
				h := newCommandHook(t, cmdHook{Command: guardWork, Timeout: 150 * time.Millisecond})
				start := time.Now()
				action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
				elapsed := time.Since(start)
				if err == nil || action.Kind != hooks.KindBlock || !strings.Contains(action.Reason, "was starved") {
					t.Fatalf("action = %+v, err = %v after %s, want a starved block", action, err, elapsed)
				}
				if elapsed < time.Duration(starvedStretch.Load())*150*time.Millisecond {
					t.Errorf("starved after %s, before %d times its timeout", elapsed, starvedStretch.Load())
				}
				t.Log(fmt.Sprint(err))
			})
		})
	}
}

// A guard something else stops or kills (a command with
// FENIX_COMMAND_SIGNALS=any, or on a kernel that does not scope signals)
// used to time out or crash and fail open. Now a guard found stopped at
// its deadline, or killed by any signal the worker did not send, fails
// closed without onFailure: block — a SIGSEGV or SIGUSR1 included, which
// code the guard runs (a git fsmonitor) can send as well as a command:
// a crash cannot be told from them. With and without the hook's cgroup.
func TestStoppingOrKillingAGuardDoesNotMakeItFailOpen(t *testing.T) {
	for _, mechanism := range []string{"cgroup", "process"} {
		t.Run(mechanism, func(t *testing.T) {
			if mechanism == "process" {
				withoutHookCgroups(t)
			}
			for _, tc := range []struct {
				name   string
				signal syscall.Signal
				want   hooks.Kind
				reason string
			}{
				{"stopped", syscall.SIGSTOP, hooks.KindBlock, "was stopped by a signal"},
				{"killed", syscall.SIGKILL, hooks.KindBlock, "killed by SIGKILL"},
				{"terminated", syscall.SIGTERM, hooks.KindBlock, "killed by SIGTERM"},
				{"segfaulted", syscall.SIGSEGV, hooks.KindBlock, "killed by SIGSEGV"},
				{"user signal", syscall.SIGUSR1, hooks.KindBlock, "killed by SIGUSR1"},
			} {
				for _, shape := range []string{"main process", "child of its shell"} {
					t.Run(tc.name+", "+shape, func(t *testing.T) {
						dir := t.TempDir()
						pidFile := filepath.Join(dir, "pid")
						// exec: the guard is the hook's main process, as a
						// python guard run through sh is.
						command := "echo $$ > " + pidFile + "; exec sleep 5"
						if shape != "main process" {
							// The guard is a child of the hook's shell, which
							// reports its death as exit status 128+signal.
							command = "sh -c 'echo $$ > " + pidFile + "; exec sleep 5'; exit $?"
						}
						h := newCommandHook(t, cmdHook{Command: command, Timeout: 500 * time.Millisecond})
						go func() {
							for range 200 {
								if raw, err := os.ReadFile(pidFile); err == nil && len(raw) > 1 {
									pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
									time.Sleep(50 * time.Millisecond)
									_ = syscall.Kill(pid, tc.signal)
									return
								}
								time.Sleep(10 * time.Millisecond)
							}
						}()
						action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
						if action.Kind != tc.want || !strings.Contains(fmt.Sprint(err), tc.reason) {
							t.Fatalf("action = %+v, err = %v; want %s with %q", action, err, tc.want, tc.reason)
						}
					})
				}
			}
		})
	}
}
