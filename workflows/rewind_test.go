package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// The rewound signal becomes a rewound_from trace entry; a malformed one
// is recorded as such and the run goes on.
func TestRewoundSignalIsTraced(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalRewound, workflows.RewoundFrom{RunID: "run-old", EventID: 30, Stage: "pre_tool_use",
			CallID: "call-1", Reason: "guard fixed"})
		h.env.SignalWorkflow(workflows.SignalRewound, "not a RewoundFrom")
	}, 30*time.Second)
	h.env.RegisterDelayedCallback(func() { decide(t, h, "call-1", workflows.DecisionAllow) }, time.Minute)
	res := h.executeAssignment(t, calculatorAssignment())

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	var entries []contract.TraceEntry
	for _, e := range res.Trace {
		if e.Hook == workflows.TraceRewoundFrom {
			entries = append(entries, e)
		}
	}
	require.Len(t, entries, 2)
	assert.Equal(t, "run-old", entries[0].Get("run_id"))
	assert.EqualValues(t, 30, entries[0].Get("event_id"))
	assert.Equal(t, "pre_tool_use", entries[0].Get("stage"))
	assert.Equal(t, "guard fixed", entries[0].Get("reason"))
	assert.Contains(t, entries[1].Get("error"), "not {run_id")
}
