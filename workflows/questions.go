package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/contract"
)

// A running call may ask its run a question for a person: a sandboxed
// command about a host (network_permission.go), an MCP server for input
// (elicitation.go). Each is parked beside the call as a pending
// permission, answered with decide_permission, and settled as denied
// when nobody answers before its deadline, a cancel or the call's end.

// newQuestion is a question of the call asking it, pending until the
// run's approval timeout.
func (s *session) newQuestion(ctx workflow.Context, id, toolName, permission, requestedBy string, args map[string]any) *PendingPermission {
	timeout := s.gov.approvalTimeout
	if timeout <= 0 {
		timeout = DefaultPermissionTimeout
	}
	now := workflow.Now(ctx).UTC()
	return &PendingPermission{CallID: id, ToolName: toolName, Permission: permission, RequestedBy: requestedBy,
		Arguments: args, RequestedAt: now, Deadline: now.Add(timeout),
		ConversationID: s.id.ConversationID, TurnID: s.id.TurnID, ArgsHash: contract.ArgumentsHash(args)}
}

// park lists the question (pending_permissions, the Web UI's details,
// a progress report of callID with status, the inbox's attribute).
func (s *session) park(p *PendingPermission, callID, status string) {
	s.gov.pending = append(s.gov.pending, p)
	s.setDetails()
	s.report(contract.Report{Kind: contract.ReportProgress, Phase: contract.PhasePermissionPending, ToolInvocation: &contract.ToolInvocation{
		CallID: callID, ToolName: p.ToolName, Status: status, RequestPayload: contract.ToolCall{CallID: p.CallID, ToolName: p.ToolName}}})
	s.markAwaiting()
	s.flushAttrs()
}

// questionOpen is the wait's condition: nobody decided, the run goes on,
// and callID's command has not ended.
func (s *session) questionOpen(p *PendingPermission, callID string) func() bool {
	return func() bool { return p.decided || s.cancelled || s.endedCommands[callID] }
}

// settle decides a question its wait ended without an answer: withdrawn
// when callID's command ended (nobody waits for the answer any more), a
// cancel's, else the deadline's. p.decidedBy says which, or
// "decide_permission" when someone answered.
func (s *session) settle(ctx workflow.Context, p *PendingPermission, callID, withdrawn, unanswered string) {
	if !p.decided {
		p.decided = true
		p.decidedAt = workflow.Now(ctx).UTC()
		switch {
		case s.endedCommands[callID]:
			p.decision = PermissionDecision{CallID: p.CallID, Decision: DecisionDeny, Reason: withdrawn}
			p.decidedBy = commandEndedDecider
		case s.cancelled:
			p.decision = PermissionDecision{CallID: p.CallID, Decision: DecisionDeny, Reason: "the run was canceled: " + s.cancelReason}
			p.decidedBy = "cancel"
		default:
			p.decision = PermissionDecision{CallID: p.CallID, Decision: DecisionDeny, Reason: fmt.Sprintf(unanswered, p.Deadline.Sub(p.RequestedAt))}
			p.decidedBy = "timeout"
		}
	}
	if p.decidedBy == "" {
		p.decidedBy = "decide_permission"
	}
}

// recordQuestion writes a settled question's decision once (several
// connections may wait for one network question): the trace, the audit
// row, the inbox's attribute.
func (s *session) recordQuestion(ctx workflow.Context, p *PendingPermission) {
	if p.recorded {
		return
	}
	p.recorded = true
	s.unmarkAwaiting(p)
	s.recordDecision(ctx, contract.ToolCall{CallID: p.CallID, ToolName: p.ToolName}, p, p.decidedBy)
	s.setDetails()
}

// questionsBy counts the run's questions of requestedBy, unanswered and
// all.
func (s *session) questionsBy(requestedBy string) (open, all int) {
	for _, p := range s.gov.pending {
		if p.RequestedBy == requestedBy {
			all++
			if !p.decided {
				open++
			}
		}
	}
	return open, all
}
