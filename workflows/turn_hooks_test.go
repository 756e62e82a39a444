package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/workflows"
)

func promptRequest(script, prompt string, maxSteps int) map[string]any {
	req := turnRequest(script, maxSteps)
	req["context_messages"] = []map[string]any{{"role": "user", "content": prompt}}
	return req
}

func traceWith(trace []contract.TraceEntry, hook string) []contract.TraceEntry {
	var out []contract.TraceEntry
	for _, e := range trace {
		if e.Hook == hook {
			out = append(out, e)
		}
	}
	return out
}

// UserPromptSubmit context reaches the first model call (the script fails
// without it), and a Stop hook sends the first answer back once: the turn
// takes one more step, the hook sees stop_hook_active, and lets it stop.
func TestStopHookForcesAnotherStepAndPromptContextReachesTheModel(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, promptRequest("verify", "policy-context: what is 2 + 2?", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "2 + 2 is 4. VERIFIED", res.Output.Content)
	assert.Equal(t, 2, res.Metrics.Steps)
	prompt := findTrace(res.Trace, "user_prompt_submit")
	require.NotNil(t, prompt)
	assert.Equal(t, testtools.PolicyPromptContext, prompt.Get("additional_context"))
	stops := traceWith(res.Trace, "stop")
	require.Len(t, stops, 2)
	assert.Equal(t, true, stops[0].Get("continue"))
	assert.Equal(t, false, stops[0].Get("stop_hook_active"))
	assert.Equal(t, false, stops[1].Get("continue"))
	assert.Equal(t, true, stops[1].Get("stop_hook_active"))
}

// A Stop hook cannot keep a turn past max_steps: the turn ends with the
// answer it has, and the trace says why.
func TestStopHookIsBoundedByMaxSteps(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, promptRequest("verify", "policy-context: what is 2 + 2?", 1))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "2 + 2 is 4 (unverified).", res.Output.Content)
	stops := traceWith(res.Trace, "stop")
	require.Len(t, stops, 2)
	assert.Contains(t, stops[1].Get("overridden"), "max_steps")
}

func TestUserPromptSubmitBlockEndsTheTurnBeforeAnyModelCall(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, promptRequest("answer", "please policy-block this", 5))

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypePromptBlocked, res.Error.ErrorType)
	assert.Equal(t, "prompt_blocked", res.Error.Code)
	assert.Contains(t, res.Error.LastErrorSummary, "the test policy refuses this prompt")
	assert.Zero(t, h.count("CallModel"))
}

// "continue": false from a PreToolUse hook ends the whole turn, not just
// the call: the other call of the batch still finishes, no model call
// follows.
func TestHaltEndsTheTurn(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("halting", 5))

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeHookHalt, res.Error.ErrorType)
	assert.Equal(t, "halted_by_hook", res.Error.Code)
	assert.Contains(t, res.Error.LastErrorSummary, "the test policy ends the turn")
	assert.Equal(t, 1, h.count("CallModel"))
	assert.Equal(t, 1, res.Metrics.Steps)
	assert.NotNil(t, findTrace(res.Trace, "halt"))
}

func TestPostToolUseContextReachesTheModel(t *testing.T) {
	h := agentHarness(t)
	res := h.runTurn(t, turnRequest("post_context", 5))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "3 * 3 is 9, audited.", res.Output.Content)
	assert.NotNil(t, findTrace(res.Trace, "post_tool_batch"))
}

func TestExecuteAssignmentHaltEndsTheCall(t *testing.T) {
	h := agentHarness(t)
	a := calculatorAssignment()
	a["tool_call"] = map[string]any{"call_id": "halt-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}
	res := h.executeAssignment(t, a)

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeHookHalt, res.Error.ErrorType)
	assert.Zero(t, h.count("ExecuteTool"))
}

// turnEventHook records the new turn events it sees.
type turnEventHook struct {
	hooks.Base
	mu       sync.Mutex
	notes    []hooks.NotificationEvent
	denials  []hooks.PermissionDeniedEvent
	requests int
	pre      func(hooks.PreToolUseEvent) hooks.PreToolUseAction
	sessions []hooks.Session
}

func (h *turnEventHook) Name() string { return "turn-events" }

func (h *turnEventHook) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	h.mu.Lock()
	h.sessions = append(h.sessions, ev.Session)
	h.mu.Unlock()
	return h.pre(ev), nil
}

func (h *turnEventHook) PermissionRequest(context.Context, hooks.PermissionRequestEvent) (hooks.PermissionDecision, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	return hooks.NoOpinion(), nil
}

func (h *turnEventHook) OnNotification(_ context.Context, ev hooks.NotificationEvent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, ev)
	return nil
}

func (h *turnEventHook) PermissionDenied(_ context.Context, ev hooks.PermissionDeniedEvent) (hooks.DeniedAction, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.denials = append(h.denials, ev)
	return hooks.DeniedAction{Retry: true}, nil
}

// A deferred call skips PermissionRequest hooks; a pending permission
// fires Notification; a denial fires PermissionDenied, whose retry reaches
// the error the model or kernel sees.
func TestDeferredCallNotificationAndPermissionDenied(t *testing.T) {
	hook := &turnEventHook{pre: func(ev hooks.PreToolUseEvent) hooks.PreToolUseAction {
		return hooks.Defer("the kernel decides", ev.ToolName)
	}}
	h := newHarness(t)
	r := hooks.NewRegistry()
	r.Add(hook)
	h.acts.Hooks = r
	h.env.RegisterDelayedCallback(func() { decide(t, h, "call-1", workflows.DecisionDeny) }, time.Minute)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypePermissionDenied, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, `hook "turn-events" says you may retry this call`)
	assert.Zero(t, hook.requests, "a deferred call skips PermissionRequest hooks")
	require.Len(t, hook.notes, 1)
	assert.Equal(t, hooks.NotificationPermissionPrompt, hook.notes[0].NotificationType)
	assert.Contains(t, hook.notes[0].Message, "calculator")
	require.Len(t, hook.denials, 1)
	assert.Equal(t, "decide_permission", hook.denials[0].DeniedBy)
	// Hooks get the transcript in every event.
	require.NotEmpty(t, hook.sessions)
	assert.NotNil(t, findTrace(res.Trace, "permission_denied"))
}

func TestHookEventsCarryTheTranscript(t *testing.T) {
	var seen []hooks.Session
	var mu sync.Mutex
	hook := &turnEventHook{pre: func(ev hooks.PreToolUseEvent) hooks.PreToolUseAction {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ev.Session)
		return hooks.Continue()
	}}
	h := newHarness(t)
	r := hooks.NewRegistry()
	r.Add(hook)
	h.acts.Hooks = r
	res := h.executeAssignment(t, calculatorAssignment())
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Len(t, seen, 1)
	assert.Equal(t, hooks.PermissionModeDefault, seen[0].PermissionMode)
	assert.Nil(t, seen[0].Transcript, "the activity materializes the transcript and hides the message set")
}
