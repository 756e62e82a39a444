package activities

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// StageRecordDecision writes a permission decision to the audit log.
const StageRecordDecision = "record_permission_decision"

// PermissionDecisionRecord is a decision on a call that waited for a
// human: who decided, when, on which arguments and under which policy.
type PermissionDecisionRecord struct {
	SessionID      string `json:"session_id"`
	RunID          string `json:"run_id,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	TurnID         string `json:"turn_id,omitempty"`
	CallID         string `json:"call_id"`
	ToolName       string `json:"tool_name"`
	Decision       string `json:"decision"`
	Reason         string `json:"reason,omitempty"`
	// Source is "decide_permission" or "timeout".
	Source            string    `json:"source"`
	Decider           string    `json:"decider"`
	DecidedAt         time.Time `json:"decided_at"`
	ArgsHash          string    `json:"args_hash"`
	PolicyFingerprint string    `json:"policy_fingerprint,omitempty"`
}

// PermissionDecisionRecordResult says whether a row was written.
type PermissionDecisionRecordResult struct {
	Recorded bool                `json:"recorded"`
	Trace    contract.TraceEntry `json:"trace"`
}

// RecordPermissionDecision writes the PERMISSION_DECISION audit row.
// Rows are idempotent, so a retried or replayed attempt adds nothing.
func (a *Activities) RecordPermissionDecision(ctx context.Context, in PermissionDecisionRecord) (PermissionDecisionRecordResult, error) {
	if a.Audit == nil {
		return PermissionDecisionRecordResult{Trace: contract.Trace(StageRecordDecision, "call_id", in.CallID, "recorded", false, "why", "no audit store")}, nil
	}
	row, err := audit.DecisionRow(audit.Row{SessionID: in.SessionID, RunID: in.RunID, ConversationID: in.ConversationID,
		TurnID: in.TurnID, CallID: in.CallID, ToolName: in.ToolName},
		audit.Decision{Decision: in.Decision, Decider: in.Decider, Source: in.Source, At: in.DecidedAt,
			ArgsHash: in.ArgsHash, PolicyFingerprint: in.PolicyFingerprint, Reason: in.Reason})
	if err != nil {
		return fail[PermissionDecisionRecordResult](err)
	}
	if err := a.Audit.Record(ctx, row); err != nil {
		return fail[PermissionDecisionRecordResult](err)
	}
	return PermissionDecisionRecordResult{Recorded: true, Trace: contract.Trace(StageRecordDecision, "call_id", in.CallID, "recorded", true)}, nil
}

// withInboxLink tells a permission_prompt notification where to decide.
func (a *Activities) withInboxLink(ctx context.Context, e hooks.NotificationEvent) hooks.NotificationEvent {
	if a.InboxURL == "" || e.NotificationType != hooks.NotificationPermissionPrompt || !activity.IsActivity(ctx) {
		return e
	}
	e.Message += " — decide at " + InboxLink(a.InboxURL, activity.GetInfo(ctx).WorkflowExecution.ID, e.CallID)
	return e
}

// InboxLink is the inbox page showing one waiting call.
func InboxLink(base, workflowID, callID string) string {
	q := url.Values{"workflow": {workflowID}, "call": {callID}}
	return fmt.Sprintf("%s?%s", strings.TrimRight(base, "/")+"/", q.Encode())
}
