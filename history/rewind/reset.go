package rewind

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/workflows"
)

// Outcome is what a reset did.
type Outcome struct {
	NewRunID string
	// Recorded says how rewound_from reached the new run: "post-reset
	// operation" (atomic with the reset), "signal" (sent right after), or
	// "" when the new run closed before the signal arrived — the reset's
	// reason and base run are then only in the new run's
	// WorkflowTaskFailed (reset) event.
	Recorded string
}

// Reset resets the run at the plan's point and records rewound_from in
// the new run. Signals and updates the old run received after the reset
// point are not re-applied: the new run decides afresh (a permission is
// asked again; old tool output is not reported twice).
//
// The rewound signal goes with the reset as a post-reset operation when
// the server supports it (Temporal server 1.29 rejects SignalWorkflow
// post-reset operations), else it is sent to the new run right after.
//
// dc must be the client's data converter (with the payload codec, if any).
func Reset(ctx context.Context, c client.Client, dc converter.DataConverter, namespace string, p Plan, reason, identity string) (Outcome, error) {
	from := workflows.RewoundFrom{RunID: p.RunID, EventID: p.ResetEventID, Stage: string(p.Target.Stage),
		CallID: p.CallID, Step: p.Target.Step, Reason: reason}
	payloads, err := dc.ToPayloads(from)
	if err != nil {
		return Outcome{}, fmt.Errorf("encoding the rewound signal: %w", err)
	}
	req := &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 namespace,
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: p.WorkflowID, RunId: p.RunID},
		Reason:                    reason,
		WorkflowTaskFinishEventId: p.ResetEventID,
		RequestId:                 uuid.NewString(),
		Identity:                  identity,
		ResetReapplyExcludeTypes: []enumspb.ResetReapplyExcludeType{enumspb.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL,
			enumspb.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE},
		PostResetOperations: []*workflowpb.PostResetOperation{{Variant: &workflowpb.PostResetOperation_SignalWorkflow_{
			SignalWorkflow: &workflowpb.PostResetOperation_SignalWorkflow{SignalName: workflows.SignalRewound, Input: payloads}}}},
	}
	resp, err := c.WorkflowService().ResetWorkflowExecution(ctx, req)
	if err == nil {
		return Outcome{NewRunID: resp.GetRunId(), Recorded: "post-reset operation"}, nil
	}
	if !unsupportedPostReset(err) {
		return Outcome{}, fmt.Errorf("reset %s (run %s) to event %d: %w", p.WorkflowID, p.RunID, p.ResetEventID, err)
	}
	req.PostResetOperations = nil
	req.RequestId = uuid.NewString()
	resp, err = c.WorkflowService().ResetWorkflowExecution(ctx, req)
	if err != nil {
		return Outcome{}, fmt.Errorf("reset %s (run %s) to event %d: %w", p.WorkflowID, p.RunID, p.ResetEventID, err)
	}
	out := Outcome{NewRunID: resp.GetRunId(), Recorded: "signal"}
	if err := c.SignalWorkflow(ctx, p.WorkflowID, out.NewRunID, workflows.SignalRewound, from); err != nil {
		var done *serviceerror.NotFound
		if errors.As(err, &done) {
			out.Recorded = ""
			return out, nil
		}
		return out, fmt.Errorf("%s was reset (new run %s) but recording rewound_from failed: %w", p.WorkflowID, out.NewRunID, err)
	}
	return out, nil
}

// unsupportedPostReset recognizes a server that does not implement the
// SignalWorkflow post-reset operation.
func unsupportedPostReset(err error) bool {
	var invalid *serviceerror.InvalidArgument
	return errors.As(err, &invalid) && strings.Contains(invalid.Error(), "post reset operation")
}
