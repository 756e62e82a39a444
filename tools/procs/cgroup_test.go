//go:build linux

package procs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/proctree"
)

// needCgroup skips where the worker cannot make run cgroups: there a
// process that leaves its group escapes, as doc.go says.
func needCgroup(t *testing.T) {
	t.Helper()
	if proctree.Parent() == "" {
		t.Skip("no writable cgroup v2: a process that calls setsid escapes the group kill here")
	}
}

// detached starts a process that leaves the command's process group and
// writes its pid to file.
func detached(file string) string {
	return "setsid sh -c 'echo $$ > " + file + "; exec sleep 60' </dev/null >/dev/null 2>&1 &"
}

// detachedStarted is detached, then a wait (a builtin loop, which forks
// nothing) until the process wrote its pid: what follows runs once it
// has, however loaded the machine.
func detachedStarted(file string) string {
	return detached(file) + " while [ ! -s " + file + " ]; do :; done; "
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		raw, err := os.ReadFile(file)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s: %v", file, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func assertDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d, which left the command's group with setsid, outlived the command", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A command that ends leaves nothing behind, not even a process that
// left its process group.
func TestADetachedProcessDiesWithItsCommand(t *testing.T) {
	needCgroup(t)
	file := filepath.Join(t.TempDir(), "pid")
	_, exit, elapsed := run(t, Spec{CommandLine: detachedStarted(file) + "sleep 0.2"}, 10*time.Second)
	if exit.Code != 0 || elapsed > 5*time.Second {
		t.Fatalf("exit %d after %s, want 0 promptly", exit.Code, elapsed)
	}
	assertDead(t, readPID(t, file))
}

// Stopping a command (a cancel, a timeout) kills what left its group.
func TestStopKillsADetachedProcess(t *testing.T) {
	needCgroup(t)
	file := filepath.Join(t.TempDir(), "pid")
	p, err := Start(Spec{CommandLine: detached(file) + " sleep 60", Env: testEnv(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, file)
	p.Stop(ReasonCanceled, 300*time.Millisecond)
	assertDead(t, pid)
}

// The process limit counts what left the group too.
func TestProcessLimitCountsDetachedProcesses(t *testing.T) {
	needCgroup(t)
	dir := t.TempDir()
	// Each detached process has written its pid before the next starts
	// (the wait is a shell builtin loop, which forks nothing). The shell,
	// two detached processes and the third one's fork are over the limit
	// of three, so the first two are certain to have written their pid;
	// the watchdog may end the command before the others do.
	var cmd strings.Builder
	for i := range 4 {
		file := filepath.Join(dir, strconv.Itoa(i))
		cmd.WriteString(detachedStarted(file))
	}
	cmd.WriteString("sleep 30")
	_, exit, elapsed := run(t, Spec{CommandLine: cmd.String(), Limits: Limits{MaxProcesses: 3}}, 20*time.Second)
	if exit.Reason != ReasonProcessLimit || elapsed > 10*time.Second {
		t.Fatalf("exit %+v after %s, want the process limit to end it", exit, elapsed)
	}
	for i := range 4 {
		file := filepath.Join(dir, strconv.Itoa(i))
		if i < 2 {
			assertDead(t, readPID(t, file))
		} else if raw, _ := os.ReadFile(file); len(bytes.TrimSpace(raw)) > 0 {
			assertDead(t, readPID(t, file))
		}
	}
}
