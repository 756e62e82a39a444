package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/workflows"
)

// elicitingHook answers MCP servers' questions as a user's Elicitation
// and ElicitationResult hooks would.
type elicitingHook struct {
	hooks.Base
	answer, result hooks.ElicitationAction
	mu             sync.Mutex
	results        []hooks.ElicitationResultEvent
}

func (h *elicitingHook) Name() string { return "elicit-policy" }

func (h *elicitingHook) Elicitation(context.Context, hooks.ElicitationEvent) (hooks.ElicitationAction, error) {
	return h.answer, nil
}

func (h *elicitingHook) ElicitationResult(_ context.Context, ev hooks.ElicitationResultEvent) (hooks.ElicitationAction, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.results = append(h.results, ev)
	return h.result, nil
}

type elicitation = sentUpdate[activities.ElicitationAnswer]

func askElicitation(h *harness, id string, req activities.ElicitationRequest) *elicitation {
	return sendUpdate[activities.ElicitationAnswer](h, activities.UpdateElicitation, id, req)
}

func decideWithContent(h *harness, id string, d workflows.PermissionDecision) *updateOutcome {
	return sendUpdate[any](h, workflows.UpdateDecidePermission, id, d)
}

func formQuestion(seq int) activities.ElicitationRequest {
	return activities.ElicitationRequest{CallID: "call-1", Seq: seq, ToolName: "mcp__crm__lookup", ServerName: "crm",
		Message: "Which account?", Mode: hooks.ElicitModeForm, RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"account": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer", "minimum": 1}},
			"required":   []any{"account"},
		}}
}

// An MCP server's question during a call is parked beside the call for a
// person when no hook answers: decide_permission's allow answers the form
// (refused when it does not match the server's schema), deny declines;
// the ElicitationResult hooks see the answer and may change it; a hook
// may answer in the user's place; content on anything but an
// elicitation's allow is refused.
func TestMCPServersQuestionsReachAPersonOrAHook(t *testing.T) {
	h := newHarness(t)
	policy := &elicitingHook{}
	r := hooks.NewRegistry()
	r.Add(builtin.NewCancellationHook())
	r.Add(&scriptedHook{pre: requirePermission})
	r.Add(policy)
	h.acts.Hooks = r
	store := withAudit(t, h)

	var person, declined *elicitation
	var pending []workflows.PendingPermission
	var wrong, onDeny, onCall, good, no *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		person = askElicitation(h, "e1", formQuestion(1))
		declined = askElicitation(h, "e2", formQuestion(2))
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QueryPendingPermissions)
		require.NoError(t, err)
		require.NoError(t, v.Get(&pending))
		wrong = decideWithContent(h, "wrong", workflows.PermissionDecision{CallID: "call-1/elicitation/1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			Content: map[string]any{"limit": 0}})
		onDeny = decideWithContent(h, "on-deny", workflows.PermissionDecision{CallID: "call-1/elicitation/2", Decision: workflows.DecisionDeny, DecidedBy: "ana",
			Content: map[string]any{"account": "acme"}})
		onCall = decideWithContent(h, "on-call", workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			Content: map[string]any{"account": "acme"}})
		good = decideWithContent(h, "good", workflows.PermissionDecision{CallID: "call-1/elicitation/1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			Content: map[string]any{"account": "acme", "limit": 5}})
		no = decideWithContent(h, "no", workflows.PermissionDecision{CallID: "call-1/elicitation/2", Decision: workflows.DecisionDeny, DecidedBy: "ana", Reason: "not today"})
	}, 2*time.Minute)
	var byHook, changed *elicitation
	h.env.RegisterDelayedCallback(func() {
		policy.answer = hooks.ElicitationAction{Action: hooks.ElicitAccept, Content: map[string]any{"account": "from-hook"}}
		byHook = askElicitation(h, "e3", formQuestion(3))
	}, 3*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		policy.result = hooks.ElicitationAction{Action: hooks.ElicitDecline, Reason: "no accounts from CI"}
		changed = askElicitation(h, "e4", formQuestion(4))
	}, 4*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			ArgsHash: contract.ArgumentsHash(map[string]any{"expression": "2 + 2"})})
	}, 5*time.Minute)
	a := calculatorAssignment()
	a["approval"] = map[string]any{"timeout_seconds": 3600}
	res := h.executeAssignment(t, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	var question *workflows.PendingPermission
	for i := range pending {
		if pending[i].CallID == "call-1/elicitation/1" {
			question = &pending[i]
		}
	}
	require.NotNil(t, question, "the question is in pending_permissions: %+v", pending)
	assert.Equal(t, "elicitation: crm", question.Permission)
	assert.Equal(t, "mcp.elicitation", question.RequestedBy)
	assert.Equal(t, "Which account?", question.Arguments["message"])
	assert.NotNil(t, question.Arguments["requested_schema"])

	require.Error(t, wrong.rejected, "an answer that breaks the form is refused where it is given")
	assert.Contains(t, wrong.rejected.Error(), `the answer does not match the form of MCP server "crm"`)
	require.Error(t, onDeny.rejected)
	assert.Contains(t, onDeny.rejected.Error(), "declines but carries content")
	require.Error(t, onCall.rejected)
	assert.Contains(t, onCall.rejected.Error(), "only an MCP server's question")
	assert.True(t, good.accepted && no.accepted)

	require.True(t, person.answered, "%+v", person.rejected)
	assert.Equal(t, activities.ElicitationAnswer{Action: "accept", Content: map[string]any{"account": "acme", "limit": float64(5)}, DecidedBy: "ana"}, person.answer)
	require.True(t, declined.answered)
	assert.Equal(t, "decline", declined.answer.Action)
	assert.Nil(t, declined.answer.Content)
	require.True(t, byHook.answered)
	assert.Equal(t, "accept", byHook.answer.Action)
	assert.Equal(t, "hook:elicit-policy", byHook.answer.DecidedBy)
	assert.Equal(t, map[string]any{"account": "from-hook"}, byHook.answer.Content)
	require.True(t, changed.answered)
	assert.Equal(t, "decline", changed.answer.Action, "the ElicitationResult hook's decline replaces the accept")
	var sawPerson bool
	for _, ev := range policy.results {
		sawPerson = sawPerson || ev.Action == "accept" && ev.Content["account"] == "acme"
	}
	assert.True(t, sawPerson, "the result hooks saw the person's answer: %+v", policy.results)

	assert.Subset(t, decisionLines(t, store), []string{"decide_permission allow ana", "decide_permission deny ana"})
	stages := map[string]int{}
	for _, e := range res.Trace {
		stages[e.Hook]++
	}
	assert.Equal(t, 4, stages[activities.StageElicitation], "%v", stages)
	assert.Equal(t, 4, stages[activities.StageElicitationResult], "%v", stages)
}

// A question nobody answers before the call ends is cancelled (the
// server goes on as if its user dismissed it), and the run does not wait
// for the question's deadline.
func TestAnMCPServersQuestionIsCancelledWhenItsCallEnds(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	var q *elicitation
	h.env.RegisterDelayedCallback(func() { q = askElicitation(h, "e1", formQuestion(1)) }, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			ArgsHash: contract.ArgumentsHash(map[string]any{"expression": "2 + 2"})})
	}, 2*time.Minute)
	start := h.env.Now()
	a := calculatorAssignment()
	a["approval"] = map[string]any{"timeout_seconds": 24 * 3600}
	res := h.executeAssignment(t, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Less(t, h.env.Now().Sub(start), time.Hour)
	require.True(t, q.answered, "%+v", q.rejected)
	assert.Equal(t, "cancel", q.answer.Action)
	assert.Equal(t, "command_ended", q.answer.DecidedBy)
}
