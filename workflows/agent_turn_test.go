package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/workflows"
)

// agentHarness is a harness with the scripted model, the test policy hook
// and the test_sleep tool.
func agentHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	provider, err := scripted.Load("testdata/scripts/agent.json")
	require.NoError(t, err)
	h.acts.Model = &llm.Router{Scripted: provider}
	registry, err := testtools.WithBuiltins(testtools.Sleep())
	require.NoError(t, err)
	h.acts.Tools = registry
	r := hooks.NewRegistry()
	r.Add(builtin.NewCancellationHook())
	r.Add(testtools.PolicyHook{})
	h.acts.Hooks = r
	return h
}

func turnRequest(script string, maxSteps int, allowed ...string) map[string]any {
	if len(allowed) == 0 {
		allowed = []string{"calculator", "workspace_read", "spawn_subagent", "test_sleep"}
	}
	return map[string]any{
		"logical_work_id":  "turn-work",
		"attempt_no":       1,
		"conversation_id":  "conv-agent",
		"turn_id":          "turn-agent",
		"context_messages": []map[string]any{{"role": "user", "content": "Help me."}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": allowed},
		"model_context":    map[string]any{"likely_model": "scripted:" + script},
		"max_steps":        maxSteps,
	}
}

func (h *harness) runTurn(t *testing.T, req map[string]any) contract.Result {
	t.Helper()
	raw, err := json.Marshal(req)
	require.NoError(t, err)
	h.env.ExecuteWorkflow(workflows.AgentTurnWorkflow, json.RawMessage(raw))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, h.env.GetWorkflowResult(&res))
	return res
}

func countHooks(trace []contract.TraceEntry, hook string) int {
	n := 0
	for _, e := range trace {
		if e.Hook == hook {
			n++
		}
	}
	return n
}

func TestAgentTurnAnswersWithoutTools(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("answer", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Hello! Nothing to compute.", res.Output.Content)
	assert.Equal(t, 1, res.Metrics.Steps)
	assert.Equal(t, 15, res.Metrics.TotalTokens)
	assert.Equal(t, []string{"session_start", "user_prompt_submit", "prepare_turn", "compact_context", "call_model", "stop", "step_complete", "finalize_output", "session_stop"}, traceHooks(res.Trace))
}

func TestAgentTurnRunsAToolThenAnswers(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("main", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "2 + 2 is 4.", res.Output.Content)
	assert.Equal(t, 2, res.Metrics.Steps)
	assert.Equal(t, 1, res.Metrics.ToolCalls)
	assert.Equal(t, 38+56, res.Metrics.TotalTokens)
	assert.Equal(t, []string{"session_start", "user_prompt_submit",
		"prepare_turn", "compact_context", "call_model", "review_tool_call", "pre_tool_use", "execute_tool", "project_tool_result", "post_tool_use", "post_tool_batch", "step_complete",
		"prepare_turn", "compact_context", "call_model", "stop", "step_complete",
		"finalize_output", "session_stop"}, traceHooks(res.Trace))
	second := res.Trace[14]
	require.Equal(t, "call_model", second.Hook)
	assert.Equal(t, float64(3), second.Get("prompt_messages"), "the second call sees [user, assistant tool call, tool result]")
}

func TestAgentTurnRunsToolCallsInParallel(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("parallel", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, 2, h.count("ExecuteTool"))
	assert.Equal(t, 2, res.Metrics.ToolCalls)
	assert.Equal(t, 2, countHooks(res.Trace, "post_tool_use"))
	var reviewed []string
	for _, r := range res.Reports {
		if r.Phase == contract.PhaseToolReviewed {
			reviewed = append(reviewed, r.ToolInvocation.ToolName)
		}
	}
	assert.ElementsMatch(t, []string{"calculator", "workspace_read"}, reviewed)
}

func TestAgentTurnFeedsABlockedCallBackToTheModel(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("blocked", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "The policy refused the calculator.", res.Output.Content)
	assert.Zero(t, h.count("ExecuteTool"))
	failed := findTrace(res.Trace, "tool_failed")
	require.NotNil(t, failed)
	assert.Equal(t, fenixerr.TypeToolBlocked, failed.Get("error_type"))
	assert.Equal(t, 1, res.Metrics.ToolErrors)
}

func TestAgentTurnFeedsAnUnknownToolBackToTheModel(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("unknown_tool", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, fenixerr.TypeUnsupportedTool, findTrace(res.Trace, "tool_failed").Get("error_type"))
}

func TestAgentTurnWaitsForPermission(t *testing.T) {
	h := agentHarness(t)
	var allow *updateOutcome
	h.env.RegisterDelayedCallback(func() { allow = decide(t, h, "ask-1", workflows.DecisionAllow) }, time.Minute)
	res := h.runTurn(t, turnRequest("ask", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.True(t, allow.accepted)
	assert.Equal(t, "5 * 5 is 25.", res.Output.Content)
	assert.Equal(t, "decide_permission", findTrace(res.Trace, "permission_decision").Get("decided_by"))
}

func TestAgentTurnSpawnsASubagent(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("delegating", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "The researcher found 81.", res.Output.Content)
	assert.Equal(t, 1, countHooks(res.Trace, "subagent_start"))
	assert.Equal(t, 1, countHooks(res.Trace, "subagent_stop"))
	sub := findTrace(res.Trace, "subagent")
	require.NotNil(t, sub)
	assert.Equal(t, contract.StatusCompleted, sub.Get("status"))
	assert.Equal(t, float64(1), sub.Get("tool_calls"), "the child ran its own calculator call")
	assert.Equal(t, 2, h.count("CallModel")-2, "the child made two model calls of its own")
}

func TestAgentTurnRejectsASubagentWithMoreToolsThanItsParent(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("delegating", 5, "spawn_subagent", "workspace_read"))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	failed := findTrace(res.Trace, "tool_failed")
	require.NotNil(t, failed)
	assert.Equal(t, fenixerr.TypeToolNotVisible, failed.Get("error_type"), "calculator is not the parent's to give")
	assert.Zero(t, countHooks(res.Trace, "subagent_start"))
}

func TestAgentTurnStopsAtMaxSteps(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("endless", 2))

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeStepLimit, res.Error.ErrorType)
	assert.Equal(t, "max_steps_reached", res.Error.Code)
	assert.Equal(t, 2, h.count("CallModel"))
}

func TestAgentTurnCancelMidTool(t *testing.T) {
	h := agentHarness(t)
	// A long tool in workflow time (the test clock cannot skip a real sleep).
	h.env.OnActivity("ExecuteTool", mock.Anything, mock.Anything).After(time.Minute).Return(
		activities.ExecuteToolResult{Raw: json.RawMessage(`{"slept":300}`)}, nil)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelRequest{Reason: "stop the agent"})
	}, 30*time.Second)
	res := h.runTurn(t, turnRequest("slow", 5))

	require.Equal(t, contract.StatusCanceled, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "stop the agent")
	assert.Equal(t, 1, h.count("CallModel"), "no model call after the cancel")
	assert.Zero(t, h.count("ProjectToolResult"), "the stages after the canceled tool do not run")
	assert.Equal(t, "session_stop", res.Trace[len(res.Trace)-1].Hook)
}

func TestAgentTurnRetriesARateLimitedModelCall(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("flaky", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Recovered after a rate limit.", res.Output.Content)
	assert.Equal(t, 2, h.count("CallModel"), "429 is retried once")
}

func TestAgentTurnContinuesAsNewWhenHistoryPassesTheThreshold(t *testing.T) {
	h := agentHarness(t)
	req := turnRequest("long", 10)
	req["continue_as_new_after_events"] = 500
	h.env.SetCurrentHistoryLength(600)
	raw, _ := json.Marshal(req)
	h.env.ExecuteWorkflow(workflows.AgentTurnWorkflow, json.RawMessage(raw))
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
}

func TestAgentTurnContinuesAsNewCarryingItsState(t *testing.T) {
	h := agentHarness(t)
	h.env.SetContinueAsNewSuggested(true)
	raw, _ := json.Marshal(turnRequest("long", 10))
	h.env.ExecuteWorkflow(workflows.AgentTurnWorkflow, json.RawMessage(raw))

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	var next contract.AgentTurnRequest
	var nextRaw json.RawMessage
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &nextRaw))
	require.NoError(t, json.Unmarshal(nextRaw, &next))
	require.NotNil(t, next.Continuation)
	assert.Equal(t, 1, next.Continuation.Step)
	assert.Equal(t, 1, next.Continuation.Metrics.ToolCalls)
	assert.Equal(t, 3, next.Continuation.Transcript.Count, "user, assistant tool call, tool result")
	assert.Empty(t, next.ContextMessages, "the transcript travels as the continuation, not again as context")
	assert.Equal(t, "scripted:long", next.Model)

	// The next run resumes at step 2 and finishes.
	h2 := agentHarness(t)
	raw, _ = json.Marshal(next)
	h2.env.ExecuteWorkflow(workflows.AgentTurnWorkflow, json.RawMessage(raw))
	require.NoError(t, h2.env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, h2.env.GetWorkflowResult(&res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Done after four steps.", res.Output.Content)
	assert.Equal(t, 5, res.Metrics.Steps)
	assert.Equal(t, 4, res.Metrics.ToolCalls)
	assert.Equal(t, "continued", res.Trace[0].Hook)
}

// A cancel that reaches a turn's call after its tool ran (here during its
// projection) records the call as it happened — projected, no
// PostToolUseFailure — and ends the turn canceled before its next step.
func TestAgentTurnCancelAfterTheToolRanKeepsTheCall(t *testing.T) {
	h := agentHarness(t)
	h.env.OnActivity("ProjectToolResult", mock.Anything, mock.Anything).After(time.Minute).Return(
		func(ctx context.Context, in activities.ProjectToolResultInput) (activities.ProjectToolResultResult, error) {
			return h.acts.ProjectToolResult(ctx, in)
		})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelRequest{Reason: "stop the agent"})
	}, 30*time.Second)
	res := h.runTurn(t, turnRequest("main", 5))

	require.Equal(t, contract.StatusCanceled, res.Status)
	assert.Equal(t, 1, h.count("CallModel"), "no model call after the cancel")
	hooks := traceHooks(res.Trace)
	assert.Contains(t, hooks, "project_tool_result", "the call that ran is projected")
	assert.NotContains(t, hooks, "post_tool_use_failure", "a call that ran did not fail")
}
