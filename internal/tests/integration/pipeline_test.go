package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/logbuf"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"

	"github.com/fenixrt/fenix/workflows"
)

func TestCalculatorAssignmentCompletes(t *testing.T) {
	w := startWorker(t)
	res, run := runAssignment(t, w.queue, assignment("calc", map[string]any{
		"call_id": "call-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"},
	}))

	require.Equal(t, contract.StatusCompleted, res.Status, "error: %+v", res.Error)
	assert.Equal(t, "The calculator returned 4.", res.Output.Content)
	assert.Equal(t, "conv-it", res.Output.ConversationID)
	assert.Equal(t, "turn-it", res.Output.TurnID)
	assert.Equal(t, []string{"started", "progress", "complete"}, reportKinds(res.Reports))

	events := history(t, run)
	size := 0
	for _, e := range events {
		b, _ := e.Marshal()
		size += len(b)
	}
	scheduled, _ := activityAttempts(events)
	// The worker has only the built-in hooks: the lean review (fenix-shape
	// 5) leaves out SessionStart and PreToolUse, which none acts on for
	// the calculator; the audit log keeps PostToolUse and SessionStop.
	// Nothing needs compacting, so PrepareTurn answers for CompactContext
	// (fenix-shape 7).
	assert.Equal(t, map[string]int{"RunLifecycleHooks": 1, "PrepareTurn": 1, "ReviewToolCall": 1,
		"ExecuteTool": 1, "ProjectToolResult": 1, "RunPostToolUseHooks": 1, "FinalizeOutput": 1}, scheduled)
	t.Logf("calculator assignment history: %d events, %d bytes", len(events), size)
}

func TestSearchAttributesFilterRuns(t *testing.T) {
	w := startWorker(t)
	a := assignment("searchable", map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "3 + 4"}})
	a["conversation_id"] = "conv-search-" + w.queue
	_, run := runAssignment(t, w.queue, a)
	query := fmt.Sprintf("ConversationId = '%s' AND ToolName = 'calculator' AND AssignmentStatus = 'completed'", a["conversation_id"])
	require.Eventually(t, func() bool {
		resp, err := server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetRunId() == run.GetRunID()
	}, 15*time.Second, 200*time.Millisecond, "the run is found by %s", query)
}

func TestDisallowedToolFailsOnceWithAuthorizationClass(t *testing.T) {
	w := startWorker(t)
	res, run := runAssignment(t, w.queue, assignment("denied", map[string]any{
		"tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"},
	}, "calculator"))

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolNotVisible, res.Error.ErrorType)
	assert.Equal(t, "authorization", res.Error.Classification)
	assert.Equal(t, "tool_not_allowed", res.Error.Code)
	assert.False(t, res.Error.Retryable)

	scheduled, started := activityAttempts(history(t, run))
	assert.Equal(t, 1, scheduled["ReviewToolCall"])
	assert.Equal(t, []int32{1}, started["ReviewToolCall"], "exactly one attempt")
	assert.Zero(t, scheduled["ExecuteTool"])
	assert.Equal(t, 1, scheduled["HandleError"])
}

func TestToolRuntimeErrorIsNotRetried(t *testing.T) {
	w := startWorker(t)
	res, run := runAssignment(t, w.queue, assignment("bad-expr", map[string]any{
		"tool_name": "calculator", "arguments": map[string]any{"expression": "1 / nope("},
	}))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, "execute_tool", res.Error.Stage)
	_, started := activityAttempts(history(t, run))
	assert.Equal(t, []int32{1}, started["ExecuteTool"])
}

func TestCancelSignalMidFlightEndsCanceled(t *testing.T) {
	w := startWorker(t, withTools(testtools.Sleep()))
	a := assignment("cancel", map[string]any{"tool_name": "test_sleep", "arguments": map[string]any{"seconds": 300}}, "test_sleep")
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, "it-cancel-"+t.Name(), a)
	ctx := context.Background()

	waitForRunningActivity(t, run, "ExecuteTool")

	sent := time.Now()
	require.NoError(t, server.Client().SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalCancel, workflows.CancelRequest{Reason: "operator stop"}))
	var res contract.Result
	require.NoError(t, run.Get(ctx, &res))
	elapsed := time.Since(sent)

	assert.Equal(t, contract.StatusCanceled, res.Status)
	assert.Equal(t, contract.FailureCanceled, res.Error.FailureKind)
	assert.Contains(t, res.Error.LastErrorSummary, "operator stop")
	assert.Equal(t, "execute_tool", res.Error.Stage)
	assert.Less(t, elapsed, 10*time.Second, "the running tool must be canceled through its heartbeat")

	var canceledEvent bool
	for _, e := range history(t, run) {
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED {
			canceledEvent = true
		}
	}
	assert.True(t, canceledEvent, "the in-flight ExecuteTool was canceled, not abandoned")
	t.Logf("cancel signal to workflow result: %s", elapsed)
}

func TestWorkerKeepsServingAfterMalformedAssignment(t *testing.T) {
	w := startWorker(t)
	bad := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, "it-bad-"+t.Name(), map[string]any{"attempt_no": "first"})
	var badRes contract.Result
	require.NoError(t, bad.Get(context.Background(), &badRes))
	assert.Equal(t, contract.StatusFailed, badRes.Status)
	assert.Equal(t, fenixerr.TypeInvalidAssignment, badRes.Error.ErrorType)
	assert.Contains(t, badRes.Error.LastErrorSummary, "attempt_no")

	res, _ := runAssignment(t, w.queue, assignment("after-bad", map[string]any{
		"tool_name": "calculator", "arguments": map[string]any{"expression": "6 * 7"},
	}))
	assert.Equal(t, "The calculator returned 42.", res.Output.Content)
}

func TestPrepareRoundOnDevServer(t *testing.T) {
	w := startWorker(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, "examples", "prepare_round.json"))
	require.NoError(t, err)
	var input map[string]any
	require.NoError(t, json.Unmarshal(raw, &input))
	run := startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, "it-prepare-"+t.Name(), input)
	var res contract.PreparedRound
	require.NoError(t, run.Get(context.Background(), &res))

	require.Equal(t, contract.StatusCompleted, res.Status, "error: %+v", res.Error)
	assert.True(t, res.Compacted)
	require.Len(t, res.Messages, 4)
	assert.Equal(t, "system", res.Messages[0].Role)
	assert.Contains(t, res.Messages[0].Content, "Conversation Summary:\nThe user is migrating billing")
	assert.Equal(t, "Earlier context compacted for gpt-5-mini.", res.Messages[1].Content)
	assert.Equal(t, "Write the rollout checklist.", res.Messages[3].Content)
}

func TestTemporalCLIExecutesExampleFiles(t *testing.T) {
	w := startWorker(t)
	cmd := exec.Command(cliPath, "workflow", "execute", "--address", server.HostPort,
		"--type", workflows.ExecuteAssignmentWorkflow, "--task-queue", w.queue,
		"--workflow-id", "it-cli-"+t.Name(), "--input-file", filepath.Join(repoRoot, "examples", "calculator.json"), "--output", "json")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "The calculator returned 4.")
	assert.Contains(t, string(out), `"status": "completed"`)
}

func TestStarterRunPrintsResultAndWebUILink(t *testing.T) {
	w := startWorker(t)
	out, code := runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "run", "-id", "it-starter-calc", "examples/calculator.json")
	assert.Equal(t, 0, code, out)
	assert.True(t, containsAll(out, "Status: completed", "The calculator returned 4.", server.UIURL+"/namespaces/default/workflows/it-starter-calc/"), out)

	out, code = runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "run", "-id", "it-starter-denied", "examples/denied_tool.json")
	assert.Equal(t, 1, code, out)
	assert.True(t, containsAll(out, "Status: failed", "ToolNotVisibleError", "authorization"), out)

	// An attempt runs once: the same start again names the run that ran.
	out, code = runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "run", "-id", "it-starter-calc", "examples/calculator.json")
	assert.Equal(t, 1, code, out)
	assert.True(t, containsAll(out, `workflow "it-starter-calc" exists already`, "starter result it-starter-calc", "attempt_no"), out)

	out, code = runBinary(t, "starter", nil, "trace", "it-starter-calc")
	assert.Equal(t, 0, code, out)
	assert.True(t, containsAll(out, "prepare_turn", "finalize_output"), out)

	out, code = runBinary(t, "starter", nil, "run", "examples/does-not-exist.json")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "no such file")

	out, code = runBinary(t, "starter", nil, "frobnicate")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, `unknown command "frobnicate"`)
}

func TestWorkerBinaryShutsDownCleanlyOnSIGTERM(t *testing.T) {
	queue := newTaskQueue(t)
	cmd := exec.Command(filepath.Join(binDir, "worker"), "-task-queue", queue, "-data-dir", t.TempDir(), "-log-format", "text", "-http-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
	var logs lockedBuffer
	cmd.Stdout = &logs
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "fenix worker started") }, 30*time.Second, 50*time.Millisecond)

	res, _ := runAssignment(t, queue, assignment("binary", map[string]any{
		"tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"},
	}))
	assert.Equal(t, "The calculator returned 2.", res.Output.Content)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "worker exits 0 on SIGTERM; logs:\n%s", logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("worker did not exit within 20s of SIGTERM; logs:\n%s", logs.String())
	}
	assert.Contains(t, logs.String(), "fenix worker stopped")
}

func reportKinds(reports []contract.Report) []string {
	out := make([]string, len(reports))
	for i, r := range reports {
		out[i] = r.Kind
	}
	return out
}

// A run started the way Fenix's starters start it (workflows.StartWorkflow,
// fenix-shape 11) carries its search attributes from the start: it is
// found as running while the command runs, yet upserts nothing but the
// version marker's attribute and its final status.
func TestStartAttributesFindTheRunWithoutItsUpsert(t *testing.T) {
	w := startWorker(t)
	a := assignment("start-attributes", map[string]any{"tool_name": "exec_command", "arguments": map[string]any{"command_line": "sleep 2"}}, "exec_command")
	a["conversation_id"] = "conv-start-attributes-" + w.queue
	raw, err := json.Marshal(a)
	require.NoError(t, err)
	ctx := context.Background()
	run, err := workflows.StartWorkflowJSON(ctx, server.Client(), client.StartWorkflowOptions{ID: "start-attributes-" + w.queue, TaskQueue: w.queue},
		workflows.ExecuteAssignmentWorkflow, raw)
	require.NoError(t, err)

	found := func(status string) func() bool {
		query := fmt.Sprintf("ConversationId = '%s' AND TurnId = 'turn-it' AND ToolName = 'exec_command' AND AssignmentStatus = '%s'", a["conversation_id"], status)
		return func() bool {
			resp, err := server.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
			return err == nil && len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetRunId() == run.GetRunID()
		}
	}
	require.Eventually(t, found("running"), 5*time.Second, 100*time.Millisecond, "the running call is found by its start attributes")
	var res contract.Result
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "error: %+v", res.Error)
	require.Eventually(t, found("completed"), 15*time.Second, 200*time.Millisecond, "the finished call is found with its final status")

	var upserted [][]string
	for _, e := range history(t, run) {
		if u := e.GetUpsertWorkflowSearchAttributesEventAttributes(); u != nil {
			var keys []string
			for k := range u.GetSearchAttributes().GetIndexedFields() {
				keys = append(keys, k)
			}
			upserted = append(upserted, keys)
		}
	}
	assert.Equal(t, [][]string{{"TemporalChangeVersion"}, {"AssignmentStatus"}}, upserted)
}

// An assignment started again after it ended (a kernel's retry after a
// lost answer) does not run its command again: StartWorkflow refuses to
// reuse the ID of a closed run, and the handle it returns is the first
// run's, whose result the second start gets.
func TestAnAssignmentStartedAgainAfterItEndedRunsOnce(t *testing.T) {
	w := startWorker(t)
	ctx := context.Background()
	a := contract.Assignment{LogicalWorkID: "once-" + w.queue, AttemptNo: 1, ConversationID: "conv-once", TurnID: "turn-1", WorkspaceRoot: w.workspace,
		AgentContext: contract.AgentContext{Profile: "main", AllowedToolNames: []string{"exec_command"}},
		ToolCall:     &contract.ToolCall{CallID: "call-once", ToolName: "exec_command", Arguments: map[string]any{"command_line": "echo ran >> runs.log"}}}
	id := workflows.AssignmentWorkflowID(a.LogicalWorkID, a.AttemptNo)
	var runIDs []string
	for range 2 {
		run, err := workflows.StartWorkflow(ctx, server.Client(), client.StartWorkflowOptions{ID: id, TaskQueue: w.queue}, workflows.ExecuteAssignmentWorkflow, a, a)
		require.NoError(t, err)
		var res contract.Result
		require.NoError(t, run.Get(ctx, &res))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		runIDs = append(runIDs, run.GetRunID())
	}
	assert.Equal(t, runIDs[0], runIDs[1], "the second start is the first run")
	log, err := os.ReadFile(filepath.Join(w.workspace, "runs.log"))
	require.NoError(t, err)
	assert.Equal(t, "ran\n", string(log), "the command ran once")
}

// StartWorkflow on a namespace without Fenix's search attributes starts
// the run without them instead of failing the start.
func TestStartWorkflowWithoutRegisteredAttributesStillStarts(t *testing.T) {
	ctx := context.Background()
	namespace := "no-fenix-attributes"
	_, err := server.Client().WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		require.NoError(t, err)
	}
	c, err := client.NewClientFromExisting(server.Client(), client.Options{Namespace: namespace})
	require.NoError(t, err)
	defer c.Close()
	a := contract.Assignment{LogicalWorkID: "unregistered", AttemptNo: 1, ConversationID: "conv-unregistered", TurnID: "turn-1"}
	var run client.WorkflowRun
	require.Eventually(t, func() bool { // a new namespace takes a moment to reach every service
		run, err = workflows.StartWorkflow(ctx, c, client.StartWorkflowOptions{ID: "start-unregistered-" + newTaskQueue(t), TaskQueue: "nobody-polls"},
			workflows.ExecuteAssignmentWorkflow, a, a)
		return err == nil || !strings.Contains(err.Error(), "not found")
	}, 15*time.Second, 200*time.Millisecond)
	require.NoError(t, err)
	d, err := c.DescribeWorkflow(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	assert.False(t, d.TypedSearchAttributes.ContainsKey(workflows.SearchAttrConversationID), "started without the unregistered attributes")
	require.NoError(t, c.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "test done"))
}

// Input that is no assignment still starts, without attributes, so the
// run (not the starter) reports what is wrong with it.
func TestStartWorkflowJSONStartsInputThatIsNoAssignment(t *testing.T) {
	w := startWorker(t)
	ctx := context.Background()
	run, err := workflows.StartWorkflowJSON(ctx, server.Client(), client.StartWorkflowOptions{ID: "start-json-malformed-" + w.queue, TaskQueue: w.queue},
		workflows.ExecuteAssignmentWorkflow, json.RawMessage(`{"attempt_no": "first"}`))
	require.NoError(t, err)
	var res contract.Result
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "attempt_no")
}

// A cancel sent while the worker running the command was dead ended the
// run failed with WorkerLostError at the stage's heartbeat timeout: the
// stage could not acknowledge the cancel, and nothing said one was asked
// (the chaos session's finding). The run now ends canceled, its error
// naming the cancel's reason and the command's unknown outcome.
func TestACancelOutlivesALostWorker(t *testing.T) {
	queue := newTaskQueue(t)
	ws, dataDir := t.TempDir(), t.TempDir()
	first := exec.Command(filepath.Join(binDir, "worker"), "-task-queue", queue, "-data-dir", dataDir, "-workspace-root", ws,
		"-http-addr", "off", "-log-format", "text")
	first.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
	var logs lockedBuffer
	first.Stdout, first.Stderr = &logs, &logs
	require.NoError(t, first.Start())
	t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
	a := assignment("lost", map[string]any{"call_id": "lost", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "sleep 60"}}, "exec_command")
	a["workspace_root"] = ws
	run := startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, "it-cancel-lost-"+t.Name(), a)
	waitForRunningActivity(t, run, "ExecuteTool")

	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	ctx := context.Background()
	require.NoError(t, server.Client().SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalCancel, workflows.CancelRequest{Reason: "operator stop"}))
	// The host's worker comes back, with its data directory.
	second, err := worker.New(server.Client(), worker.Config{TaskQueue: queue, DataDir: dataDir, DefaultWorkspaceRoot: ws,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.NoError(t, second.Start())
	t.Cleanup(second.Stop)

	var res contract.Result
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, contract.StatusCanceled, res.Status, "%+v", res.Error)
	require.NotNil(t, res.Error)
	assert.Equal(t, fenixerr.TypeCanceled, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "execution canceled: operator stop")
	assert.Contains(t, res.Error.LastErrorSummary, "the outcome of exec_command is unknown")
}

// A cancel that reaches a call whose tool runs to its end anyway (it
// finished before it heard the cancel) ends the run completed, with the
// output and the cancel named in it: it ended canceled with the
// invocation failed and no output, and a kernel could run again a side
// effect it was told never happened.
func TestACancelThatReachesTheCallAfterItsToolRanEndsWithTheOutput(t *testing.T) {
	w := startWorker(t, withTools(testtools.Sleep()))
	a := assignment("late-cancel", map[string]any{"tool_name": "test_sleep", "arguments": map[string]any{"seconds": 2, "finish_despite_cancel": true}}, "test_sleep")
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, "it-late-cancel-"+t.Name(), a)
	ctx := context.Background()
	waitForRunningActivity(t, run, "ExecuteTool")
	require.NoError(t, server.Client().SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalCancel, workflows.CancelRequest{Reason: "operator stop"}))
	var res contract.Result
	require.NoError(t, run.Get(ctx, &res))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "Slept 2 seconds")
	late, ok := res.Output.Data["cancel_too_late"].(map[string]any)
	require.True(t, ok, "the output names the cancel: %+v", res.Output.Data)
	assert.Equal(t, "operator stop", late["reason"])
	assert.Nil(t, findTraceEntry(res.Trace, "post_tool_use_failure").Fields, "no PostToolUseFailure for a call that completed")
}

// A typo in the starter's -task-queue left a run waiting forever for a
// worker, and the starter with it, with nothing said: the starter now
// warns when no worker has polled the queue it started on, and says
// nothing where one has.
func TestTheStarterWarnsOfAQueueNoWorkerPolls(t *testing.T) {
	w := startWorker(t)
	file := filepath.Join(t.TempDir(), "calc.json")
	raw, err := json.Marshal(assignment("queue-typo", map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, raw, 0o644))

	out, code := runBinary(t, "starter", nil, "run", "-task-queue", w.queue+"-typo", "-id", "it-queue-typo-"+t.Name(), "-no-wait", file)
	require.Zero(t, code, out)
	assert.Contains(t, out, "Warning: no worker has polled task queue")
	t.Cleanup(func() {
		_ = server.Client().TerminateWorkflow(context.Background(), "it-queue-typo-"+t.Name(), "", "test over")
	})

	out, code = runBinary(t, "starter", nil, "run", "-task-queue", w.queue, "-id", "it-queue-right-"+t.Name(), file)
	require.Zero(t, code, out)
	assert.NotContains(t, out, "Warning")
}

// Two workers given one FENIX_HOST_ID on two data directories each
// answered half the calls pinned to the host, and a command_run_read
// found its run on one of them only, with nothing said at start: a
// worker now warns when another one polled its host's queue lately.
func TestAWorkerWarnsOfAnotherOnItsHostQueue(t *testing.T) {
	other, err := client.Dial(client.Options{HostPort: server.HostPort, Identity: "4242@other-machine@"})
	require.NoError(t, err)
	defer other.Close()
	impostor := sdkworker.New(other, tools.HostQueue("shared-host"), sdkworker.Options{})
	impostor.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "Noop"})
	require.NoError(t, impostor.Start())
	defer impostor.Stop()
	require.Eventually(t, func() bool {
		resp, err := server.Client().DescribeTaskQueue(context.Background(), tools.HostQueue("shared-host"), enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		return err == nil && len(resp.GetPollers()) > 0
	}, 10*time.Second, 100*time.Millisecond)

	logs := &logbuf.Buffer{}
	startWorker(t, func(c *worker.Config) {
		c.HostID = "shared-host"
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	assert.Contains(t, logs.String(), "another worker polls this host's queue")
	assert.Contains(t, logs.String(), "4242@other-machine@")

	quiet := &logbuf.Buffer{}
	startWorker(t, func(c *worker.Config) {
		c.HostID = "alone-host"
		c.Logger = slog.New(slog.NewTextHandler(quiet, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	assert.NotContains(t, quiet.String(), "another worker polls this host's queue")
}

// An approval timeout out of range ends the run with a typed error
// before any tool runs, on the dev server as in the workflow's tests.
func TestAnApprovalTimeoutOutOfRangeEndsTheRun(t *testing.T) {
	w := startWorker(t)
	a := assignment("approval-range", map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}})
	a["approval"] = map[string]any{"timeout_seconds": 99999999999}
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "approval.timeout_seconds 99999999999")
}
