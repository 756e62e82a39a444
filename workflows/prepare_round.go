package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// PrepareRoundInlineLimit is the largest message list PrepareRound returns
// inline; larger ones are returned as messages_ref into the context store.
const PrepareRoundInlineLimit = 1 << 20

// PrepareRound assembles and compacts the context for the kernel's next
// model call: PrepareTurn → CompactContext, returning
// [system_prompt] + transcript_messages with the estimates and the trace.
func PrepareRound(ctx workflow.Context, input json.RawMessage) (contract.PreparedRound, error) {
	s, err := newSession(ctx)
	if err != nil {
		return contract.PreparedRound{}, err
	}
	a, err := contract.ParseAssignment(input)
	err = s.boundIdentifiers(a.BoundIdentifiers, &a, err)
	s.bindAssignment(a)
	s.sessionStart()
	if err != nil {
		s.currentStage = "validate_assignment"
		return s.preparedFailure(&stageError{stage: "validate_assignment", err: fenixerr.InvalidAssignment(err)}), nil
	}
	if err := offloadContext(s, &a, len(input)); err != nil {
		return s.preparedFailure(err), nil
	}
	comp, err := prepareContext(s, a, PrepareRoundInlineLimit, false)
	if err != nil {
		return s.preparedFailure(err), nil
	}
	model := a.InferModel()
	s.sessionStop(contract.StatusCompleted, nil)
	s.closeAttrs(contract.StatusCompleted)
	return contract.PreparedRound{
		Status:                contract.StatusCompleted,
		Messages:              comp.Messages.Messages,
		MessagesRef:           comp.Messages.Ref,
		LikelyModel:           model,
		EstimatedMessageCount: comp.Messages.Count,
		EstimatedTokenCount:   comp.EstimatedTokenCount,
		Compacted:             comp.Compacted,
		Trace:                 s.trace,
	}, nil
}

func (s *session) preparedFailure(err error) contract.PreparedRound {
	f := s.handleError(s.failureInput(err, nil))
	status := contract.StatusFailed
	if s.isCanceled(err) {
		status = contract.StatusCanceled
	}
	s.sessionStop(status, &f)
	s.closeAttrs(status)
	return contract.PreparedRound{Status: status, Messages: []contract.Message{}, Trace: s.trace, Error: &f}
}
