package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/tools/procs"
	"github.com/fenixrt/fenix/workspace"
)

// Where the fake worker keeps its data directory and workspace.
const (
	fakeDataEnv      = "FENIX_TOOLS_TEST_DATA"
	fakeWorkspaceEnv = "FENIX_TOOLS_TEST_WORKSPACE"
)

// fakeWorker is a worker host that starts a background service with
// process_exec and a long command with exec_command, printing each
// resource ID as Env.ReportResource reports it, then waits to be killed.
func fakeWorker() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "fake worker:", err)
		os.Exit(2)
	}
	h, err := NewHost(HostConfig{
		ID: "test-host", DataDir: os.Getenv(fakeDataEnv), ProxyAddr: "off",
		Environ: []string{"PATH=" + os.Getenv("PATH")},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fail(err)
	}
	ws, err := workspace.Open(os.Getenv(fakeWorkspaceEnv))
	if err != nil {
		fail(err)
	}
	var mu sync.Mutex
	env := &Env{
		CallID: "call-lost", Workspace: ws, Host: h,
		ReportResource: func(id string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Println("resource", id)
		},
	}
	reg := Builtin()
	if _, err := reg.Execute(context.Background(), env, contract.ToolCall{CallID: "call-svc", ToolName: "process_exec", Arguments: map[string]any{
		"command_line": "echo $$ > svc.pid; sleep 300 & wait",
	}}); err != nil {
		fail(err)
	}
	go func() {
		_, err := reg.Execute(context.Background(), env, contract.ToolCall{CallID: "call-cmd", ToolName: "exec_command", Arguments: map[string]any{
			"command_line": "echo started >> marker; echo $$ > cmd.pid; sleep 300; echo done >> marker", "timeout_seconds": 600,
		}})
		fail(fmt.Errorf("exec_command returned: %v", err))
	}()
	time.Sleep(10 * time.Minute)
}

func TestRestartReapsWhatAKilledWorkerLeftRunning(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dataDir, wsDir := t.TempDir(), t.TempDir()
	worker := exec.Command(exe, "-test.run=^$")
	worker.Env = append(os.Environ(), helperEnv+"=worker", fakeDataEnv+"="+dataDir, fakeWorkspaceEnv+"="+wsDir)
	worker.Stderr = os.Stderr
	out, err := worker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
	})
	ids := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "resource "); ok {
				ids <- id
			}
		}
	}()
	next := func(what string) string {
		select {
		case id := <-ids:
			return id
		case <-time.After(20 * time.Second):
			t.Fatalf("the fake worker reported no %s", what)
			return ""
		}
	}
	procID, cmdID := next("process_run_id"), next("command_run_id")
	if !strings.HasPrefix(procID, "proc_test-host_") || !strings.HasPrefix(cmdID, "cmd_test-host_") {
		t.Fatalf("reported resources %q, %q", procID, cmdID)
	}

	groupOf := func(file string) int {
		var pgid int
		waitUntil(t, 10*time.Second, file+" names a running group", func() bool {
			raw, err := os.ReadFile(filepath.Join(wsDir, file))
			if err != nil {
				return false
			}
			pgid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
			return err == nil && procs.LiveGroupSize(pgid) >= 2
		})
		t.Cleanup(func() {
			if procs.LiveGroupSize(pgid) > 0 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		})
		return pgid
	}
	svcGroup, cmdGroup := groupOf("svc.pid"), groupOf("cmd.pid")

	if err := worker.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	// Pdeathsig takes the shells down; their sleeps are what is left.
	waitUntil(t, 5*time.Second, "the shells die with the worker", func() bool {
		return procs.LiveGroupSize(svcGroup) == 1 && procs.LiveGroupSize(cmdGroup) == 1
	})

	var logs bytes.Buffer
	h2, err := NewHost(HostConfig{ID: "test-host", DataDir: dataDir, ProxyAddr: "off", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Close() })
	if n, m := procs.LiveGroupSize(cmdGroup), procs.LiveGroupSize(svcGroup); n != 0 || m != 0 {
		t.Fatalf("after the restart the command's group has %d live processes, the service's %d", n, m)
	}
	for _, id := range []string{cmdID, procID} {
		if !strings.Contains(logs.String(), id) {
			t.Errorf("the restart did not log reaping %s:\n%s", id, logs.String())
		}
	}

	ws, err := workspace.Open(wsDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	r := &testRig{host: h2, ws: ws, dir: wsDir, reg: Builtin(), env: &Env{CallID: "call-after", Workspace: ws, Host: h2}}

	p, raw := r.mustCall(t, "command_run_read", map[string]any{"command_run_id": cmdID})
	read := decode[CommandRunReadResult](t, raw)
	if read.Status != procs.RunKilled || read.Reason != procs.ReasonWorkerLost || read.ExitStatus != nil || read.FinishedAt == nil {
		t.Errorf("command_run_read = %+v", read)
	}
	wantPrefix := "Command run " + cmdID + " was killed (exit status unknown). The worker running it was lost"
	if !strings.HasPrefix(p.Content, wantPrefix) || p.Metadata["reason"] != procs.ReasonWorkerLost {
		t.Errorf("content = %q (metadata %v), want it to start with %q", p.Content, p.Metadata, wantPrefix)
	}

	p, raw = r.mustCall(t, "process_list", map[string]any{"process_run_id": procID})
	list := decode[ProcessListResult](t, raw)
	if len(list.Processes) != 1 || list.Processes[0].Status != procs.StatusStopped || list.Processes[0].Reason != procs.ReasonWorkerLost {
		t.Errorf("process_list = %+v", list)
	}
	if !strings.Contains(p.Content, procID+" stopped (the worker running it was lost; exit status unknown)") {
		t.Errorf("process_list content = %q", p.Content)
	}

	if marker := r.read(t, "marker"); marker != "started\n" {
		t.Errorf("marker = %q: the command ran more or less than once", marker)
	}
}

func TestReportResourceNamesTheRunBeforeTheCallReturns(t *testing.T) {
	r := newRig(t)
	var reported []string
	r.env.ReportResource = func(id string) { reported = append(reported, id) }
	_, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "true"})
	if res := decode[ExecCommandResult](t, raw); len(reported) != 1 || reported[0] != res.CommandRunID {
		t.Errorf("reported %v, want [%s]", reported, res.CommandRunID)
	}
	_, raw = r.mustCall(t, "process_exec", map[string]any{"command_line": "sleep 30"})
	if res := decode[ProcessExecResult](t, raw); len(reported) != 2 || reported[1] != res.ProcessRunID {
		t.Errorf("reported %v, want the process run %s second", reported, res.ProcessRunID)
	}
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
