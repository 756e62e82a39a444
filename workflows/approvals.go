package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// AwaitingDecisionValue is SearchAttrAwaitingDecision's value while a run
// has a call waiting for decide_permission; the attribute is unset when
// the last waiting call is decided, expires or is canceled, so the inbox
// lists runs with `AwaitingDecision = "true"`.
const AwaitingDecisionValue = "true"

// MaxDeciderBytes caps who a decision names (a token name or a user).
const MaxDeciderBytes = 128

// MaxDecisionReasonBytes caps a decision's reason; decide_permission
// refuses a longer one (the inbox's form allows 2048 bytes).
const MaxDecisionReasonBytes = 8 << 10

// checkArgsHash is the validator's refusal of a decision made on
// arguments other than the waiting call's.
func checkArgsHash(p *PendingPermission, d PermissionDecision) error {
	if d.ArgsHash == "" || p.ArgsHash == "" || d.ArgsHash == p.ArgsHash {
		return nil
	}
	return fenixerr.New(fenixerr.TypeValidation,
		"decision on tool call %q (%s) refused: it was made on arguments %s but the waiting call's arguments are %s; list the call again and decide on what it asks now",
		d.CallID, p.ToolName, d.ArgsHash, p.ArgsHash).WithCode(CodeArgsHashMismatch)
}

// decider is who made a human decision, bounded for history.
func decider(d PermissionDecision) string {
	if d.DecidedBy == "" {
		return "unnamed (decide_permission without decided_by)"
	}
	return truncateBytes(d.DecidedBy, MaxDeciderBytes)
}

func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}

// markAwaiting sets the inbox's search attribute before the run waits.
func (s *session) markAwaiting() {
	if s.shape >= shapeInbox {
		s.upsert(setAttr(SearchAttrAwaitingDecision, AwaitingDecisionValue))
	}
}

// unmarkAwaiting clears it when no call other than done still waits,
// at once, so the inbox stops listing the run.
func (s *session) unmarkAwaiting(done *PendingPermission) {
	if s.shape < shapeInbox {
		return
	}
	for _, p := range s.gov.pending {
		if p != done && !p.decided {
			return
		}
	}
	s.upsert(unsetAttr(SearchAttrAwaitingDecision))
	s.flushAttrs()
}

// recordDecision puts a human (or timeout) decision in the trace and the
// audit log: who, when, the arguments hash and the policy fingerprint.
// The audit write is a repeatable stage (rows are idempotent); a failure
// is traced, not fatal, like the other observers.
func (s *session) recordDecision(ctx workflow.Context, call contract.ToolCall, p *PendingPermission, decidedBy string) {
	entry := permissionTrace(call, p.decision.Decision, p.decision.Reason, decidedBy)
	if s.shape < shapeInbox {
		s.addTrace(entry)
		return
	}
	who := decidedBy
	if decidedBy == "decide_permission" || decidedBy == conversationDecider {
		who = decider(p.decision)
	}
	entry.Fields["decider"] = who
	entry.Fields["decided_at"] = p.decidedAt.Format(time.RFC3339Nano)
	entry.Fields["args_hash"] = p.ArgsHash
	entry.Fields["policy_fingerprint"] = p.PolicyFingerprint
	s.addTrace(entry)
	hs := s.gov.hookSession
	in := activities.PermissionDecisionRecord{SessionID: hs.SessionID, RunID: hs.RunID, ConversationID: hs.ConversationID,
		TurnID: hs.TurnID, CallID: call.CallID, ToolName: call.ToolName,
		Decision: p.decision.Decision, Reason: p.decision.Reason, Source: decidedBy, Decider: who, DecidedAt: p.decidedAt,
		ArgsHash: p.ArgsHash, PolicyFingerprint: p.PolicyFingerprint}
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	if _, err := runRepeatable[activities.PermissionDecisionRecordResult](ctx, s, activities.StageRecordDecision,
		stageOptions("Audit: permission decision "+call.ToolName, hookStageTimeout), acts.RecordPermissionDecision, in); err != nil {
		s.addTrace(contract.Trace(activities.StageRecordDecision, "error", fenixerr.FromTemporal(err).Message))
	}
}
