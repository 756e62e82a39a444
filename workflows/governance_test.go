package workflows_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/workflows"
)

// scriptedHook is a Go hook whose verdicts a test chooses, recording the
// events it saw.
type scriptedHook struct {
	hooks.Base
	pre  func(hooks.PreToolUseEvent) hooks.PreToolUseAction
	perm func(hooks.PermissionRequestEvent) hooks.PermissionDecision
	post func(hooks.PostToolUseEvent) hooks.PostToolUseAction

	mu       sync.Mutex
	stops    []string
	failures []hooks.PostToolUseFailureEvent
	posts    []hooks.PostToolUseEvent
}

func (h *scriptedHook) Name() string { return "scripted" }

func (h *scriptedHook) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	if h.pre == nil {
		return hooks.Continue(), nil
	}
	return h.pre(ev), nil
}

func (h *scriptedHook) PermissionRequest(_ context.Context, ev hooks.PermissionRequestEvent) (hooks.PermissionDecision, error) {
	if h.perm == nil {
		return hooks.NoOpinion(), nil
	}
	return h.perm(ev), nil
}

func (h *scriptedHook) PostToolUse(_ context.Context, ev hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	h.mu.Lock()
	h.posts = append(h.posts, ev)
	h.mu.Unlock()
	if h.post == nil {
		return hooks.KeepOutput(), nil
	}
	return h.post(ev), nil
}

func (h *scriptedHook) PostToolUseFailure(_ context.Context, ev hooks.PostToolUseFailureEvent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures = append(h.failures, ev)
	return nil
}

func (h *scriptedHook) OnSessionStop(_ context.Context, ev hooks.SessionStopEvent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stops = append(h.stops, ev.StopReason)
	return nil
}

func withHook(t *testing.T, hook *scriptedHook) *harness {
	h := newHarness(t)
	r := hooks.NewRegistry()
	r.Add(builtin.NewCancellationHook())
	r.Add(hook)
	h.acts.Hooks = r
	return h
}

func requirePermission(hooks.PreToolUseEvent) hooks.PreToolUseAction {
	return hooks.RequirePermission("run_calculator", "calculator")
}

func TestBlockingHookStopsTheCallAndAuditsIt(t *testing.T) {
	hook := &scriptedHook{pre: func(hooks.PreToolUseEvent) hooks.PreToolUseAction { return hooks.Block("no math on Sundays") }}
	h := withHook(t, hook)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
	assert.Equal(t, "authorization", res.Error.Classification)
	assert.Equal(t, "blocked_by_hook", res.Error.Code)
	assert.Contains(t, res.Error.LastErrorSummary, "no math on Sundays")
	assert.Contains(t, res.Error.LastErrorSummary, `hook "scripted"`)
	assert.Zero(t, h.count("ExecuteTool"))
	require.Len(t, hook.failures, 1, "the blocked call reaches PostToolUseFailure hooks (and the audit log)")
	assert.Equal(t, fenixerr.TypeToolBlocked, hook.failures[0].ErrorType)
	assert.Equal(t, []string{"failed"}, hook.stops)
}

func TestMutateInputAndAdditionalContext(t *testing.T) {
	hook := &scriptedHook{pre: func(hooks.PreToolUseEvent) hooks.PreToolUseAction {
		return hooks.MutateInput(map[string]any{"expression": "3 * 3"}, "rewritten by policy")
	}}
	h := withHook(t, hook)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "The calculator returned 9.", res.Output.Content)
	assert.Equal(t, "rewritten by policy", res.Output.Data["additional_context"])
	require.Len(t, hook.posts, 1)
	assert.Equal(t, "3 * 3", hook.posts[0].ToolInput["expression"], "later stages see the mutated arguments")
}

func TestPostToolUseMutatesOutput(t *testing.T) {
	hook := &scriptedHook{post: func(ev hooks.PostToolUseEvent) hooks.PostToolUseAction {
		return hooks.MutateOutput("[redacted] " + ev.Content)
	}}
	h := withHook(t, hook)
	res := h.executeAssignment(t, calculatorAssignment())
	assert.Equal(t, "[redacted] The calculator returned 4.", res.Output.Content)
	assert.Equal(t, []string{"completed"}, hook.stops)
}

// sentUpdate is filled in when the test environment processes an
// update: accepted or rejected, then answered.
type sentUpdate[T any] struct {
	accepted bool
	rejected error
	answered bool
	answer   T
}

// sendUpdate sends an update to the workflow under test.
func sendUpdate[T any](h *harness, name, id string, arg any) *sentUpdate[T] {
	out := &sentUpdate[T]{}
	h.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
		OnAccept: func() { out.accepted = true },
		OnReject: func(err error) { out.rejected = err },
		OnComplete: func(v any, err error) {
			if err == nil {
				out.answered = true
				out.answer, _ = v.(T)
			}
		},
	}, arg)
	return out
}

// updateOutcome is a decide_permission's outcome.
type updateOutcome = sentUpdate[any]

func decide(t *testing.T, h *harness, callID, decision string) *updateOutcome {
	t.Helper()
	return sendUpdate[any](h, workflows.UpdateDecidePermission, "decide-"+callID+decision,
		workflows.PermissionDecision{CallID: callID, Decision: decision, Reason: "reviewed by the on-call engineer"})
}

func TestPermissionRequiredWaitsForDecidePermission(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	var pending []workflows.PendingPermission
	var unknown, badDecision, allow, second *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QueryPendingPermissions)
		require.NoError(t, err)
		require.NoError(t, v.Get(&pending))
		unknown = decide(t, h, "call-unknown", workflows.DecisionAllow)
		badDecision = decide(t, h, "call-1", "maybe")
		allow = decide(t, h, "call-1", workflows.DecisionAllow)
		second = decide(t, h, "call-1", workflows.DecisionDeny)
	}, time.Minute)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "The calculator returned 4.", res.Output.Content)
	require.Len(t, pending, 1)
	assert.Equal(t, "call-1", pending[0].CallID)
	assert.Equal(t, "run_calculator", pending[0].Permission)
	assert.ErrorContains(t, unknown.rejected, `no tool call "call-unknown" is waiting`)
	assert.ErrorContains(t, badDecision.rejected, `decision "maybe"`)
	assert.True(t, allow.accepted)
	assert.NoError(t, allow.rejected)
	assert.ErrorContains(t, second.rejected, "already decided")
	assert.Contains(t, kinds(res.Reports), "progress:permission_pending")
	decision := findTrace(res.Trace, "permission_decision")
	require.NotNil(t, decision)
	assert.Equal(t, "allow", decision.Get("decision"))
	assert.Equal(t, "decide_permission", decision.Get("decided_by"))
}

func TestPermissionDeniedEndsLikeABlock(t *testing.T) {
	hook := &scriptedHook{pre: requirePermission}
	h := withHook(t, hook)
	var deny *updateOutcome
	h.env.RegisterDelayedCallback(func() { deny = decide(t, h, "call-1", workflows.DecisionDeny) }, time.Minute)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.True(t, deny.accepted)
	assert.Equal(t, fenixerr.TypePermissionDenied, res.Error.ErrorType)
	assert.Equal(t, "permission_denied", res.Error.Code)
	assert.Contains(t, res.Error.LastErrorSummary, "reviewed by the on-call engineer")
	assert.Zero(t, h.count("ExecuteTool"))
	require.Len(t, hook.failures, 1)
	assert.Equal(t, fenixerr.TypePermissionDenied, hook.failures[0].ErrorType)
}

func TestPermissionTimeoutDenies(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	a := calculatorAssignment()
	a["approval"] = map[string]any{"timeout_seconds": 90}
	res := h.executeAssignment(t, a)

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypePermissionDenied, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "no decision within 1m30s")
	assert.Equal(t, "timeout", findTrace(res.Trace, "permission_decision").Get("decided_by"))
}

func TestPermissionRequestHookDecidesBeforeAHuman(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission, perm: func(hooks.PermissionRequestEvent) hooks.PermissionDecision {
		return hooks.Allow("calculator is always safe")
	}})
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.NotContains(t, kinds(res.Reports), "progress:permission_pending")
	assert.Equal(t, "hook:scripted", findTrace(res.Trace, "permission_decision").Get("decided_by"))
}

func TestCancelWhileWaitingForPermission(t *testing.T) {
	hook := &scriptedHook{pre: requirePermission}
	h := withHook(t, hook)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelRequest{Reason: "user left"})
	}, time.Minute)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusCanceled, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "user left")
	assert.Equal(t, "permission_decision", res.Error.Stage)
	assert.Equal(t, []string{"canceled"}, hook.stops)
	require.Len(t, hook.failures, 1)
	assert.Equal(t, fenixerr.TypeCanceled, hook.failures[0].ErrorType)
}

func TestMetricsQueryIsLive(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	var mid contract.Metrics
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QueryMetrics)
		require.NoError(t, err)
		require.NoError(t, v.Get(&mid))
		decide(t, h, "call-1", workflows.DecisionAllow)
	}, time.Minute)
	res := h.executeAssignment(t, calculatorAssignment())
	assert.Equal(t, 0, mid.ToolCalls, "no tool has run while the call waits")
	assert.Equal(t, 1, res.Metrics.ToolCalls)
}

func TestSummaryCompactionRunsSummarizeContext(t *testing.T) {
	h := withHook(t, &scriptedHook{})
	a := calculatorAssignment()
	delete(a, "tool_call")
	a["compaction"] = map[string]any{"strategy": "summary"}
	a["budget_hints"] = map[string]any{"advisory_compaction_threshold_tokens": 20}
	a["context_messages"] = []map[string]any{
		{"role": "user", "content": "Plan the billing migration to the new queue, step by step please."},
		{"role": "assistant", "content": "First inventory the consumers. Then dual-write for a week."},
		{"role": "user", "content": "Which consumers are risky?"},
		{"role": "assistant", "content": "The invoice renderer."},
	}
	raw, _ := json.Marshal(a)
	h.env.ExecuteWorkflow(workflows.PrepareRoundWorkflow, json.RawMessage(raw))
	var res contract.PreparedRound
	require.NoError(t, h.env.GetWorkflowResult(&res))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.True(t, res.Compacted)
	assert.Equal(t, []string{"session_start", "prepare_turn", "pre_compact", "compact_context", "summarize_context", "post_compact", "session_stop"}, traceHooks(res.Trace))
	require.Len(t, res.Messages, 3)
	assert.Contains(t, res.Messages[0].Content, "Summary of earlier context:")
	assert.Equal(t, "The invoice renderer.", res.Messages[2].Content)
}

func findTrace(trace []contract.TraceEntry, hook string) *contract.TraceEntry {
	for i := range trace {
		if trace[i].Hook == hook {
			return &trace[i]
		}
	}
	return nil
}
