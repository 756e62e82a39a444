package builtin

import (
	"context"
	"time"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// DefaultAuditWriteTimeout bounds one audit write.
const DefaultAuditWriteTimeout = 2 * time.Second

// AuditLogHook writes every tool call, tool failure and session stop to the
// agent_audit_log table. Rows are keyed by (session_id, run_id, call_id,
// event), so a retried activity re-records the same rows harmlessly.
type AuditLogHook struct {
	hooks.Base

	store   audit.Store
	timeout time.Duration
	logf    hooks.LogFunc
	now     func() time.Time
}

// NewAuditLogHook writes through store, giving each write at most
// writeTimeout (DefaultAuditWriteTimeout when 0). Failed writes are
// returned as the hook's error and logged through logf (which may be nil).
func NewAuditLogHook(store audit.Store, writeTimeout time.Duration, logf hooks.LogFunc) *AuditLogHook {
	if writeTimeout <= 0 {
		writeTimeout = DefaultAuditWriteTimeout
	}
	return &AuditLogHook{store: store, timeout: writeTimeout, logf: logf, now: time.Now}
}

func (h *AuditLogHook) Name() string { return "audit_log" }

// Essential: a row that could not be written fails the stage, which is
// retried (rows are idempotent), rather than let the call go on unaudited.
func (h *AuditLogHook) Essential() bool { return true }

func (h *AuditLogHook) HandlesEvent(ev hooks.Event) bool {
	return ev == hooks.EventPostToolUse || ev == hooks.EventPostToolUseFailure || ev == hooks.EventSessionStop
}

func (h *AuditLogHook) PostToolUse(ctx context.Context, ev hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	status := ev.Status
	if status == "" {
		status = contract.StatusCompleted
	}
	row := h.row(ev.Session, audit.EventToolCall)
	row.CallID, row.ToolName, row.Status = ev.CallID, ev.ToolName, status
	row.DurationMS, row.OutputPreview = ev.DurationMS, ev.Content
	row.ArgsHash = contract.ArgumentsHash(ev.ToolInput)
	return hooks.KeepOutput(), h.record(ctx, row)
}

func (h *AuditLogHook) PostToolUseFailure(ctx context.Context, ev hooks.PostToolUseFailureEvent) error {
	row := h.row(ev.Session, audit.EventToolFailure)
	row.CallID, row.ToolName, row.Status = ev.CallID, ev.ToolName, contract.StatusFailed
	row.DurationMS = ev.DurationMS
	row.ArgsHash = contract.ArgumentsHash(ev.ToolInput)
	row.Error = ev.ErrorMessage
	if ev.ErrorType != "" {
		row.Error = ev.ErrorType + ": " + ev.ErrorMessage
	}
	return h.record(ctx, row)
}

func (h *AuditLogHook) OnSessionStop(ctx context.Context, ev hooks.SessionStopEvent) error {
	row := h.row(ev.Session, audit.EventSessionStop)
	row.Status, row.Error = ev.StopReason, ev.ErrorMessage
	return h.record(ctx, row)
}

func (h *AuditLogHook) row(s hooks.Session, event string) audit.Row {
	return audit.Row{
		SessionID:      s.SessionID,
		RunID:          s.RunID,
		ConversationID: s.ConversationID,
		TurnID:         s.TurnID,
		Event:          event,
		CreatedAt:      h.now(),
	}
}

// record writes one row within the write timeout. It detaches from the
// caller's cancellation: a cancelled run's last tool call and its
// SESSION_STOP must still be audited, and the timeout keeps that short.
func (h *AuditLogHook) record(ctx context.Context, row audit.Row) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	defer cancel()
	err := h.store.Record(ctx, row)
	if err != nil && h.logf != nil {
		h.logf("audit log write failed", "session_id", row.SessionID, "call_id", row.CallID, "event", row.Event, "error", err.Error())
	}
	return err
}
