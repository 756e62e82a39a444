package faults

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// TestServerRestartMidRunCompletesEveryAssignment stops a file-backed dev
// server while assignments are in flight — a tool call running on the
// worker, a call parked on a permission decision, a permission timer that
// expires while the server is down, and a batch of quick calls — starts it
// again on the same address and database file, and checks that the same
// client and worker reconnect by themselves and every assignment ends with
// its expected result.
func TestServerRestartMidRunCompletesEveryAssignment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	port, err := devserver.FreePort()
	require.NoError(t, err)
	opts := devserver.Options{
		CLIPath:    cliPath,
		DBFilename: filepath.Join(t.TempDir(), "temporal.db"),
		HostPort:   fmt.Sprintf("127.0.0.1:%d", port),
	}
	srv, err := devserver.Start(ctx, opts)
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = srv.Stop()
		}
	})

	// One client, dialed once, for the worker and the test: it must ride
	// out the restart on its own.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: restartLogLevel()}))
	c, err := client.Dial(client.Options{HostPort: opts.HostPort, Namespace: "default", Logger: worker.NewSDKLogger(logger),
		DataConverter: codec.NewDataConverter(nil)})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	registry, err := testtools.WithBuiltins(slowTool())
	require.NoError(t, err)
	queue := newTaskQueue()
	w, err := worker.New(c, worker.Config{
		TaskQueue:            queue,
		DataDir:              t.TempDir(),
		DefaultWorkspaceRoot: t.TempDir(),
		Logger:               logger,
		Tools:                registry,
		Hooks:                []hooks.AgentHook{testtools.PolicyHook{}},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	expected := map[string]expectation{}
	start := func(id string, a map[string]any, want expectation) {
		t.Helper()
		_, err := startAssignment(ctx, c, queue, id, a)
		require.NoError(t, err)
		expected[id] = want
	}

	// Finished before the restart: must still be readable after it.
	start("restart-before", assignment("before", calculatorCall("call-before", "2 + 3"), "calculator"),
		expectation{status: contract.StatusCompleted, content: "The calculator returned 5."})
	before := awaitResult(t, c, "restart-before", time.Minute)
	require.Equal(t, contract.StatusCompleted, before.Status, "%+v", before.Error)

	// Long tools running on the worker across the restart: exec_command
	// and fault_sleep, both with a 30 s heartbeat timeout. (testtools'
	// test_sleep has a 2 s one, about as long as the restart itself, so it
	// would fail as worker_lost or not depending on timing.)
	start("restart-exec", assignment("exec", map[string]any{
		"call_id": "call-exec", "tool_name": "exec_command",
		"arguments": map[string]any{"command_line": "sleep 6; echo slept", "timeout_seconds": 60},
	}, "exec_command"), expectation{status: contract.StatusCompleted, content: "slept"})
	start("restart-sleep", assignment("sleep", map[string]any{
		"call_id": "call-sleep", "tool_name": "fault_sleep", "arguments": map[string]any{"seconds": 6},
	}, "fault_sleep"), expectation{status: contract.StatusCompleted, content: "Slept 6 seconds."})
	// Parked on a permission decision, answered after the restart.
	start("restart-permission", assignment("permission", calculatorCall("ask-restart", "6 * 7"), "calculator"),
		expectation{status: contract.StatusCompleted, content: "The calculator returned 42."})
	// Parked with a short approval timeout: its durable timer fires
	// around the outage (while the server is down or right after) and
	// denies the call.
	timed := assignment("permission-timeout", calculatorCall("ask-timeout", "1 + 1"), "calculator")
	timed["approval"] = map[string]any{"timeout_seconds": 3}
	start("restart-permission-timeout", timed, expectation{status: contract.StatusFailed, errType: fenixerr.TypePermissionDenied})
	// Quick calls in flight when the server goes away.
	const quick = 10
	for i := range quick {
		start(fmt.Sprintf("restart-quick-%d", i), assignment(fmt.Sprintf("quick-%d", i), calculatorCall(fmt.Sprintf("call-quick-%d", i), fmt.Sprintf("%d * 3", i)), "calculator"),
			expectation{status: contract.StatusCompleted, content: fmt.Sprintf("The calculator returned %d.", i*3)})
	}

	waitForRunningActivity(t, c, "restart-exec", "ExecuteTool", 30*time.Second)
	waitForRunningActivity(t, c, "restart-sleep", "ExecuteTool", 30*time.Second)
	for _, id := range []string{"restart-permission", "restart-permission-timeout"} {
		require.Eventually(t, func() bool {
			v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryPendingPermissions)
			var pending []workflows.PendingPermission
			if err == nil && v.Get(&pending) == nil && len(pending) == 1 {
				return true
			}
			// Under load the 3 s approval timer may fire before this loop
			// gets here: the denied run is then already closed, which the
			// expectation checks like any other.
			return id == "restart-permission-timeout" && closed(ctx, c, id)
		}, 30*time.Second, 50*time.Millisecond, "%s waits for a permission decision", id)
	}
	openAtStop := countOpen(t, c, expected)

	stopAt := time.Now()
	require.NoError(t, srv.Stop(), "stop the dev server")
	stopped = true
	down := time.Since(stopAt)
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.Error(t, err, "the server is down")

	if d, err := time.ParseDuration(os.Getenv("FENIX_FAULT_SERVER_DOWNTIME")); err == nil && d > 0 {
		// A longer outage, on request (FENIX_FAULT_SERVER_DOWNTIME=15s).
		// Known to fail today: past ~10 s the SDK gives up reporting
		// activity results finished during the outage, so exec_command and
		// fault_sleep end as worker_lost after their heartbeat timeout and
		// other stages wait for their start-to-close timeout (5 min for
		// hook stages). Use FENIX_FAULT_RESULT_LIMIT to wait longer.
		t.Logf("keeping the server down for %s (FENIX_FAULT_SERVER_DOWNTIME)", d)
		time.Sleep(d)
	}
	restartAt := time.Now()
	srv, err = devserver.Start(ctx, opts)
	require.NoError(t, err, "restart the dev server on %s with %s", opts.HostPort, opts.DBFilename)
	stopped = false
	upAgain := time.Since(restartAt)

	// The client reconnects by itself.
	require.Eventually(t, func() bool {
		c2, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := c.CheckHealth(c2, &client.CheckHealthRequest{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the client reconnects to the restarted server")
	reconnected := time.Since(restartAt)

	// The permission decision, sent through the same client. The worker's
	// pollers may still be backing off, so the update gets time; a retry
	// reuses the update ID, so it cannot be applied twice.
	decideAt := time.Now()
	require.Eventually(t, func() bool {
		c2, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		handle, err := c.UpdateWorkflow(c2, client.UpdateWorkflowOptions{
			WorkflowID: "restart-permission", UpdateID: "decide-after-restart", UpdateName: workflows.UpdateDecidePermission,
			WaitForStage: client.WorkflowUpdateStageCompleted,
			Args:         []any{workflows.PermissionDecision{CallID: "ask-restart", Decision: workflows.DecisionAllow, Reason: "after the restart"}},
		})
		if err == nil {
			err = handle.Get(c2, nil)
		}
		if err != nil {
			t.Logf("decide_permission not done yet (%s after the restart): %v", time.Since(restartAt).Round(time.Millisecond), err)
		}
		return err == nil
	}, 90*time.Second, 500*time.Millisecond, "decide_permission reaches the workflow after the restart")
	decided := time.Since(decideAt)

	// Work started after the restart runs too: the worker's pollers are back.
	start("restart-after", assignment("after", calculatorCall("call-after", "7 * 6"), "calculator"),
		expectation{status: contract.StatusCompleted, content: "The calculator returned 42."})

	for id, want := range expected {
		res, ok := tryResult(c, id, resultLimit())
		if !ok {
			t.Errorf("%s: no result within %s after the restart; %s; audit rows: %d TOOL_CALL", id, resultLimit(), describeStuck(c, id),
				auditCount(t, w.Audit(), id, audit.EventToolCall))
			continue
		}
		t.Logf("%s: %s %s", id, res.Status, outcome(res))
		if !assert.Equal(t, want.status, res.Status, "%s: %+v", id, res.Error) {
			continue
		}
		if want.status == contract.StatusCompleted {
			require.NotNil(t, res.Output, id)
			assert.Contains(t, res.Output.Content, want.content, id)
			assert.Equal(t, 1, auditCount(t, w.Audit(), id, audit.EventToolCall), "%s: one TOOL_CALL row", id)
		} else {
			assert.Equal(t, want.errType, res.Error.ErrorType, "%s: %+v", id, res.Error)
		}
		entries := traceHooks(res.Trace)
		assert.Equal(t, "session_stop", entries[len(entries)-1], "%s: the trace ends with session_stop: %v", id, entries)
		events := history(t, c, id)
		_, started := activityAttempts(events)
		switch {
		case id == "restart-exec" || id == "restart-sleep":
			// Not idempotent: one attempt, whatever happened.
			assert.Equal(t, []int32{1}, started["ExecuteTool"], "%s: the tool ran once", id)
		case want.status == contract.StatusCompleted:
			// The calculator is a Local tool: it runs as a local activity,
			// and a workflow task lost in the restart may run it again, but
			// its result is recorded once.
			assert.Empty(t, started["ExecuteTool"], "%s: no regular ExecuteTool", id)
			assert.Equal(t, 1, countLocalStages(t, events, "ExecuteTool"), "%s: one recorded ExecuteTool", id)
		}
	}
	verdict := "all ended as expected"
	if t.Failed() {
		verdict = "NOT all ended as expected"
	}
	t.Logf("server restart: %d of %d assignments open at the stop; stop took %s, restart %s, client healthy again %s after the restart began, decide_permission round trip %s; %d assignments, %s",
		openAtStop, len(expected)-1, down.Round(time.Millisecond), upAgain.Round(time.Millisecond), reconnected.Round(time.Millisecond),
		decided.Round(time.Millisecond), len(expected), verdict)
}

// slowTool is a long, non-idempotent tool with exec_command's heartbeat
// timeout; ExecuteTool heartbeats for it.
func slowTool() tools.Definition {
	return tools.Define(tools.Spec{Name: "fault_sleep", Timeout: 5 * time.Minute, Heartbeat: 30 * time.Second},
		func(ctx context.Context, _ *tools.Env, a testtools.SleepArgs) (testtools.SleepResult, error) {
			select {
			case <-ctx.Done():
				return testtools.SleepResult{}, ctx.Err()
			case <-time.After(time.Duration(a.Seconds) * time.Second):
				return testtools.SleepResult{Slept: a.Seconds}, nil
			}
		}, func(_ testtools.SleepArgs, r testtools.SleepResult) tools.Projection {
			return tools.Projection{Content: fmt.Sprintf("Slept %d seconds.", r.Slept)}
		})
}

func tryResult(c client.Client, id string, limit time.Duration) (contract.Result, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var res contract.Result
	err := c.GetWorkflow(ctx, id, "").Get(ctx, &res)
	return res, err == nil
}

// describeStuck summarizes a workflow that did not finish: its status,
// pending activities and workflow task, and its history.
func describeStuck(c client.Client, id string) string {
	ctx := context.Background()
	var b strings.Builder
	described, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return "describe: " + err.Error()
	}
	desc := described.RawResponse
	fmt.Fprintf(&b, "status %s", desc.GetWorkflowExecutionInfo().GetStatus())
	for _, pa := range desc.GetPendingActivities() {
		fmt.Fprintf(&b, "; pending activity %s state %s attempt %d last failure %v", pa.GetActivityType().GetName(), pa.GetState(), pa.GetAttempt(), pa.GetLastFailure().GetMessage())
	}
	if wt := desc.GetPendingWorkflowTask(); wt != nil {
		fmt.Fprintf(&b, "; pending workflow task state %s attempt %d scheduled %s", wt.GetState(), wt.GetAttempt(), wt.GetScheduledTime().AsTime().Format(time.RFC3339Nano))
	}
	b.WriteString("; history:")
	iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			fmt.Fprintf(&b, " (history: %v)", err)
			break
		}
		fmt.Fprintf(&b, "\n  %d %s %s", e.GetEventId(), e.GetEventTime().AsTime().Format("15:04:05.000"), e.GetEventType())
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			fmt.Fprintf(&b, " %s", a.GetActivityType().GetName())
		}
	}
	return b.String()
}

func outcome(res contract.Result) string {
	switch {
	case res.Error != nil:
		return res.Error.ErrorType + ": " + res.Error.LastErrorSummary
	case res.Output != nil:
		return fmt.Sprintf("%q", res.Output.Content)
	}
	return ""
}

// expectation is an assignment's expected outcome.
type expectation struct {
	status  string
	content string // substring of the output, for completed runs
	errType string // for failed runs
}

// countOpen counts the workflows in expected that are still running.
func countOpen(t *testing.T, c client.Client, expected map[string]expectation) int {
	t.Helper()
	open := 0
	for id := range expected {
		desc, err := c.DescribeWorkflow(context.Background(), id, "")
		require.NoError(t, err)
		if desc.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			open++
		}
	}
	return open
}

func auditCount(t *testing.T, store audit.Store, sessionID, event string) int {
	t.Helper()
	n, err := store.Count(context.Background(), audit.Filter{SessionID: sessionID, Event: event})
	require.NoError(t, err)
	return n
}

func restartLogLevel() slog.Level {
	if os.Getenv("FENIX_FAULT_VERBOSE") != "" {
		return slog.LevelWarn
	}
	return slog.LevelError
}

func resultLimit() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FENIX_FAULT_RESULT_LIMIT")); err == nil {
		return d
	}
	return 2 * time.Minute
}

// closed reports whether the workflow's latest run has closed.
func closed(ctx context.Context, c client.Client, id string) bool {
	desc, err := c.DescribeWorkflow(ctx, id, "")
	return err == nil && desc.RawResponse.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}
