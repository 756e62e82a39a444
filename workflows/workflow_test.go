package workflows_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/agent/compaction"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// harness is a test workflow environment with the real activities
// registered and a record of which activities started.
type harness struct {
	env     *testsuite.TestWorkflowEnvironment
	acts    *activities.Activities
	mu      sync.Mutex
	started []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := suite.NewTestWorkflowEnvironment()
	// The SDK's default of 3 s of wall time per workflow failed a run
	// that writes 1 MiB through every stage under the race detector on a
	// loaded 2-core machine; a hung workflow still fails, later.
	env.SetTestTimeout(30 * time.Second)
	store, err := contextstore.NewFS(filepath.Join(t.TempDir(), "contexts"))
	require.NoError(t, err)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# Fenix\nDurable agents.\n"), 0o644))
	h := &harness{env: env, acts: &activities.Activities{
		Tools:                tools.Builtin(),
		Contexts:             store,
		Host:                 &tools.Host{ID: "test-host", Queue: "fenix-host-test-host"},
		DefaultWorkspaceRoot: ws,
		Estimator:            compaction.WordEstimator{},
		Hooks:                observedHooks(),
	}}
	env.RegisterWorkflowWithOptions(workflows.ExecuteAssignment, workflow.RegisterOptions{Name: workflows.ExecuteAssignmentWorkflow})
	env.RegisterWorkflowWithOptions(workflows.PrepareRound, workflow.RegisterOptions{Name: workflows.PrepareRoundWorkflow})
	env.RegisterWorkflowWithOptions(workflows.AgentTurn, workflow.RegisterOptions{Name: workflows.AgentTurnWorkflow})
	env.RegisterActivity(h.acts)
	record := func(info *activity.Info) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.started = append(h.started, info.ActivityType.Name)
	}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) { record(info) })
	// Pure stages run as local activities by default; count them too.
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []interface{}) { record(info) })
	return h
}

// startedActivities lists the stages in the order they started, with
// ReviewToolCall and a PrepareTurn started beside it (either may start
// first) as the one entry besideReview.
func (h *harness) startedActivities() []string {
	started := h.rawStarted()
	if len(started) >= 2 && slices.Contains(started[:2], "ReviewToolCall") && slices.Contains(started[:2], "PrepareTurn") {
		return append([]string{besideReview}, started[2:]...)
	}
	return started
}

// besideReview is ReviewToolCall and PrepareTurn in flight together
// (shapePrepareBesideReview).
const besideReview = "ReviewToolCall ∥ PrepareTurn"

func (h *harness) rawStarted() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.started...)
}

func (h *harness) count(name string) int {
	n := 0
	for _, s := range h.rawStarted() {
		if s == name {
			n++
		}
	}
	return n
}

func (h *harness) executeAssignment(t *testing.T, a map[string]any) contract.Result {
	t.Helper()
	raw, err := json.Marshal(a)
	require.NoError(t, err)
	h.env.ExecuteWorkflow(workflows.ExecuteAssignmentWorkflow, json.RawMessage(raw))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, h.env.GetWorkflowResult(&res))
	return res
}

func calculatorAssignment() map[string]any {
	return map[string]any{
		"logical_work_id": "work-1",
		"attempt_no":      1,
		"conversation_id": "conv-1",
		"turn_id":         "turn-1",
		"context_messages": []map[string]any{
			{"role": "user", "content": "What is 2 + 2?"},
		},
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator", "workspace_read"}},
		"model_context": map[string]any{"likely_model": "gpt-test"},
		"tool_call":     map[string]any{"call_id": "call-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"}},
	}
}

func traceHooks(trace []contract.TraceEntry) []string {
	out := make([]string, len(trace))
	for i, e := range trace {
		out[i] = e.Hook
	}
	return out
}

func kinds(reports []contract.Report) []string {
	out := make([]string, len(reports))
	for i, r := range reports {
		out[i] = r.Kind
		if r.Phase != "" {
			out[i] += ":" + r.Phase
		}
	}
	return out
}

func TestCalculatorRunsStagesInOrder(t *testing.T) {
	h := newHarness(t)
	res := h.executeAssignment(t, calculatorAssignment())

	assert.Equal(t, contract.StatusCompleted, res.Status)
	require.NotNil(t, res.Output)
	assert.Equal(t, "The calculator returned 4.", res.Output.Content)
	assert.Equal(t, "conv-1", res.Output.ConversationID)
	assert.Equal(t, "turn-1", res.Output.TurnID)
	assert.Equal(t, []string{"review_tool_call", "session_start", "prepare_turn", "compact_context", "pre_tool_use",
		"execute_tool", "project_tool_result", "post_tool_use", "finalize_output", "session_stop"}, traceHooks(res.Trace))
	// Nothing to compact: PrepareTurn answered for CompactContext
	// (shapeIdleCompaction), whose trace entry is still there. PrepareTurn
	// starts beside ReviewToolCall (shapePrepareBesideReview); its trace
	// entry is added once the review and SessionStart are recorded.
	assert.Equal(t, []string{besideReview, "RunLifecycleHooks", "RunPreToolUseHooks",
		"ExecuteTool", "ProjectToolResult", "RunPostToolUseHooks", "FinalizeOutput", "RunLifecycleHooks"}, h.startedActivities())
	require.NotNil(t, res.Metrics)
	assert.Equal(t, 1, res.Metrics.ToolCalls)
	assert.Equal(t, []string{"started", "progress:tool_reviewed", "complete"}, kinds(res.Reports))
	reviewed := res.Reports[1].ToolInvocation
	require.NotNil(t, reviewed)
	assert.Equal(t, "calculator", reviewed.ToolName)
	assert.Equal(t, "2 + 2", reviewed.RequestPayload.Arguments["expression"])
	assert.Nil(t, res.Error)
}

func TestWorkspaceReadProjectsFileContent(t *testing.T) {
	h := newHarness(t)
	a := calculatorAssignment()
	a["tool_call"] = map[string]any{"call_id": "call-r", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}
	res := h.executeAssignment(t, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "error: %+v", res.Error)
	assert.Equal(t, "Workspace file README.md:\n# Fenix\nDurable agents.\n", res.Output.Content)
}

func TestErrorsAreClassifiedAndNotRetried(t *testing.T) {
	tests := []struct {
		name           string
		toolCall       map[string]any
		wantType       string
		wantClass      string
		wantCode       string
		wantStage      string
		wantRetryCount map[string]int
	}{
		{
			name:      "tool not in allowed_tool_names",
			toolCall:  map[string]any{"tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}},
			wantType:  fenixerr.TypeToolNotVisible,
			wantClass: "authorization", wantCode: "tool_not_allowed", wantStage: "review_tool_call",
			wantRetryCount: map[string]int{"ReviewToolCall": 1, "ExecuteTool": 0},
		},
		{
			name:      "tool not in registry",
			toolCall:  map[string]any{"tool_name": "rm_rf", "arguments": map[string]any{}},
			wantType:  fenixerr.TypeUnsupportedTool,
			wantClass: "semantic", wantCode: "unsupported_tool", wantStage: "review_tool_call",
			wantRetryCount: map[string]int{"ReviewToolCall": 1, "ExecuteTool": 0},
		},
		{
			name:      "arguments fail the schema",
			toolCall:  map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expr": "1"}},
			wantType:  fenixerr.TypeValidation,
			wantClass: "semantic", wantCode: "validation_error", wantStage: "review_tool_call",
			wantRetryCount: map[string]int{"ReviewToolCall": 1},
		},
		{
			name:      "calculator cannot evaluate",
			toolCall:  map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "1 +"}},
			wantType:  fenixerr.TypeValidation,
			wantClass: "semantic", wantCode: "validation_error", wantStage: "execute_tool",
			wantRetryCount: map[string]int{"ExecuteTool": 1, "ProjectToolResult": 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			a := calculatorAssignment()
			a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator", "rm_rf"}}
			a["tool_call"] = tc.toolCall
			res := h.executeAssignment(t, a)

			require.Equal(t, contract.StatusFailed, res.Status)
			require.NotNil(t, res.Error)
			assert.Equal(t, tc.wantType, res.Error.ErrorType)
			assert.Equal(t, tc.wantClass, res.Error.Classification)
			assert.Equal(t, tc.wantCode, res.Error.Code)
			assert.Equal(t, tc.wantStage, res.Error.Stage)
			assert.Equal(t, contract.FailureRuntimeError, res.Error.FailureKind)
			assert.False(t, res.Error.Retryable)
			assert.Equal(t, "work-1", res.Error.LogicalWorkID)
			assert.Equal(t, 1, res.Error.AttemptNo)
			assert.NotEmpty(t, res.Error.LastErrorSummary)
			require.Len(t, res.Error.ToolInvocations, 1)
			assert.Equal(t, "failed", res.Error.ToolInvocations[0].Status)
			for activityName, want := range tc.wantRetryCount {
				assert.Equal(t, want, h.count(activityName), "attempts of %s", activityName)
			}
			assert.Equal(t, []string{"post_tool_use_failure", "handle_error", "error", "session_stop"}, traceHooks(res.Trace[len(res.Trace)-4:]),
				"a reviewed call that fails is reported to PostToolUseFailure hooks (the audit log), then HandleError, Error and SessionStop hooks")
			assert.Equal(t, contract.ReportFail, res.Reports[len(res.Reports)-1].Kind)
		})
	}
}

func TestMalformedAssignmentFailsWithTypedError(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantMsg string
	}{
		{"not an object", `["logical_work_id"]`, "not valid JSON for this contract"},
		{"wrong type", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","attempt_no":"one"}`, "attempt_no"},
		{"missing ids", `{"tool_call":{"tool_name":"calculator","arguments":{"expression":"1"}}}`, "logical_work_id, conversation_id, turn_id"},
		{"no tool call", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t"}`, "has no tool_call"},
		{"unknown mode", `{"logical_work_id":"w","conversation_id":"c","turn_id":"t","mode":"dance"}`, `mode "dance" is unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.env.ExecuteWorkflow(workflows.ExecuteAssignmentWorkflow, json.RawMessage(tc.input))
			require.NoError(t, h.env.GetWorkflowError())
			var res contract.Result
			require.NoError(t, h.env.GetWorkflowResult(&res))
			assert.Equal(t, contract.StatusFailed, res.Status)
			require.NotNil(t, res.Error)
			assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType)
			assert.Equal(t, "invalid_assignment", res.Error.Code)
			assert.Contains(t, res.Error.LastErrorSummary, tc.wantMsg)
			assert.Equal(t, []string{"RunLifecycleHooks", "HandleError", "RunLifecycleHooks", "RunLifecycleHooks"}, h.startedActivities(),
				"no stage but the hooks and HandleError runs")
			assert.Equal(t, []string{"session_start", "handle_error", "error", "session_stop"}, traceHooks(res.Trace))
		})
	}
}

func TestRuntimeErrorIsNotRetriedButTransientIs(t *testing.T) {
	h := newHarness(t)
	h.env.OnActivity("ExecuteTool", mock.Anything, mock.Anything).Return(
		activities.ExecuteToolResult{}, fenixerr.ToTemporal(fenixerr.Runtime("disk on fire")))
	transientOnce := 0
	h.env.OnActivity("PrepareTurn", mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.PrepareTurnInput) (activities.PrepareTurnResult, error) {
			transientOnce++
			if transientOnce == 1 {
				return activities.PrepareTurnResult{}, fenixerr.ToTemporal(fenixerr.Transient(assert.AnError))
			}
			return h.acts.PrepareTurn(ctx, in)
		})
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeRuntime, res.Error.ErrorType)
	assert.Equal(t, "runtime", res.Error.Classification)
	assert.Equal(t, "disk on fire", res.Error.LastErrorSummary)
	assert.Equal(t, 2, h.count("PrepareTurn"), "a transient error in an idempotent stage is retried")
	assert.Equal(t, 1, h.count("ExecuteTool"), "a runtime error is never retried")
}

func TestCancelSignalDuringStageEndsCanceled(t *testing.T) {
	h := newHarness(t)
	h.env.OnActivity("ReviewToolCall", mock.Anything, mock.Anything).After(time.Minute).Return(
		func(ctx context.Context, in activities.ReviewToolCallInput) (activities.ReviewToolCallResult, error) {
			return h.acts.ReviewToolCall(ctx, in)
		})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelRequest{Reason: "user pressed stop"})
	}, 30*time.Second)
	res := h.executeAssignment(t, calculatorAssignment())

	assert.Equal(t, contract.StatusCanceled, res.Status)
	require.NotNil(t, res.Error)
	assert.Equal(t, contract.FailureCanceled, res.Error.FailureKind)
	assert.Contains(t, res.Error.LastErrorSummary, "user pressed stop")
	assert.Equal(t, "review_tool_call", res.Error.Stage)
	assert.Equal(t, 0, h.count("ExecuteTool"))
	assert.Equal(t, contract.ReportFail, res.Reports[len(res.Reports)-1].Kind)
}

func TestCancelBetweenStagesStopsBeforeNextStage(t *testing.T) {
	h := newHarness(t)
	// A long tool (heartbeating, so the workflow waits for it to
	// acknowledge cancellation) that finishes anyway: the check between
	// stages must still stop the pipeline before ProjectToolResult.
	h.env.OnActivity("ReviewToolCall", mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ReviewToolCallInput) (activities.ReviewToolCallResult, error) {
			res, err := h.acts.ReviewToolCall(ctx, in)
			res.Tool.HeartbeatSeconds = 10
			return res, err
		})
	h.env.OnActivity("ExecuteTool", mock.Anything, mock.Anything).After(time.Minute).Return(
		activities.ExecuteToolResult{Raw: json.RawMessage(`{"expression":"2 + 2","value":4,"value_text":"4"}`)}, nil)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelRequest{Reason: "budget exhausted"})
	}, 30*time.Second)
	res := h.executeAssignment(t, calculatorAssignment())

	assert.Equal(t, contract.StatusCanceled, res.Status)
	assert.Equal(t, 0, h.count("ProjectToolResult"))
	assert.NotContains(t, traceHooks(res.Trace), "project_tool_result")
	assert.Contains(t, res.Error.LastErrorSummary, "budget exhausted")
}

func TestTemporalCancelEndsTheSameWay(t *testing.T) {
	h := newHarness(t)
	h.env.OnActivity("ExecuteTool", mock.Anything, mock.Anything).After(time.Minute).Return(activities.ExecuteToolResult{}, nil)
	h.env.RegisterDelayedCallback(func() { h.env.CancelWorkflow() }, 30*time.Second)
	res := h.executeAssignment(t, calculatorAssignment())

	assert.Equal(t, contract.StatusCanceled, res.Status)
	assert.Equal(t, contract.FailureCanceled, res.Error.FailureKind)
	assert.Contains(t, res.Error.LastErrorSummary, "Temporal cancellation requested")
	assert.Equal(t, 1, h.count("HandleError"), "cleanup runs in a disconnected context")
	assert.Equal(t, "session_stop", res.Trace[len(res.Trace)-1].Hook, "SessionStop hooks run after a Temporal cancel")
}

func TestQueriesServeTraceAndReportsWhileRunning(t *testing.T) {
	h := newHarness(t)
	h.env.OnActivity("ExecuteTool", mock.Anything, mock.Anything).After(time.Minute).Return(
		func(ctx context.Context, in activities.ExecuteToolInput) (activities.ExecuteToolResult, error) {
			return h.acts.ExecuteTool(ctx, in)
		})
	var midTrace []contract.TraceEntry
	var midReports []contract.Report
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QueryTrace)
		require.NoError(t, err)
		require.NoError(t, v.Get(&midTrace))
		v, err = h.env.QueryWorkflow(workflows.QueryReports)
		require.NoError(t, err)
		require.NoError(t, v.Get(&midReports))
	}, 30*time.Second)
	res := h.executeAssignment(t, calculatorAssignment())
	require.Equal(t, contract.StatusCompleted, res.Status)
	assert.Equal(t, []string{"review_tool_call", "session_start", "prepare_turn", "compact_context", "pre_tool_use"}, traceHooks(midTrace))
	assert.Equal(t, []string{"started", "progress:tool_reviewed"}, kinds(midReports))
}

func TestPrepareRoundReturnsSystemPromptAndTranscript(t *testing.T) {
	h := newHarness(t)
	a := calculatorAssignment()
	delete(a, "tool_call")
	a["prompts"] = map[string]any{"agent_prompt": "You are Fenix."}
	a["context_messages"] = []map[string]any{
		{"role": "user", "content": "one two three", "extra": "dropped"},
		{"role": "assistant", "content": "four five"},
	}
	raw, _ := json.Marshal(a)
	h.env.ExecuteWorkflow(workflows.PrepareRoundWorkflow, json.RawMessage(raw))
	require.NoError(t, h.env.GetWorkflowError())
	var res contract.PreparedRound
	require.NoError(t, h.env.GetWorkflowResult(&res))

	require.Equal(t, contract.StatusCompleted, res.Status)
	assert.Equal(t, []contract.Message{
		{Role: "system", Content: "Agent Prompt:\nYou are Fenix."},
		{Role: "user", Content: "one two three"},
		{Role: "assistant", Content: "four five"},
	}, res.Messages)
	assert.Equal(t, 3, res.EstimatedMessageCount)
	assert.Equal(t, 5+3+2+3*compaction.PerMessageOverhead, res.EstimatedTokenCount)
	assert.Equal(t, "gpt-test", res.LikelyModel)
	assert.False(t, res.Compacted)
	assert.Equal(t, []string{"session_start", "prepare_turn", "compact_context", "session_stop"}, traceHooks(res.Trace))
}

func TestPrepareRoundCompactsOverBudget(t *testing.T) {
	h := newHarness(t)
	a := calculatorAssignment()
	delete(a, "tool_call")
	a["prompts"] = map[string]any{"agent_prompt": "You are Fenix."}
	a["context_messages"] = []map[string]any{
		{"role": "user", "content": "first question with many words in it"},
		{"role": "assistant", "content": "first answer with many words in it"},
		{"role": "user", "content": "second question"},
		{"role": "assistant", "content": "second answer"},
	}
	a["budget_hints"] = map[string]any{"advisory_hints": map[string]any{"recommended_compaction_threshold": 10}}
	raw, _ := json.Marshal(a)
	h.env.ExecuteWorkflow(workflows.PrepareRoundWorkflow, json.RawMessage(raw))
	var res contract.PreparedRound
	require.NoError(t, h.env.GetWorkflowResult(&res))

	require.True(t, res.Compacted)
	assert.Equal(t, []contract.Message{
		{Role: "system", Content: "Agent Prompt:\nYou are Fenix."},
		{Role: "system", Content: "Earlier context compacted for gpt-test."},
		{Role: "user", Content: "second question"},
		{Role: "assistant", Content: "second answer"},
	}, res.Messages)
	assert.Equal(t, []string{"session_start", "prepare_turn", "pre_compact", "compact_context", "post_compact", "session_stop"}, traceHooks(res.Trace))
	assert.Equal(t, true, res.Trace[3].Get("compacted"))
}

func TestPureStagesRegularOptionSchedulesActivities(t *testing.T) {
	h := newHarness(t)
	var local []string
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []interface{}) {
		local = append(local, info.ActivityType.Name)
	})
	a := calculatorAssignment()
	a["execution"] = map[string]any{"pure_stages": "regular"}
	res := h.executeAssignment(t, a)
	require.Equal(t, contract.StatusCompleted, res.Status)
	assert.Empty(t, local, "no local activities when the assignment asks for regular stages")
	assert.Equal(t, 1, h.count("ReviewToolCall"))
}

// stagesBy records which activities ran as local and which as regular
// activities.
func stagesBy(h *harness) (local, regular *[]string) {
	local, regular = &[]string{}, &[]string{}
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []interface{}) {
		*local = append(*local, info.ActivityType.Name)
	})
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		*regular = append(*regular, info.ActivityType.Name)
	})
	return local, regular
}

func TestFastPathSchedulesOnlyWhatMustNotRerun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		call        map[string]any
		execution   map[string]any
		wantRegular []string
	}{
		{name: "calculator: one workflow task", call: map[string]any{"call_id": "c", "tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"}}},
		{name: "workspace_read is a Local tool", call: map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}},
		{name: "workspace_write has side effects", call: map[string]any{"call_id": "c", "tool_name": "workspace_write", "arguments": map[string]any{"path": "out.txt", "content": "x"}},
			wantRegular: []string{"ExecuteTool"}},
		{name: "stages regular: one activity per stage", call: map[string]any{"call_id": "c", "tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"}},
			execution: map[string]any{"stages": "regular"},
			wantRegular: []string{"ReviewToolCall", "RunLifecycleHooks", "PrepareTurn", "RunPreToolUseHooks",
				"ExecuteTool", "ProjectToolResult", "RunPostToolUseHooks", "FinalizeOutput", "RunLifecycleHooks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			local, regular := stagesBy(h)
			a := calculatorAssignment()
			a["tool_call"] = tc.call
			a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": []string{tc.call["tool_name"].(string)}}
			if tc.execution != nil {
				a["execution"] = tc.execution
			}
			res := h.executeAssignment(t, a)
			require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
			assert.Equal(t, tc.wantRegular, nilIfEmpty(*regular), "regular activities")
			if tc.execution == nil {
				assert.Subset(t, *local, []string{"RunLifecycleHooks", "PrepareTurn", "ReviewToolCall",
					"RunPreToolUseHooks", "ProjectToolResult", "RunPostToolUseHooks", "FinalizeOutput"}, "local stages")
			} else {
				assert.Empty(t, *local)
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// A cancel that reaches the call once its tool ran no longer discards
// it: the run ends completed with the output, which names the cancel.
// It ended canceled, the invocation failed, and a kernel could run again
// a side effect it was told never happened.
func TestACancelAfterTheToolRanCompletesTheCall(t *testing.T) {
	h := newHarness(t)
	h.env.OnActivity("ProjectToolResult", mock.Anything, mock.Anything).After(time.Minute).Return(
		func(ctx context.Context, in activities.ProjectToolResultInput) (activities.ProjectToolResultResult, error) {
			return h.acts.ProjectToolResult(ctx, in)
		})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelRequest{Reason: "user pressed stop"})
	}, 30*time.Second)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.NotNil(t, res.Output)
	assert.Contains(t, res.Output.Content, "4")
	late, ok := res.Output.Data["cancel_too_late"].(map[string]any)
	require.True(t, ok, "the output names the cancel: %+v", res.Output.Data)
	assert.Equal(t, "user pressed stop", late["reason"])
	assert.Equal(t, 1, h.count("ExecuteTool"))
	assert.NotContains(t, traceHooks(res.Trace), "post_tool_use_failure")
}

// An approval.timeout_seconds below 0 or over 30 days ends the run with
// InvalidAssignmentError naming it: -5 and an overflowing 2^63-1 became
// the default silently, and 99999999999 parked a call for millennia.
func TestAnApprovalTimeoutOutOfRangeIsRefused(t *testing.T) {
	for _, seconds := range []int64{-5, 99999999999, 9223372036854775807} {
		h := newHarness(t)
		a := calculatorAssignment()
		a["approval"] = map[string]any{"timeout_seconds": seconds}
		res := h.executeAssignment(t, a)
		require.Equal(t, contract.StatusFailed, res.Status, "timeout %d", seconds)
		assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType)
		assert.Contains(t, res.Error.LastErrorSummary, "approval.timeout_seconds")
		assert.Zero(t, h.count("ExecuteTool"))
	}
}
