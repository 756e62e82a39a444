package workflows_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// networkAsk is an UpdateNetworkPermission's outcome in the test
// environment.
type networkAsk = sentUpdate[activities.NetworkPermissionAnswer]

func askNetwork(h *harness, id string, req activities.NetworkPermissionRequest) *networkAsk {
	return sendUpdate[activities.NetworkPermissionAnswer](h, activities.UpdateNetworkPermission, id, req)
}

// A sandboxed command's questions about hosts, while its run waits: a
// second connection to the same host waits for the same answer; once
// allowed, another command of the run is not asked again; at most four
// questions wait unanswered, and the fifth is refused before anything is
// recorded.
func TestNetworkQuestionsAreJoinedRememberedAndBounded(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	req := func(call, host string) activities.NetworkPermissionRequest {
		return activities.NetworkPermissionRequest{CallID: call, ToolName: "exec_command", Host: host, Port: 443}
	}
	var first, joined, remembered, fifth *networkAsk
	var open []*networkAsk
	var pending []workflows.PendingPermission
	h.env.RegisterDelayedCallback(func() {
		first = askNetwork(h, "q1", req("cmd-1", "registry.example"))
		joined = askNetwork(h, "q2", req("cmd-1", "registry.example"))
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QueryPendingPermissions)
		require.NoError(t, err)
		require.NoError(t, v.Get(&pending))
		for _, p := range pending {
			if p.CallID == "cmd-1/network/registry.example:443" {
				decideAs(h, workflows.PermissionDecision{CallID: p.CallID, Decision: workflows.DecisionAllow, DecidedBy: "ana", ArgsHash: p.ArgsHash})
			}
		}
	}, 2*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		remembered = askNetwork(h, "q3", req("cmd-2", "registry.example"))
		for i := range 4 {
			open = append(open, askNetwork(h, fmt.Sprintf("open-%d", i), req("cmd-2", fmt.Sprintf("h%d.example", i))))
		}
		fifth = askNetwork(h, "q5", req("cmd-2", "h4.example"))
	}, 3*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			ArgsHash: contract.ArgumentsHash(map[string]any{"expression": "2 + 2"})})
	}, 4*time.Minute)
	a := calculatorAssignment()
	a["approval"] = map[string]any{"timeout_seconds": 24 * 3600}
	res := h.executeAssignment(t, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	network := 0
	for _, p := range pending {
		if p.RequestedBy == "sandbox.network" {
			network++
			assert.Equal(t, "network: registry.example:443", p.Permission)
		}
	}
	assert.Equal(t, 1, network, "two connections to one host, one question: %+v", pending)
	for name, q := range map[string]*networkAsk{"first": first, "joined": joined, "remembered": remembered} {
		require.NoError(t, q.rejected, name)
		assert.True(t, q.answered && q.answer.Allowed, "%s: %+v", name, q.answer)
		assert.Equal(t, "ana", q.answer.DecidedBy, name)
	}
	assert.Contains(t, remembered.answer.Reason, "allowed for cmd-1/network/registry.example:443")
	assert.True(t, first.answer.Remember, "a person's allow is for the conversation to remember")
	assert.False(t, remembered.answer.Remember, "the run's own memory is no new grant")
	for i, q := range open {
		assert.NoError(t, q.rejected, "question %d", i)
	}
	require.Error(t, fifth.rejected)
	assert.Contains(t, fifth.rejected.Error(), "4 network permissions of this run are still unanswered")
}

// A question whose command ends before anyone answers it (the command's
// own timeout, a curl that gave up) is withdrawn when the call's
// ExecuteTool ends: denied as "command_ended", traced and written to the
// audit log, instead of waiting in the inbox until its deadline keeps the
// run open.
func TestANetworkQuestionIsWithdrawnWhenItsCommandEnds(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	store := withAudit(t, h)
	var question *networkAsk
	var pending []workflows.PendingPermission
	h.env.RegisterDelayedCallback(func() {
		question = askNetwork(h, "q1", activities.NetworkPermissionRequest{CallID: "call-1", ToolName: "calculator", Host: "registry.example", Port: 443})
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QueryPendingPermissions)
		require.NoError(t, err)
		require.NoError(t, v.Get(&pending))
		decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			ArgsHash: contract.ArgumentsHash(map[string]any{"expression": "2 + 2"})})
	}, 2*time.Minute)
	start := h.env.Now()
	a := calculatorAssignment()
	a["approval"] = map[string]any{"timeout_seconds": 24 * 3600}
	res := h.executeAssignment(t, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Less(t, h.env.Now().Sub(start), time.Hour, "the run did not wait for the withdrawn question's deadline")

	require.Len(t, pending, 2, "the call's own permission and the network question: %+v", pending)
	require.NotNil(t, question)
	require.NoError(t, question.rejected)
	assert.True(t, question.answered, "the handler answered instead of being abandoned")
	assert.False(t, question.answer.Allowed)
	assert.Equal(t, "command_ended", question.answer.DecidedBy)

	traced := false
	for _, e := range res.Trace {
		if e.Fields["call_id"] == "call-1/network/registry.example:443" {
			traced = true
			assert.Equal(t, "deny", e.Fields["decision"])
			assert.Equal(t, "command_ended", e.Fields["decided_by"])
		}
	}
	assert.True(t, traced, "the withdrawal is in the call's trace: %+v", res.Trace)
	assert.ElementsMatch(t, []string{"decide_permission allow ana", "command_ended deny command_ended"}, decisionLines(t, store))

}

// A destination a person allowed earlier in the conversation (the
// worker read it from the conversation's session) is allowed at once:
// no question waits, and the allow is traced and written to the audit
// log naming the conversation and who allowed it; the run's later
// commands are answered from it too.
func TestANetworkGrantOfTheConversationIsNotAskedAgain(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	store := withAudit(t, h)
	grant := &activities.NetworkGrant{Dest: "pypi.org:443", DecidedBy: "ana", RunID: "assignment-earlier-1", At: time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)}
	var granted, later *networkAsk
	var pending []workflows.PendingPermission
	h.env.RegisterDelayedCallback(func() {
		granted = askNetwork(h, "q1", activities.NetworkPermissionRequest{CallID: "call-1", ToolName: "exec_command", Host: "pypi.org", Port: 443, Granted: grant})
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		later = askNetwork(h, "q2", activities.NetworkPermissionRequest{CallID: "call-2", ToolName: "exec_command", Host: "pypi.org", Port: 443})
		v, err := h.env.QueryWorkflow(workflows.QueryPendingPermissions)
		require.NoError(t, err)
		require.NoError(t, v.Get(&pending))
		decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "ana",
			ArgsHash: contract.ArgumentsHash(map[string]any{"expression": "2 + 2"})})
	}, 2*time.Minute)
	res := h.executeAssignment(t, calculatorAssignment())
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	require.True(t, granted.answered, "%+v", granted.rejected)
	assert.True(t, granted.answer.Allowed)
	assert.Equal(t, "conversation", granted.answer.DecidedBy)
	assert.Contains(t, granted.answer.Reason, "allowed earlier in the conversation by ana (run assignment-earlier-1")
	assert.False(t, granted.answer.Remember)
	require.True(t, later.answered)
	assert.True(t, later.answer.Allowed, "the run's later command is answered from the grant")
	for _, p := range pending {
		assert.NotEqual(t, "sandbox.network", p.RequestedBy, "nothing waits for a granted host: %+v", p)
	}
	assert.Contains(t, decisionLines(t, store), "conversation allow ana", "the audit row names who allowed the host")
}
