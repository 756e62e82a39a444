package workflows_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/history/rewind"
	"github.com/fenixrt/fenix/history/runhistory"
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

// rewindScenarios record runs created by `starter rewind`: a reset run
// whose trace gets rewound_from. rewound_blocked.json was recorded before
// the fast path (stages as regular activities, review local), the
// fast_path_ one with every repeatable stage local.
func rewindScenarios() []scenario {
	return []scenario{
		{"rewound_blocked.json", rewoundScenario("replay-rewound")},
		{"fast_path_rewound_blocked.json", rewoundScenario("replay-fast-rewound")},
	}
}

// rewoundScenario runs a call the test policy blocks, then rewinds it to
// PreToolUse (the policy blocks it again).
func rewoundScenario(id string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		a := calculatorAssignment()
		a["tool_call"] = map[string]any{"call_id": "block-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}
		first, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id, a)
		if err != nil {
			return nil, err
		}
		if err := first.Get(ctx, nil); err != nil {
			return nil, err
		}
		hist := &historypb.History{}
		iter := c.GetWorkflowHistory(ctx, first.GetID(), first.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				return nil, err
			}
			hist.Events = append(hist.Events, e)
		}
		run, err := runhistory.Parse(first.GetID(), first.GetRunID(), hist.Events, nil)
		if err != nil {
			return nil, err
		}
		plan, err := rewind.Locate(run, rewind.Target{Stage: rewind.StagePreToolUse}, nil)
		if err != nil {
			return nil, err
		}
		out, err := rewind.Reset(ctx, c, converter.GetDefaultDataConverter(), "default", plan, "recorded rewind", "recorder")
		if err != nil {
			return nil, err
		}
		if out.Recorded == "" {
			return nil, fmt.Errorf("the rewound run finished before the rewound signal: record again")
		}
		return c.GetWorkflow(ctx, first.GetID(), out.NewRunID), nil
	}
}
