package workflows_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// The lean turn (fenix-shape 9): an agent turn's SessionStart stage says
// which session and turn events have a hook, and the stages of the
// others are left out.

func TestLeanTurnLeavesOutTurnStagesWithoutHooks(t *testing.T) {
	h := agentHarness(t)
	store := openAudit(t)
	h.acts.Hooks = workerHooks(store)
	res := h.runTurn(t, turnRequest("main", 5))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "2 + 2 is 4.", res.Output.Content)
	assert.Equal(t, []string{"RunLifecycleHooks",
		"PrepareTurn", "CallModel", "ReviewToolCall", "ExecuteTool", "ProjectToolResult", "RunPostToolUseHooks",
		"PrepareTurn", "CallModel", "FinalizeOutput", "RunLifecycleHooks"}, h.rawStarted(),
		"no UserPromptSubmit, PostToolBatch, StepComplete or Stop stage: no hook subscribes")
	start := res.Trace[0]
	require.Equal(t, "session_start", start.Hook)
	assert.Equal(t, "[session_stop]", fmt.Sprint(start.Get("turn_hook_events")), "the audit log is SessionStop's hook")
	assert.Equal(t, 2, res.Metrics.Steps, "the workflow counts steps without the StepComplete stage")
	assert.Equal(t, []string{audit.EventToolCall, audit.EventSessionStop}, auditEvents(t, store), "the audit rows stay")
}

// stopWatcher is a Go hook on Stop alone.
type stopWatcher struct {
	hooks.Base
	stops *int
}

func (stopWatcher) Name() string                     { return "stop-watcher" }
func (stopWatcher) HandlesEvent(ev hooks.Event) bool { return ev == hooks.EventStop }
func (w stopWatcher) Stop(context.Context, hooks.StopEvent) (hooks.StopAction, error) {
	*w.stops++
	return hooks.StopAction{Kind: hooks.KindContinue}, nil
}

func TestLeanTurnRunsTheStagesOfSubscribedEvents(t *testing.T) {
	h := agentHarness(t)
	stops := 0
	h.acts.Hooks = workerHooks(openAudit(t), stopWatcher{stops: &stops})
	res := h.runTurn(t, turnRequest("main", 5))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, 1, h.count("RunStopHooks"), "%v", h.rawStarted())
	assert.Equal(t, 1, stops, "the Stop hook ran for the final answer")
	for _, idle := range []string{"RunUserPromptSubmitHooks", "RunPostToolBatchHooks"} {
		assert.Zero(t, h.count(idle), "%s without a hook: %v", idle, h.rawStarted())
	}
	assert.Equal(t, "[stop session_stop]", fmt.Sprint(res.Trace[0].Get("turn_hook_events")))
}

// A failed turn still ends with the stages of what has a hook: SessionStop
// (the audit log), not Error.
func TestLeanTurnFailureStopsAndAudits(t *testing.T) {
	h := agentHarness(t)
	store := openAudit(t)
	h.acts.Hooks = workerHooks(store)
	res := h.runTurn(t, turnRequest("endless", 2))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, "StepLimitError", res.Error.ErrorType)
	stages := h.rawStarted()
	assert.Equal(t, []string{"HandleError", "RunLifecycleHooks"}, stages[len(stages)-2:], "SessionStop runs, Error has no hook")
	assert.Equal(t, []string{audit.EventToolCall, audit.EventToolCall, audit.EventSessionStop}, auditEvents(t, store))
}

// With every event observed nothing is left out, as before fenix-shape 9.
func TestLeanTurnWithEveryEventObservedRunsEveryStage(t *testing.T) {
	h := agentHarness(t)
	h.acts.Hooks = observedHooks()
	res := h.runTurn(t, turnRequest("main", 5))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	for stage, n := range map[string]int{"RunUserPromptSubmitHooks": 1, "RunPostToolBatchHooks": 1, "RunStopHooks": 1, "RunLifecycleHooks": 4} {
		assert.Equal(t, n, h.count(stage), "%s: %v", stage, h.rawStarted())
	}
}
