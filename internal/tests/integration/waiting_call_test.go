package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// waitingCall is an assignment running on the dev server that may park
// questions for decide_permission while it runs.
type waitingCall struct {
	t   *testing.T
	run client.WorkflowRun
}

// startWaitingCall starts the assignment a on queue; name makes its
// workflow ID.
func startWaitingCall(t *testing.T, queue, name string, a map[string]any) waitingCall {
	return waitingCall{t: t, run: startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, t.Name()+"-"+name, a)}
}

// result waits for the run's result, at most two minutes.
func (c waitingCall) result() contract.Result {
	var res contract.Result
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(c.t, c.run.Get(ctx, &res))
	return res
}

func (c waitingCall) pending() []workflows.PendingPermission { return pendingPermissions(c.t, c.run) }

// awaitOne waits until exactly one question is pending and returns it.
func (c waitingCall) awaitOne(what string) workflows.PendingPermission {
	var p []workflows.PendingPermission
	require.Eventually(c.t, func() bool { p = c.pending(); return len(p) == 1 }, 60*time.Second, 100*time.Millisecond, what)
	return p[0]
}

func (c waitingCall) decide(d workflows.PermissionDecision) { decidePermission(c.t, c.run, d) }

// decisionEntry is the trace's permission decision of callID.
func decisionEntry(res contract.Result, callID string) (contract.TraceEntry, bool) {
	for _, e := range res.Trace {
		if e.Hook == activities.StagePermissionDecision && e.Get("call_id") == callID {
			return e, true
		}
	}
	return contract.TraceEntry{}, false
}
