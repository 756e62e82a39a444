package claudecode

import (
	"context"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/hooks"
)

// Feedback runs the hook for a fire-and-forget event and returns its
// context and halt.
func (h *ExternalHook) Feedback(ctx context.Context, event any) (hooks.Feedback, error) {
	var (
		s          hooks.Session
		in         map[string]any
		ev         hooks.Event
		subject    string
		hasSubject = true
		toolEvent  bool
	)
	switch e := event.(type) {
	case hooks.SessionStartEvent:
		ev, s, subject = hooks.EventSessionStart, e.Session, e.Source
		in = h.input(s)
		in["source"] = e.Source
	case hooks.PostToolUseFailureEvent:
		ev, s, toolEvent = hooks.EventPostToolUseFailure, e.Session, true
		// A Claude Code hook hears of a tool that ran and failed, not of a
		// call a hook or a permission decision refused.
		if !h.HandlesEvent(ev) || (h.dialect == DialectClaude && e.Refused()) || !h.matchesTool(e.ToolName, e.ToolInput, s.WorkspaceRoot) {
			return hooks.Feedback{}, nil
		}
		in = h.input(s)
		h.toolInput(in, s, e.ToolName, e.CallID, e.ToolInput)
		in["error"] = e.ErrorMessage
		in["error_type"] = e.ErrorType
		in["is_interrupt"] = e.Interrupted()
		in["duration_ms"] = e.DurationMS
	case hooks.StepCompleteEvent:
		ev, s, hasSubject = hooks.EventStepComplete, e.Session, false
		in = h.input(s)
		in["step"] = e.Step
		usage := e.Usage
		in["usage"] = &usage
	case hooks.SessionStopEvent:
		ev, s = hooks.EventSessionStop, e.Session
		in = h.input(s)
		subject = e.StopReason
		if h.dialect == DialectClaude {
			// Claude Code's SessionEnd reasons: a run's end is "other";
			// a conversation's end says why it ended.
			subject = hooks.EndReasonOther
			if e.Reason != "" {
				subject = e.Reason
			}
		}
		in["reason"] = subject
		in["stop_reason"] = e.StopReason
		if e.ErrorMessage != "" {
			in["error"] = e.ErrorMessage
		}
	case hooks.SubagentStartEvent:
		ev, s, subject = hooks.EventSubagentStart, e.Session, e.SubagentProfile
		in = h.input(s)
		in["agent_id"], in["agent_type"], in["task"] = e.SubagentID, e.SubagentProfile, e.Task
	case hooks.SubagentStopEvent:
		ev, s, subject = hooks.EventSubagentStop, e.Session, e.SubagentProfile
		in = h.input(s)
		in["agent_id"], in["agent_type"], in["reason"] = e.SubagentID, e.SubagentProfile, e.StopReason
		if e.ErrorMessage != "" {
			in["error"] = e.ErrorMessage
		}
	case hooks.PreCompactEvent:
		ev, s, subject = hooks.EventPreCompact, e.Session, e.Trigger
		in = h.input(s)
		in["trigger"] = e.Trigger
		in["custom_instructions"] = ""
		in["compaction"] = map[string]any{"message_count": e.MessageCount, "token_count": e.TokenCount, "threshold": e.Threshold}
	case hooks.PostCompactEvent:
		ev, s, subject = hooks.EventPostCompact, e.Session, e.Trigger
		in = h.input(s)
		in["trigger"] = e.Trigger
		in["compaction"] = map[string]any{"messages_before": e.MessagesBefore, "messages_after": e.MessagesAfter,
			"tokens_before": e.TokensBefore, "tokens_after": e.TokensAfter}
	case hooks.ErrorEvent:
		ev, s, subject = hooks.EventError, e.Session, e.ErrorType
		in = h.input(s)
		in["stage"], in["error_type"], in["error"] = e.Stage, e.ErrorType, e.ErrorMessage
		if e.ToolName != "" {
			in["tool_name"] = hookToolName(h.dialect, e.ToolName)
			in["tool_use_id"] = e.CallID
		}
	case hooks.NotificationEvent:
		ev, s, subject = hooks.EventNotification, e.Session, e.NotificationType
		in = h.input(s)
		in["message"], in["title"], in["notification_type"] = e.Message, e.Title, e.NotificationType
	default:
		return hooks.Feedback{}, fmt.Errorf("hook %q: no feedback for event %T", h.name, event)
	}
	if !h.HandlesEvent(ev) || (!toolEvent && !h.matchesSubject(subject, hasSubject)) {
		return hooks.Feedback{}, nil
	}
	v, err := h.exchange(ctx, s, in)
	if err != nil {
		return hooks.Feedback{}, err
	}
	switch ev {
	case hooks.EventNotification:
		// Output, exit code and stderr are ignored, as in Claude Code.
		return hooks.Feedback{}, nil
	case hooks.EventPostToolUseFailure:
		return hooks.Feedback{AdditionalContext: strings.Join(h.feedbackToModel(v), "\n"), Halt: v.halt()}, nil
	}
	contexts := v.contexts()
	if ev == hooks.EventSessionStart && v.plainText != "" && !v.exit2 {
		contexts = append(contexts, v.plainText)
	}
	return hooks.Feedback{AdditionalContext: strings.Join(contexts, "\n"), Halt: v.halt()}, h.cannotBlock(v)
}

func (h *ExternalHook) OnSessionStart(ctx context.Context, ev hooks.SessionStartEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) PostToolUseFailure(ctx context.Context, ev hooks.PostToolUseFailureEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnStepComplete(ctx context.Context, ev hooks.StepCompleteEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnSessionStop(ctx context.Context, ev hooks.SessionStopEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnSubagentStart(ctx context.Context, ev hooks.SubagentStartEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnSubagentStop(ctx context.Context, ev hooks.SubagentStopEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnPreCompact(ctx context.Context, ev hooks.PreCompactEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnPostCompact(ctx context.Context, ev hooks.PostCompactEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnError(ctx context.Context, ev hooks.ErrorEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnNotification(ctx context.Context, ev hooks.NotificationEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}
