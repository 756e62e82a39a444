package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/contract"
)

// SignalRewound carries RewoundFrom. `starter rewind` sends it to the run a
// reset created, so the run's trace says where it came from; after a
// reset from the Web UI or `temporal workflow reset`, send it by hand.
const SignalRewound = "rewound"

// TraceRewoundFrom is the hook of the trace entry the signal adds.
const TraceRewoundFrom = "rewound_from"

// RewoundFrom is where a rewound run was reset from.
type RewoundFrom struct {
	// RunID is the run that was reset; it stays inspectable.
	RunID string `json:"run_id"`
	// EventID is the WorkflowTaskCompleted event reset to.
	EventID int64 `json:"event_id"`
	// Stage, CallID and Step are the rewind target, when given.
	Stage  string `json:"stage,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Step   int    `json:"step,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// listenForRewind adds a rewound_from trace entry for every rewound
// signal. It issues no command, so histories recorded before it replay
// unchanged. A payload that is not a RewoundFrom is recorded as such
// rather than failing the workflow task.
func (s *session) listenForRewind() {
	signals := workflow.GetSignalChannel(s.ctx, SignalRewound)
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		for s.receiveRewound(ctx, signals) {
		}
	})
}

// receiveRewound takes one rewound signal; false when the channel is
// closed.
func (s *session) receiveRewound(ctx workflow.Context, c workflow.ReceiveChannel) bool {
	var raw json.RawMessage
	if !c.Receive(ctx, &raw) {
		return false
	}
	var from RewoundFrom
	if err := json.Unmarshal(raw, &from); err != nil {
		s.addTrace(contract.Trace(TraceRewoundFrom, "error", "the rewound signal's payload is not {run_id, event_id, stage, call_id, step, reason}: "+err.Error()))
		return true
	}
	s.logger.Info("run rewound", "from_run_id", from.RunID, "event_id", from.EventID, "stage", from.Stage, "reason", from.Reason)
	e := contract.Trace(TraceRewoundFrom, "run_id", from.RunID, "event_id", from.EventID, "stage", from.Stage, "reason", from.Reason)
	if from.CallID != "" {
		e.Fields["call_id"] = from.CallID
	}
	if from.Step > 0 {
		e.Fields["step"] = from.Step
	}
	s.addTrace(e)
	return true
}
