package workflows

import (
	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"go.temporal.io/sdk/workflow"
)

// reviewCall runs ReviewToolCall. Since shapeLean the review is lean: its
// result names the lifecycle events some hook acts on for this tool (the
// stages of the others are left out) and does not repeat the call, which
// is put back here.
func (s *session) reviewCall(ctx workflow.Context, call contract.ToolCall, agent contract.AgentContext) (activities.ReviewToolCallResult, error) {
	lean := s.shape >= shapeLean
	reviewed, err := runPure[activities.ReviewToolCallResult](ctx, s, activities.StageReviewToolCall,
		stageOptions("ReviewToolCall: "+call.ToolName, pureStageTimeout), acts.ReviewToolCall,
		activities.ReviewToolCallInput{ToolCall: call, AgentContext: agent, Lean: lean, ConversationSessions: s.conversationSessions()})
	if err == nil && lean {
		reviewed.ToolCall = call
	}
	return reviewed, err
}

// reviewsFirst is whether this assignment's tool call is reviewed before
// SessionStart, so SessionStart and SessionStop can be left out when no
// hook subscribes to them (shapeLean).
func (r *assignmentRun) reviewsFirst() bool {
	return r.shape >= shapeLean && r.a.Mode == contract.ModeTool && r.a.ToolCall != nil
}

// startReviewed keeps a call reviewed first and starts the session: its
// SessionStart stage runs when the review found a hook for it.
func (r *assignmentRun) startReviewed(reviewed activities.ReviewToolCallResult) {
	r.reviewed = &reviewed
	r.gov.subscribed = reviewed.Hooks
	r.sessionStart()
}

// goOn is the check after the session started: a cancel, or a
// SessionStart hook's request to end the run.
func (r *assignmentRun) goOn() error {
	if err := r.checkCancel(); err != nil {
		return err
	}
	if r.halted() {
		return r.haltError()
	}
	return nil
}
