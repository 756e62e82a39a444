//go:build linux

package procs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
}

// run starts spec and waits for it, failing the test after limit.
func run(t *testing.T, spec Spec, limit time.Duration) (*Process, Exit, time.Duration) {
	t.Helper()
	if spec.Env == nil {
		spec.Env = testEnv()
	}
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	begin := time.Now()
	p, err := Start(spec)
	if err != nil {
		t.Fatalf("Start(%q): %v", spec.CommandLine, err)
	}
	select {
	case <-p.Done():
	case <-time.After(limit):
		p.Kill(ReasonStopped)
		<-p.Done()
		t.Fatalf("%q did not finish within %s", spec.CommandLine, limit)
	}
	return p, p.Exit(), time.Since(begin)
}

func assertGroupGone(t *testing.T, p *Process) {
	t.Helper()
	if n := LiveGroupSize(p.PID()); n != 0 {
		t.Fatalf("process group %d still has %d processes after the command ended", p.PID(), n)
	}
}

func TestExitStatusAndStreams(t *testing.T) {
	tests := []struct {
		name       string
		command    string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"success", "echo out; echo err >&2", 0, "out\n", "err\n"},
		{"exit code", "exit 7", 7, "", ""},
		{"missing program", "definitely-not-a-program-fenix", 127, "", "not found"},
		{"killed by signal", "kill -9 $$", 137, "", ""},
		// The line runs in the gate's shell (eval, no second exec) but
		// sees what `sh -c LINE` would: no positional parameters, $0 the
		// shell, none of the gate's variables, the gate's fd closed.
		{"as sh -c sees it", `echo "$0 $# [$*] [${fenix_gate-unset}]"; [ -e /proc/self/fd/3 ] && echo fd3 open; exit 0`, 0, "/bin/sh 0 [] [unset]\n", ""},
		{"syntax error", "if then", 2, "", "Syntax error"},
		{"several lines", "x=1\nif [ $x = 1 ]; then\n  echo one\nfi", 0, "one\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, exit, _ := run(t, Spec{CommandLine: tt.command}, 10*time.Second)
			if exit.Code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", exit.Code, tt.wantCode)
			}
			out, _ := p.Stdout().Last(0)
			errOut, _ := p.Stderr().Last(0)
			if string(out) != tt.wantStdout {
				t.Errorf("stdout = %q, want %q", out, tt.wantStdout)
			}
			if !strings.Contains(string(errOut), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", errOut, tt.wantStderr)
			}
			assertGroupGone(t, p)
		})
	}
}

func TestEnvironmentIsExactlyTheSpec(t *testing.T) {
	t.Setenv("FENIX_PROCS_SECRET", "hunter2")
	p, _, _ := run(t, Spec{CommandLine: "env", Env: []string{"PATH=/usr/bin:/bin", "ONLY=this"}}, 10*time.Second)
	out, _ := p.Stdout().Last(0)
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "ONLY=this") {
		t.Fatalf("environment leaked or lost:\n%s", out)
	}
}

func TestLeftoverBackgroundChildrenAreKilled(t *testing.T) {
	p, exit, elapsed := run(t, Spec{CommandLine: "sleep 60 & sleep 60 & echo started"}, 10*time.Second)
	if exit.Code != 0 || elapsed > 5*time.Second {
		t.Fatalf("exit %d after %s, want 0 promptly", exit.Code, elapsed)
	}
	assertGroupGone(t, p)
}

func TestStopKillsAChildIgnoringSIGTERM(t *testing.T) {
	p, err := Start(Spec{CommandLine: "trap '' TERM; sleep 60 & sleep 60; wait", Env: testEnv(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for both sleeps to exist so SIGTERM reaches them.
	deadline := time.Now().Add(5 * time.Second)
	for GroupSize(p.PID()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	begin := time.Now()
	p.Stop(ReasonCanceled, 300*time.Millisecond)
	if elapsed := time.Since(begin); elapsed > 3*time.Second {
		t.Fatalf("Stop took %s", elapsed)
	}
	exit := p.Exit()
	if exit.Reason != ReasonCanceled || exit.Signal != "SIGKILL" {
		t.Fatalf("exit = %+v, want reason canceled by SIGKILL", exit)
	}
	assertGroupGone(t, p)
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name       string
		command    string
		limits     Limits
		wantReason string
		wantSignal string
		wantCode   int
		check      func(t *testing.T, dir string, p *Process)
	}{
		{
			name:       "output limit kills a runaway writer",
			command:    "head -c 1000000000 /dev/zero",
			limits:     Limits{MaxOutputBytes: 1 << 20},
			wantReason: ReasonOutputLimit,
			wantSignal: "SIGKILL",
			check: func(t *testing.T, _ string, p *Process) {
				if got, _ := p.Stdout().Last(0); len(got) > 64<<10 {
					t.Errorf("kept %d bytes, want at most the 64 KiB keep", len(got))
				}
			},
		},
		{
			name:       "process limit kills a fork loop",
			command:    `i=0; while [ $i -lt 2000 ]; do sleep 10 & i=$((i+1)); done; wait`,
			limits:     Limits{MaxProcesses: 32},
			wantReason: ReasonProcessLimit,
			wantSignal: "SIGKILL",
		},
		{
			name:     "file size limit stops a large write",
			command:  "head -c 3000000 /dev/zero > big",
			limits:   Limits{MaxFileBytes: 1 << 20},
			wantCode: 128 + 25, // the shell reports head's SIGXFSZ
			check: func(t *testing.T, dir string, _ *Process) {
				info, err := os.Stat(filepath.Join(dir, "big"))
				if err != nil || info.Size() > 1<<20 {
					t.Errorf("big is %v bytes (err %v), want at most 1 MiB", info.Size(), err)
				}
			},
		},
		{
			name:       "cpu limit stops a busy loop",
			command:    "while :; do :; done",
			limits:     Limits{CPUSeconds: 1},
			wantSignal: "SIGXCPU",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, exit, elapsed := run(t, Spec{CommandLine: tt.command, Limits: tt.limits, Dir: dir, KeepBytes: 64 << 10}, 15*time.Second)
			if exit.Reason != tt.wantReason || exit.Signal != tt.wantSignal || (tt.wantCode != 0 && exit.Code != tt.wantCode) {
				t.Errorf("exit = %+v after %s, want reason %q signal %s", exit, elapsed, tt.wantReason, tt.wantSignal)
			}
			if tt.check != nil {
				tt.check(t, dir, p)
			}
			assertGroupGone(t, p)
		})
	}
}

func TestLogFileIsCapped(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "out.log")
	p, _, _ := run(t, Spec{CommandLine: "head -c 5000 /dev/zero; echo; echo tail", LogPath: logPath, LogMaxBytes: 1000, CombineOutput: true}, 10*time.Second)
	info, err := os.Stat(logPath)
	if err != nil || info.Size() != 1000 {
		t.Fatalf("log size = %v (err %v), want 1000", info.Size(), err)
	}
	if p.LogDropped() != 5000+1+5-1000 {
		t.Fatalf("dropped = %d, want %d", p.LogDropped(), 5000+1+5-1000)
	}
}
