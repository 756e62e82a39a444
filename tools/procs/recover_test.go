//go:build linux

package procs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/fenixrt/fenix/internal/harness/logbuf"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake worker: with fakeWorkerEnv set it
// starts one command through the real registry code path, prints the
// command's process group and blocks until it is killed.
const (
	fakeWorkerEnv  = "FENIX_PROCS_FAKE_WORKER"
	fakeDataEnv    = "FENIX_PROCS_FAKE_DATA"
	fakeWorkEnv    = "FENIX_PROCS_FAKE_WORK"
	fakeRunID      = "cmd_test-host_00000000000000aa"
	fakeServiceID  = "proc_test-host_00000000000000bb"
	fakeCommand    = `sleep 300 & echo $! > child.pid; wait`
	fakeWorkerWait = 10 * time.Minute
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeWorkerEnv); mode != "" {
		if err := fakeWorker(mode, os.Getenv(fakeDataEnv), os.Getenv(fakeWorkEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "fake worker:", err)
			os.Exit(2)
		}
		return
	}
	os.Exit(m.Run())
}

func fakeWorker(mode, dataDir, workDir string) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var pgid int
	switch mode {
	case "run":
		runs, err := OpenRuns(RunsConfig{Dir: dataDir, Logger: quiet})
		if err != nil {
			return err
		}
		p, err := Start(Spec{
			CommandLine: fakeCommand, Dir: workDir, Env: testEnv(),
			BeforeRun: func(p *Process) error {
				return runs.Begin(CommandRun{ID: fakeRunID, CommandLine: fakeCommand, PID: p.PID(), StartedAt: p.StartedAt()}, p)
			},
		})
		if err != nil {
			return err
		}
		pgid = p.PID()
	case "service":
		m, err := OpenServices(ServicesConfig{LogDir: dataDir, Logger: quiet})
		if err != nil {
			return err
		}
		info, err := m.Start(ServiceSpec{ID: fakeServiceID, CommandLine: fakeCommand, Dir: workDir, Env: testEnv()})
		if err != nil {
			return err
		}
		pgid = info.PID
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	fmt.Printf("pgid %d\n", pgid)
	time.Sleep(fakeWorkerWait)
	return nil
}

// crashFakeWorker runs a fake worker that starts fakeCommand, SIGKILLs it
// once the command's shell and its sleep run, and returns the command's
// process group and the sleep's PID, which outlives the worker.
func crashFakeWorker(t *testing.T, mode, dataDir string) (pgid, sleepPID int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	workDir := t.TempDir()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeWorkerEnv+"="+mode, fakeDataEnv+"="+dataDir, fakeWorkEnv+"="+workDir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if _, err := fmt.Sscanf(s, "pgid %d", &pgid); err != nil {
			t.Fatalf("fake worker said %q: %v", s, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the fake worker did not start its command")
	}
	t.Cleanup(func() {
		if LiveGroupSize(pgid) > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	waitFor(t, 10*time.Second, "the command's sleep records its PID", func() bool {
		raw, err := os.ReadFile(filepath.Join(workDir, "child.pid"))
		if err != nil {
			return false
		}
		sleepPID, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil && LiveGroupSize(pgid) >= 2
	})

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The situation the fix is for: Pdeathsig took the shell down with
	// the worker, but the sleep it started runs on in the group.
	waitFor(t, 5*time.Second, "the shell dies with the worker (Pdeathsig)", func() bool { return !alive(pgid) })
	if !alive(sleepPID) {
		t.Fatalf("the command's sleep %d died with the worker; the test cannot show a leftover", sleepPID)
	}
	return pgid, sleepPID
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid exists and has not exited.
func alive(pid int) bool {
	st, err := readProcStat(pid)
	return err == nil && !st.exited()
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer = logbuf.Buffer

func captureLog() (*slog.Logger, *syncBuffer) {
	var buf syncBuffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func TestRestartReapsTheCommandGroupOfAKilledWorker(t *testing.T) {
	dataDir := t.TempDir()
	pgid, sleepPID := crashFakeWorker(t, "run", dataDir)

	// What the dead worker left on disk: the run, as running, with its
	// group's identity.
	raw, err := os.ReadFile(filepath.Join(dataDir, fakeRunID+".json"))
	if err != nil {
		t.Fatalf("the running record was not persisted: %v", err)
	}
	var left CommandRun
	if err := json.Unmarshal(raw, &left); err != nil {
		t.Fatal(err)
	}
	if left.Status != RunRunning || left.Group == nil || left.Group.PGID != pgid || left.Group.LeaderStartTicks == 0 || left.Group.BootID != currentBootID() {
		t.Fatalf("running record = %s", raw)
	}

	logger, logs := captureLog()
	runs, err := OpenRuns(RunsConfig{Dir: dataDir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if n := LiveGroupSize(pgid); n != 0 || alive(sleepPID) {
		t.Fatalf("after the restart group %d still has %d live processes (sleep %d alive: %v)", pgid, n, sleepPID, alive(sleepPID))
	}
	rec, err := runs.Get(fakeRunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != RunKilled || rec.Reason != ReasonWorkerLost || rec.ExitStatus != nil || rec.FinishedAt == nil {
		t.Fatalf("record after the restart: status %q reason %q exit %v finished %v", rec.Status, rec.Reason, rec.ExitStatus, rec.FinishedAt)
	}
	if rec.CommandLine != fakeCommand || rec.PID != pgid {
		t.Errorf("record lost its details: %+v", rec)
	}
	if got := runs.List(10); len(got) != 1 || got[0].Status != RunKilled {
		t.Errorf("List = %+v", got)
	}
	if l := logs.String(); !strings.Contains(l, "killed a process group left running by a lost worker") ||
		!strings.Contains(l, "command_run_id="+fakeRunID) || !strings.Contains(l, strconv.Itoa(sleepPID)) {
		t.Errorf("log does not report the reaped group:\n%s", l)
	}

	// A second restart finds nothing more to do.
	logger2, logs2 := captureLog()
	if _, err := OpenRuns(RunsConfig{Dir: dataDir, Logger: logger2}); err != nil {
		t.Fatal(err)
	}
	if l := logs2.String(); l != "" {
		t.Errorf("second restart logged:\n%s", l)
	}
}

func TestRestartReapsTheServiceGroupOfAKilledWorker(t *testing.T) {
	dataDir := t.TempDir()
	pgid, sleepPID := crashFakeWorker(t, "service", dataDir)

	logger, logs := captureLog()
	m, err := OpenServices(ServicesConfig{LogDir: dataDir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := LiveGroupSize(pgid); n != 0 || alive(sleepPID) {
		t.Fatalf("after the restart group %d still has %d live processes", pgid, n)
	}
	info, err := m.Info(fakeServiceID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != StatusStopped || info.Reason != ReasonWorkerLost || info.ExitStatus != nil || info.EndedAt == nil || info.PID != pgid {
		t.Fatalf("service after the restart = %+v", info)
	}
	if list := m.List(); len(list) != 1 || list[0].ID != fakeServiceID {
		t.Errorf("List = %+v", list)
	}
	if stopped, err := m.Stop(fakeServiceID); err != nil || stopped.Status != StatusStopped {
		t.Errorf("Stop of the dead service = %+v, %v", stopped, err)
	}
	if exited, err := m.WaitExit(t.Context(), fakeServiceID, time.Second); err != nil || !exited {
		t.Errorf("WaitExit = %v, %v", exited, err)
	}
	if _, _, _, err := m.Output(fakeServiceID, 100); err != nil {
		t.Errorf("Output: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "killed a process group left running by a lost worker") || !strings.Contains(l, "process_run_id="+fakeServiceID) {
		t.Errorf("log does not report the reaped group:\n%s", l)
	}
	var rec serviceRecord
	raw, err := os.ReadFile(filepath.Join(dataDir, fakeServiceID+".json"))
	if err == nil {
		err = json.Unmarshal(raw, &rec)
	}
	if err != nil || rec.Status != StatusStopped || rec.Reason != ReasonWorkerLost {
		t.Errorf("record on disk = %s (%v)", raw, err)
	}
}

// startUnrelatedGroup starts a sleep leading its own process group, as
// something that happens to hold a recorded group ID would.
func startUnrelatedGroup(t *testing.T) procStat {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	st, err := readProcStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// deadWorker is the PID of a process that has exited and been reaped.
func deadWorker(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// plantRunning writes a running record as a dead worker would have.
func plantRunning(t *testing.T, dir, id string, g GroupIdentity) {
	t.Helper()
	raw, err := json.Marshal(CommandRun{ID: id, CommandLine: "sleep 300", PID: g.PGID, Status: RunRunning, StartedAt: time.Now(), Group: &g})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(dir, id+".json", raw); err != nil {
		t.Fatal(err)
	}
}

func TestRestartLeavesProcessGroupsItCannotVerifyAlone(t *testing.T) {
	self, err := selfStat()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// adjust turns the sleep's true identity into the record's.
		adjust      func(g *GroupIdentity)
		wantKilled  bool
		wantOutcome string
		wantStatus  string
	}{
		// The control: with its true identity the group is reaped.
		{"matching record", func(g *GroupIdentity) {}, true, LeftoverKilled, RunKilled},
		{"group older than the record", func(g *GroupIdentity) { g.LeaderStartTicks += 100 }, false, LeftoverReused, RunKilled},
		{"leader started at another time", func(g *GroupIdentity) { g.LeaderStartTicks-- }, false, LeftoverReused, RunKilled},
		{"another session", func(g *GroupIdentity) { g.SessionID++ }, false, LeftoverReused, RunKilled},
		{"another boot", func(g *GroupIdentity) { g.BootID = "00000000-0000-0000-0000-000000000000" }, false, LeftoverRebooted, RunKilled},
		{"no start time", func(g *GroupIdentity) { g.LeaderStartTicks = 0 }, false, LeftoverUnverifiable, RunKilled},
		// A second registry on the directory of a live worker.
		{"recording worker alive", func(g *GroupIdentity) { g.WorkerPID, g.WorkerStartTicks = self.pid, self.startTicks }, false, LeftoverOwnerAlive, RunRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := startUnrelatedGroup(t)
			g := GroupIdentity{
				PGID: st.pid, LeaderStartTicks: st.startTicks, SessionID: st.session, BootID: currentBootID(),
				WorkerPID: deadWorker(t), WorkerStartTicks: 1,
			}
			tt.adjust(&g)
			dir := t.TempDir()
			const id = "cmd_test-host_00000000000000cc"
			plantRunning(t, dir, id, g)

			logger, logs := captureLog()
			runs, err := OpenRuns(RunsConfig{Dir: dir, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantKilled == alive(st.pid) {
				t.Fatalf("sleep %d alive = %v, want %v", st.pid, alive(st.pid), !tt.wantKilled)
			}
			if !strings.Contains(logs.String(), "outcome="+tt.wantOutcome) {
				t.Errorf("log lacks outcome=%s:\n%s", tt.wantOutcome, logs)
			}
			rec, err := runs.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != tt.wantStatus {
				t.Errorf("status = %q, want %q", rec.Status, tt.wantStatus)
			}
			if tt.wantStatus == RunKilled && (rec.Reason != ReasonWorkerLost || rec.ExitStatus != nil) {
				t.Errorf("reason %q exit %v, want worker_lost and no exit status", rec.Reason, rec.ExitStatus)
			}
		})
	}
}

func TestGroupIsOursNeverMeansTheWorkerItself(t *testing.T) {
	g := &GroupIdentity{PGID: 500, LeaderStartTicks: 10, SessionID: 7}
	member := procStat{pid: 501, pgrp: 500, session: 7, startTicks: 11}
	if !groupIsOurs(g, []procStat{member}, 900, 900) {
		t.Fatal("a young member in the recorded session is ours")
	}
	if groupIsOurs(g, []procStat{member}, 900, 500) {
		t.Error("the worker's own group was taken for a leftover")
	}
	if groupIsOurs(g, []procStat{member}, 501, 900) {
		t.Error("a group containing the worker was taken for a leftover")
	}
}

func TestBeginPersistsTheRunBeforeTheCommandRuns(t *testing.T) {
	dir := t.TempDir()
	runs, err := OpenRuns(RunsConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const id = "cmd_test-host_00000000000000dd"
	// The command prints its own record: it exists before the command runs.
	p, exit, _ := run(t, Spec{
		CommandLine: "cat " + filepath.Join(dir, id+".json"),
		BeforeRun: func(p *Process) error {
			return runs.Begin(CommandRun{ID: id, CommandLine: "cat", PID: p.PID(), StartedAt: p.StartedAt()}, p)
		},
	}, 10*time.Second)
	if exit.Code != 0 {
		t.Fatalf("exit = %+v", exit)
	}
	out, _ := p.Stdout().Last(0)
	var seen CommandRun
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("the command saw no record: %q", out)
	}
	if seen.Status != RunRunning || seen.Group == nil || seen.Group.PGID != p.PID() || seen.Group.LeaderStartTicks == 0 ||
		seen.Group.WorkerPID != os.Getpid() {
		t.Fatalf("record seen by the command = %s", out)
	}
	if got, err := runs.Get(id); err != nil || got.Status != RunRunning {
		t.Fatalf("Get while live = %+v, %v", got, err)
	}
	if list := runs.List(10); len(list) != 1 {
		t.Errorf("a live run is listed once, got %+v", list)
	}
	if _, err := runs.Finish(CommandRun{ID: id, CommandLine: "cat", PID: p.PID(), StartedAt: p.StartedAt()}, p); err != nil {
		t.Fatal(err)
	}
	got, err := runs.Get(id)
	if err != nil || got.Status != RunExited || got.ExitStatus == nil || *got.ExitStatus != 0 {
		t.Fatalf("Get after Finish = %+v, %v", got, err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(matches) != 0 {
		t.Errorf("temp files left: %v", matches)
	}
}

func TestBeforeRunErrorMeansTheCommandNeverRuns(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(Spec{
		CommandLine: "touch ran",
		Dir:         dir,
		Env:         testEnv(),
		BeforeRun:   func(*Process) error { return fmt.Errorf("disk full") },
	})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Start error = %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the command ran although BeforeRun failed")
	}
}

func TestStopAllPersistsFinalRecords(t *testing.T) {
	dir := t.TempDir()
	runs, err := OpenRuns(RunsConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const id = "cmd_test-host_00000000000000ee"
	p, err := Start(Spec{
		CommandLine: "echo up; sleep 300", Dir: t.TempDir(), Env: testEnv(),
		BeforeRun: func(p *Process) error {
			return runs.Begin(CommandRun{ID: id, CommandLine: "sleep", PID: p.PID(), StartedAt: p.StartedAt()}, p)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "output arrives", func() bool { return p.Stdout().Total() > 0 })
	runs.StopAll(ReasonShutdown, time.Second)
	// A new registry (the next worker) sees a finished run, not a lost one.
	logger, logs := captureLog()
	runs2, err := OpenRuns(RunsConfig{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runs2.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != RunKilled || rec.Reason != ReasonShutdown || string(rec.Stdout.Data) != "up\n" {
		t.Fatalf("record after shutdown = %+v (stdout %q)", rec, rec.Stdout.Data)
	}
	if logs.String() != "" {
		t.Errorf("restart after a clean shutdown logged:\n%s", logs)
	}
}

// A stream that kept nothing is not written (two creates and renames
// saved on a quiet command); the finished run still reads back with empty
// output, and a kept stream whose file went missing is still an error.
func TestFinishWritesOnlyTheOutputThatWasKept(t *testing.T) {
	dir := t.TempDir()
	runs, err := OpenRuns(RunsConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	finish := func(id, command string) CommandRun {
		t.Helper()
		p, _, _ := run(t, Spec{CommandLine: command, BeforeRun: func(p *Process) error {
			return runs.Begin(CommandRun{ID: id, CommandLine: command, PID: p.PID(), StartedAt: p.StartedAt()}, p)
		}}, 10*time.Second)
		if _, err := runs.Finish(CommandRun{ID: id, CommandLine: command, PID: p.PID(), StartedAt: p.StartedAt()}, p); err != nil {
			t.Fatal(err)
		}
		rec, err := runs.Get(id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		return rec
	}
	exists := func(id, ext string) bool {
		_, err := os.Stat(filepath.Join(dir, id+ext))
		return err == nil
	}

	const quiet, chatty = "cmd_test-host_00000000000000a1", "cmd_test-host_00000000000000a2"
	rec := finish(quiet, "true")
	if len(rec.Stdout.Data) != 0 || len(rec.Stderr.Data) != 0 || rec.Status != RunExited {
		t.Fatalf("quiet run = %+v", rec)
	}
	if exists(quiet, ".stdout") || exists(quiet, ".stderr") {
		t.Error("a quiet run wrote output files")
	}
	rec = finish(chatty, "echo out")
	if string(rec.Stdout.Data) != "out\n" || !exists(chatty, ".stdout") || exists(chatty, ".stderr") {
		t.Fatalf("run with stdout only = %+v (stdout %q)", rec, rec.Stdout.Data)
	}

	if err := os.Remove(filepath.Join(dir, chatty+".stdout")); err != nil {
		t.Fatal(err)
	}
	reopened, err := OpenRuns(RunsConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reopened.Get(chatty); err == nil || !strings.Contains(err.Error(), "stdout is missing") {
		t.Errorf("Get with its kept stdout gone: %v, want it missing", err)
	}
	if rec, err := reopened.Get(quiet); err != nil || rec.Status != RunExited {
		t.Errorf("Get of the quiet run after a restart = %+v, %v", rec, err)
	}
}
