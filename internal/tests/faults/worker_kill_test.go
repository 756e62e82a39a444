package faults

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
)

// TestWorkerSIGKILLDuringExecCommandFailsExplicitlyAndNeverReruns kills
// the worker process while exec_command runs a long command, restarts it
// on the same data directory (same host ID, same pinned queue), and checks
// that the assignment fails explicitly as worker_lost once exec_command's
// heartbeat timeout passes, that the command ran exactly once, and that
// the trace and the audit log are whole. It also measures whether the
// killed command's process group outlived the worker.
func TestWorkerSIGKILLDuringExecCommandFailsExplicitlyAndNeverReruns(t *testing.T) {
	t.Parallel()
	c := server.Client()
	spec := workerSpec{addr: server.HostPort, queue: newTaskQueue(), dataDir: t.TempDir(), workspace: t.TempDir()}
	first := startWorkerProc(t, spec)
	hostID := readHostID(t, spec.dataDir)
	require.Contains(t, first.logs.String(), "host_queue=fenix-host-"+hostID)

	// The shell records its PID (= its process group ID), then runs a
	// child that would outlive a 30 s heartbeat timeout by far, so a
	// surviving group is visible after the failure.
	command := `echo started >> marker; echo $$ > shell.pid; sleep 300; echo done >> marker`
	id := "faults-sigkill-exec"
	_, err := startAssignment(context.Background(), c, spec.queue, id, assignment("sigkill-exec", map[string]any{
		"call_id": "call-exec", "tool_name": "exec_command",
		"arguments": map[string]any{"command_line": command, "timeout_seconds": 600},
	}, "exec_command"))
	require.NoError(t, err)

	waitForRunningActivity(t, c, id, "ExecuteTool", 60*time.Second)
	// Kill mid-run, not at the start: once the server has recorded a
	// heartbeat a few seconds into the command.
	require.Eventually(t, func() bool {
		desc, err := c.DescribeWorkflow(context.Background(), id, "")
		if err != nil {
			return false
		}
		for _, pa := range desc.RawResponse.GetPendingActivities() {
			if pa.GetActivityType().GetName() == "ExecuteTool" && pa.GetLastHeartbeatTime() != nil &&
				pa.GetLastHeartbeatTime().AsTime().Sub(pa.GetLastStartedTime().AsTime()) >= 3*time.Second {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "ExecuteTool heartbeats while the command runs")
	pgid := readPID(t, filepath.Join(spec.workspace, "shell.pid"))
	require.Eventually(t, func() bool { return procs.LiveGroupSize(pgid) >= 2 }, 10*time.Second, 20*time.Millisecond,
		"the command's shell %d and its sleep are running in group %d", pgid, pgid)
	t.Cleanup(func() { killGroup(t, pgid) })
	membersBefore := groupMembers(pgid)

	killedAt := time.Now()
	first.kill(t)
	// Pdeathsig takes the group leader (the shell) down with the worker.
	leaderGone := assert.Eventually(t, func() bool { return !alive(pgid) }, 5*time.Second, 10*time.Millisecond,
		"the command's shell %d dies with the worker (Pdeathsig)", pgid)

	second := startWorkerProc(t, spec)
	restartedAfter := time.Since(killedAt)
	assert.Equal(t, hostID, readHostID(t, spec.dataDir), "the restarted worker keeps its host ID")
	assert.Contains(t, second.logs.String(), "host_queue=fenix-host-"+hostID, "the restarted worker polls the same pinned queue")

	res := awaitResult(t, c, id, 2*time.Minute)
	killToFailure := time.Since(killedAt)

	// An explicit failure, classified as a lost worker, at ExecuteTool.
	require.Equal(t, contract.StatusFailed, res.Status, "the assignment fails explicitly; result: %+v", res)
	require.NotNil(t, res.Error)
	assert.Equal(t, fenixerr.TypeWorkerLost, res.Error.ErrorType, "%+v", res.Error)
	assert.Equal(t, "worker_lost", res.Error.Code)
	assert.Equal(t, "runtime", res.Error.Classification)
	assert.Equal(t, "execute_tool", res.Error.Stage)
	assert.False(t, res.Error.Retryable)
	assert.Contains(t, strings.ToLower(res.Error.LastErrorSummary), "heartbeat timeout", "the heartbeat timeout detected the lost worker")
	require.NotEmpty(t, res.Reports)
	assert.Equal(t, contract.ReportFail, res.Reports[len(res.Reports)-1].Kind)

	// Ran once: one marker line, one ExecuteTool attempt in history.
	marker, err := os.ReadFile(filepath.Join(spec.workspace, "marker"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(marker), "started"), "the command ran exactly once; marker:\n%s", marker)
	assert.NotContains(t, string(marker), "done", "the killed command did not finish")
	events := history(t, c, id)
	scheduled, started := activityAttempts(events)
	assert.Equal(t, 1, scheduled["ExecuteTool"])
	assert.Equal(t, []int32{1}, started["ExecuteTool"], "exactly one ExecuteTool attempt")
	var timeoutType enumspb.TimeoutType
	var toolStarted, toolTimedOut time.Time
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if toolStarted.IsZero() && scheduledType(events, e.GetActivityTaskStartedEventAttributes().GetScheduledEventId()) == "ExecuteTool" {
				toolStarted = e.GetEventTime().AsTime()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			timeoutType = e.GetActivityTaskTimedOutEventAttributes().GetFailure().GetTimeoutFailureInfo().GetTimeoutType()
			toolTimedOut = e.GetEventTime().AsTime()
		}
	}
	assert.Equal(t, enumspb.TIMEOUT_TYPE_HEARTBEAT, timeoutType, "ExecuteTool ended by its heartbeat timeout")

	// The trace is whole: every stage up to the failure, then the
	// failure path and the session end. The worker has only the built-in
	// hooks, so the lean review (fenix-shape 5, first) leaves out the
	// SessionStart, PreToolUse and Error stages no hook acts on; the audit
	// log's PostToolUseFailure and SessionStop stay.
	hooks := traceHooks(res.Trace)
	assertSubsequence(t, hooks, []string{
		"review_tool_call", "prepare_turn", "compact_context",
		"post_tool_use_failure", "handle_error", "session_stop",
	})
	assert.Equal(t, "session_stop", hooks[len(hooks)-1], "the trace ends with session_stop: %v", hooks)
	assert.NotContains(t, hooks, "execute_tool", "no execute_tool entry: the call never returned")
	t.Logf("trace: %v", hooks)

	// The audit log: the failed call and the session end, no TOOL_CALL.
	store, err := audit.OpenSQLite(context.Background(), filepath.Join(spec.dataDir, "audit.db"))
	require.NoError(t, err)
	defer store.Close()
	count := func(event string) int {
		n, err := store.Count(context.Background(), audit.Filter{SessionID: id, Event: event})
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 0, count(audit.EventToolCall))
	assert.Equal(t, 1, count(audit.EventToolFailure))
	assert.Equal(t, 1, count(audit.EventSessionStop))

	// What the host knows of the killed run: the registry keeps running
	// runs in memory only, so the restarted worker has no record of it.
	records, _ := filepath.Glob(filepath.Join(spec.dataDir, "command-runs", "*.json"))

	// Was the killed command's process group left running?
	survivors := groupMembers(pgid)
	t.Logf("kill to explicit worker_lost failure: %s (kill %s after ExecuteTool started, its heartbeat timeout recorded %s after the start; worker restarted %s after the kill)",
		killToFailure.Round(time.Millisecond), killedAt.Sub(toolStarted).Round(time.Millisecond), toolTimedOut.Sub(toolStarted).Round(time.Millisecond), restartedAfter.Round(time.Millisecond))
	t.Logf("command group %d before the kill: %v; leader gone after the kill: %v; live members %s after the kill: %v",
		pgid, membersBefore, leaderGone, killToFailure.Round(time.Second), survivors)
	t.Logf("command-run records on the host after the restart: %d (%v)", len(records), records)
	// The restarted worker reaps what the dead one left: the command's group
	// is gone, its run is on record, and the failure names it.
	assert.Empty(t, survivors, "process(es) of the killed command's group %d still running %s after the worker was killed", pgid, killToFailure.Round(time.Second))
	assert.Len(t, records, 1, "the host keeps a record of the run it lost")
	require.NotEmpty(t, res.Error.ToolInvocations)
	resourceID := res.Error.ToolInvocations[0].ResourceID
	assert.True(t, strings.HasPrefix(resourceID, "cmd_"), "the failed invocation names its command run, got %q", resourceID)
	assert.Contains(t, res.Error.LastErrorSummary, "outcome of exec_command is unknown")
	t.Logf("failure payload: %s %s; tool invocation resource_id %q", res.Error.Code, res.Error.LastErrorSummary, resourceID)

	// The restarted worker keeps serving, then shuts down cleanly.
	after := awaitAfterStart(t, c, spec.queue, "faults-sigkill-after", assignment("sigkill-after", calculatorCall("call-after", "20 + 22"), "calculator"))
	require.Equal(t, contract.StatusCompleted, after.Status, "%+v", after.Error)
	assert.Equal(t, "The calculator returned 42.", after.Output.Content)
	second.stop(t)
}

func scheduledType(events []*historypb.HistoryEvent, scheduledID int64) string {
	for _, e := range events {
		if e.GetEventId() == scheduledID {
			return e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		}
	}
	return ""
}

// assertSubsequence checks that want appears in got in order.
func assertSubsequence(t *testing.T, got, want []string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	assert.Equal(t, len(want), i, "trace %v lacks %v (in order) from %q on", got, want, want[min(i, len(want)-1)])
}

func readHostID(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "host-id"))
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, 10*time.Second, 20*time.Millisecond, "%s holds a PID", file)
	return pid
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// groupMembers lists the live processes of process group pgid as
// "pid:command".
func groupMembers(pgid int) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out = append(out, strconv.Itoa(pid)+":"+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return out
}

// killGroup kills whatever is left of a command's process group.
func killGroup(t *testing.T, pgid int) {
	if len(groupMembers(pgid)) == 0 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for len(groupMembers(pgid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := groupMembers(pgid); len(left) > 0 {
		t.Errorf("process group %d still has %v after SIGKILL", pgid, left)
	}
}
