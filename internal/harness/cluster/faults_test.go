package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
	"github.com/fenixrt/fenix/workflows"
)

// servedCall is one assignment run while a host is partitioned.
type servedCall struct {
	id      string
	took    time.Duration
	status  string
	errText string
}

// TestPartitionDuringLongExecCommand cuts the network link of the host
// running a long exec_command. The assignment fails as worker_lost, naming
// the command run, within the tool's heartbeat timeout; the other host
// serves new assignments all along; once the link is back, the cut host has
// killed its orphaned command and command_run_read (routed to it) reports
// the run as worker_lost.
func TestPartitionDuringLongExecCommand(t *testing.T) {
	requireCluster(t)
	ensureHosts(t)
	ctx := context.Background()
	id := "partition-exec"
	// Its output differs from its command line, which a read also shows.
	command := `echo $$ > partition.pid; echo "begun $((6*7))"; sleep 300; echo "ended $((6*7))"`
	start(t, workflows.ExecuteAssignmentWorkflow, id, assignment(id, execCall("call-long", command, 600), "exec_command"))

	// Running, with a heartbeat recorded a few seconds in; the heartbeat
	// names the command run, whose ID names the host.
	var runID string
	require.Eventually(t, func() bool {
		desc, err := tc.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return false
		}
		for _, pa := range desc.RawResponse.GetPendingActivities() {
			if pa.GetActivityType().GetName() != "ExecuteTool" || pa.GetLastHeartbeatTime() == nil ||
				pa.GetLastHeartbeatTime().AsTime().Sub(pa.GetLastStartedTime().AsTime()) < 3*time.Second {
				continue
			}
			var hb activities.ToolHeartbeat
			if details := pa.GetHeartbeatDetails().GetPayloads(); len(details) > 0 && jsonUnmarshal(details[0].GetData(), &hb) == nil {
				runID = hb.ResourceID
			}
			return runID != ""
		}
		return false
	}, time.Minute, 100*time.Millisecond, "ExecuteTool heartbeats with its command run")
	owner, other := hostOfResource(runID), (*Host)(nil)
	require.NotNil(t, owner, "command_run_id %q names a host", runID)
	other = otherHost(owner)
	pgid := readPID(t, markerPath(owner, "partition.pid"))
	require.Positive(t, procs.LiveGroupSize(pgid), "the command runs on host %s", owner.Name)
	heartbeatTimeout := toolHeartbeatTimeout(history(t, id))
	require.Positive(t, heartbeatTimeout)

	cutAt := time.Now()
	require.NoError(t, owner.Cut(ctx))
	t.Logf("t=0: cut host %s's link while it runs %s (heartbeat timeout %s)", owner.Name, runID, heartbeatTimeout)

	// When does the cut host kill its command? (It cannot be told: it
	// sees its heartbeats fail.)
	var killedAfter time.Duration
	killWatch := make(chan struct{})
	go func() {
		defer close(killWatch)
		for time.Since(cutAt) < 3*time.Minute {
			if procs.LiveGroupSize(pgid) == 0 {
				killedAfter = time.Since(cutAt)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// The other host serves new assignments, one after another, until the
	// long one has failed and a few more after that.
	failed := make(chan struct{})
	var served []servedCall
	var servedMu sync.Mutex
	serving := make(chan struct{})
	go func() {
		defer close(serving)
		after := 0
		for i := 0; after < 3 && time.Since(cutAt) < 3*time.Minute; i++ {
			select {
			case <-failed:
				after++
			default:
			}
			callID := fmt.Sprintf("during-%d", i)
			a := assignment(callID, calculatorCall(callID, fmt.Sprintf("%d + 1", i)), "calculator")
			if i%2 == 1 {
				a = assignment(callID, execCall(callID, fmt.Sprintf("echo during %d", i), 30), "exec_command")
			}
			began := time.Now()
			res, err := startAndWait(workflows.ExecuteAssignmentWorkflow, "partition-"+callID, a, 90*time.Second)
			call := servedCall{id: "partition-" + callID, took: time.Since(began), status: res.Status}
			if err != nil {
				call.errText = err.Error()
			} else if res.Error != nil {
				call.errText = res.Error.ErrorType + ": " + res.Error.LastErrorSummary
			}
			servedMu.Lock()
			served = append(served, call)
			servedMu.Unlock()
		}
	}()

	res := result(t, id, heartbeatTimeout+2*time.Minute)
	failedAfter := time.Since(cutAt)
	close(failed)
	require.Equal(t, contract.StatusFailed, res.Status, "the assignment fails explicitly; %+v", res.Output)
	require.NotNil(t, res.Error)
	assert.Equal(t, fenixerr.TypeWorkerLost, res.Error.ErrorType, "%+v", res.Error)
	assert.Equal(t, "worker_lost", res.Error.Code)
	assert.Contains(t, strings.ToLower(res.Error.LastErrorSummary), "heartbeat timeout")
	assert.Contains(t, res.Error.LastErrorSummary, runID, "the failure names the command run")
	// The server times the attempt out one heartbeat timeout after its last
	// heartbeat, which was before the cut; allow for timer granularity.
	assert.LessOrEqual(t, failedAfter, heartbeatTimeout+5*time.Second, "failure within the heartbeat timeout of the cut")

	<-serving
	restoreAt := time.Now()
	require.NoError(t, owner.Restore(ctx))
	t.Logf("t=%s: assignment failed (%s: %.120s)", failedAfter.Round(time.Millisecond), res.Error.ErrorType, res.Error.LastErrorSummary)
	t.Logf("t=%s: link restored", restoreAt.Sub(cutAt).Round(time.Millisecond))

	// Reconnected, the cut host learns from its next heartbeat that the
	// server has given the attempt up, and kills the orphaned command.
	<-killWatch
	require.Positive(t, killedAfter, "host %s left its orphaned command (group %d) running", owner.Name, pgid)
	t.Logf("t=%s: host %s killed its orphaned command", killedAfter.Round(time.Millisecond), owner.Name)

	// command_run_read, started on the shared queue, is routed to the
	// owner's queue and reports the run as lost. (The record is written
	// right after the kill; a read in between sees it still running.)
	var read contract.Result
	var readID string
	for i := 0; i < 20; i++ {
		readID = fmt.Sprintf("partition-read-%d", i)
		var err error
		read, err = startAndWait(workflows.ExecuteAssignmentWorkflow, readID, assignment(readID, map[string]any{
			"call_id": "call-read", "tool_name": "command_run_read", "arguments": map[string]any{"command_run_id": runID},
		}, "command_run_read"), 4*time.Minute)
		require.NoError(t, err)
		require.Equal(t, contract.StatusCompleted, read.Status, "%+v", read.Error)
		if !strings.Contains(read.Output.Content, "is still running") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	recovered, readAt := time.Since(restoreAt), time.Since(cutAt)
	assert.Equal(t, owner, toolRanOn(history(t, readID)), "the read ran on host %s", owner.Name)
	assert.Contains(t, read.Output.Content, "was killed", read.Output.Content)
	assert.Contains(t, read.Output.Content, "The worker running it was lost", read.Output.Content)
	assert.Contains(t, read.Output.Content, "begun 42", "the output up to the kill is kept")
	assert.NotContains(t, read.Output.Content, "ended 42")
	t.Logf("t=%s: command_run_read on host %s reports the run lost, %s after the restore: %.200q", readAt.Round(time.Millisecond), owner.Name, recovered.Round(time.Millisecond), read.Output.Content)

	// The other host kept serving: every assignment completed, and only
	// the other host could have run them.
	var took []time.Duration
	for _, c := range served {
		took = append(took, c.took)
		if !assert.Equal(t, contract.StatusCompleted, c.status, "%s during the partition: %s", c.id, c.errText) {
			continue
		}
		if ran := toolRanOn(history(t, c.id)); ran != nil {
			assert.Equal(t, other, ran, "%s ran on host %s during the partition", c.id, ran.Name)
		}
	}
	require.NotEmpty(t, served)
	t.Logf("host %s served %d new assignments during the partition: %s", other.Name, len(served), percentiles(took))
	t.Logf("PARTITION TIMELINE: cut at t=0; WorkerLostError at t=%s (heartbeat timeout %s); link restored at t=%s; orphan killed on host %s at t=%s; command_run_read reports worker_lost at t=%s",
		failedAfter.Round(time.Millisecond), heartbeatTimeout, restoreAt.Sub(cutAt).Round(time.Millisecond), owner.Name, killedAfter.Round(time.Millisecond), readAt.Round(time.Millisecond))
}

// TestServerRestartWithAssignmentsInFlight restarts the Temporal server
// process (SIGTERM, then a new process on the same PostgreSQL databases)
// while 20 exec_command assignments run on the two hosts. None is lost,
// none ran its command twice, and the audit log has exactly one TOOL_CALL
// row per call.
func TestServerRestartWithAssignmentsInFlight(t *testing.T) {
	requireCluster(t)
	ensureHosts(t)
	ctx := context.Background()
	const n = 20
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("restart-%02d", i)
		command := fmt.Sprintf("echo $$ >> restart-%02d.ran; sleep %d; echo done-%02d", i, 4+i%3, i)
		start(t, workflows.ExecuteAssignmentWorkflow, ids[i], assignment(ids[i], execCall(fmt.Sprintf("call-%02d", i), command, 120), "exec_command"))
	}
	require.Eventually(t, func() bool {
		for _, id := range ids {
			desc, err := tc.DescribeWorkflow(ctx, id, "")
			if err != nil {
				return false
			}
			running := false
			for _, pa := range desc.RawResponse.GetPendingActivities() {
				running = running || (pa.GetActivityType().GetName() == "ExecuteTool" && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED)
			}
			if !running {
				return false
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond, "all %d exec_command calls are running", n)

	began := time.Now()
	outage, err := cl.RestartServer(ctx, false)
	require.NoError(t, err, "restart the temporal-server process")
	t.Logf("temporal-server restarted (SIGTERM, new process on the same databases): frontend back %s after the stop began", outage.Round(time.Millisecond))

	store := auditStore(t)
	perHost := map[string]int{}
	var latest time.Duration
	for i, id := range ids {
		res, err := tryResult(id, 3*time.Minute)
		if !assert.NoError(t, err, "%s has no result after the restart", id) {
			continue
		}
		latest = max(latest, time.Since(began))
		if !assert.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", id, res.Error) {
			continue
		}
		assert.Contains(t, res.Output.Content, fmt.Sprintf("done-%02d", i))
		events := history(t, id)
		assert.Equal(t, []int32{1}, toolAttempts(events), "%s: one ExecuteTool attempt", id)
		ranOn := toolRanOn(events)
		perHost[hostName(ranOn)]++
		if ranOn != nil {
			ran := strings.Count(readFile(t, markerPath(ranOn, fmt.Sprintf("restart-%02d.ran", i))), "\n")
			assert.Equal(t, 1, ran, "%s: the command ran once", id)
		}
	}
	var toolCalls int
	for _, id := range ids {
		toolCalls += auditCount(t, store, id, audit.EventToolCall)
	}
	assert.Equal(t, n, toolCalls, "audit TOOL_CALL rows equal tool calls")
	t.Logf("SERVER RESTART: %d assignments in flight, all completed within %s of the stop; %d TOOL_CALL audit rows for %d calls; ran on hosts %v", n, latest.Round(time.Millisecond), toolCalls, n, perHost)
}

// startAndWait starts a workflow on the shared queue as Fenix's starters
// do (with its start search attributes) and waits for it.
func startAndWait(workflowType, id string, input any, limit time.Duration) (contract.Result, error) {
	raw, err := jsonMarshal(input)
	if err != nil {
		return contract.Result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	run, err := workflows.StartWorkflowJSON(ctx, tc, startOptions(id), workflowType, raw)
	if err != nil {
		return contract.Result{}, err
	}
	var res contract.Result
	err = run.Get(ctx, &res)
	return res, err
}
