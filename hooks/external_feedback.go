package hooks

import (
	"context"
	"fmt"
	"strings"
)

// Feedback runs the hook for a fire-and-forget event and returns its
// context and halt.
func (h *ExternalHook) Feedback(ctx context.Context, event any) (Feedback, error) {
	var (
		s          Session
		in         map[string]any
		ev         Event
		subject    string
		hasSubject = true
		toolEvent  bool
	)
	switch e := event.(type) {
	case SessionStartEvent:
		ev, s, subject = EventSessionStart, e.Session, e.Source
		in = h.input(s)
		in["source"] = e.Source
	case PostToolUseFailureEvent:
		ev, s, toolEvent = EventPostToolUseFailure, e.Session, true
		if !h.HandlesEvent(ev) || !h.matchesTool(e.ToolName, e.ToolInput, s.WorkspaceRoot) {
			return Feedback{}, nil
		}
		in = h.input(s)
		h.toolInput(in, s, e.ToolName, e.CallID, e.ToolInput)
		in["error"] = e.ErrorMessage
		in["error_type"] = e.ErrorType
		in["is_interrupt"] = e.Interrupted()
		in["duration_ms"] = e.DurationMS
	case StepCompleteEvent:
		ev, s, hasSubject = EventStepComplete, e.Session, false
		in = h.input(s)
		in["step"] = e.Step
		usage := e.Usage
		in["usage"] = &usage
	case SessionStopEvent:
		ev, s = EventSessionStop, e.Session
		in = h.input(s)
		subject = e.StopReason
		if h.dialect == DialectClaude {
			// Claude Code's SessionEnd reasons (clear, logout, …) describe
			// an interactive CLI; a Fenix session ends for "other" reasons.
			subject = "other"
		}
		in["reason"] = subject
		in["stop_reason"] = e.StopReason
		if e.ErrorMessage != "" {
			in["error"] = e.ErrorMessage
		}
	case SubagentStartEvent:
		ev, s, subject = EventSubagentStart, e.Session, e.SubagentProfile
		in = h.input(s)
		in["agent_id"], in["agent_type"], in["task"] = e.SubagentID, e.SubagentProfile, e.Task
	case SubagentStopEvent:
		ev, s, subject = EventSubagentStop, e.Session, e.SubagentProfile
		in = h.input(s)
		in["agent_id"], in["agent_type"], in["reason"] = e.SubagentID, e.SubagentProfile, e.StopReason
		if e.ErrorMessage != "" {
			in["error"] = e.ErrorMessage
		}
	case PreCompactEvent:
		ev, s, subject = EventPreCompact, e.Session, e.Trigger
		in = h.input(s)
		in["trigger"] = e.Trigger
		in["custom_instructions"] = ""
		in["compaction"] = map[string]any{"message_count": e.MessageCount, "token_count": e.TokenCount, "threshold": e.Threshold}
	case PostCompactEvent:
		ev, s, subject = EventPostCompact, e.Session, e.Trigger
		in = h.input(s)
		in["trigger"] = e.Trigger
		in["compaction"] = map[string]any{"messages_before": e.MessagesBefore, "messages_after": e.MessagesAfter,
			"tokens_before": e.TokensBefore, "tokens_after": e.TokensAfter}
	case ErrorEvent:
		ev, s, subject = EventError, e.Session, e.ErrorType
		in = h.input(s)
		in["stage"], in["error_type"], in["error"] = e.Stage, e.ErrorType, e.ErrorMessage
		if e.ToolName != "" {
			in["tool_name"] = hookToolName(h.dialect, e.ToolName)
			in["tool_use_id"] = e.CallID
		}
	case NotificationEvent:
		ev, s, subject = EventNotification, e.Session, e.NotificationType
		in = h.input(s)
		in["message"], in["title"], in["notification_type"] = e.Message, e.Title, e.NotificationType
	default:
		return Feedback{}, fmt.Errorf("hook %q: no feedback for event %T", h.name, event)
	}
	if !h.HandlesEvent(ev) || (!toolEvent && !h.matchesSubject(subject, hasSubject)) {
		return Feedback{}, nil
	}
	v, err := h.exchange(ctx, s, in)
	if err != nil {
		return Feedback{}, err
	}
	switch ev {
	case EventNotification:
		// Output, exit code and stderr are ignored, as in Claude Code.
		return Feedback{}, nil
	case EventPostToolUseFailure:
		return Feedback{AdditionalContext: strings.Join(h.feedbackToModel(v), "\n"), Halt: v.halt()}, nil
	}
	contexts := v.contexts()
	if ev == EventSessionStart && v.plainText != "" && !v.exit2 {
		contexts = append(contexts, v.plainText)
	}
	return Feedback{AdditionalContext: strings.Join(contexts, "\n"), Halt: v.halt()}, h.cannotBlock(v)
}

func (h *ExternalHook) OnSessionStart(ctx context.Context, ev SessionStartEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) PostToolUseFailure(ctx context.Context, ev PostToolUseFailureEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnStepComplete(ctx context.Context, ev StepCompleteEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnSessionStop(ctx context.Context, ev SessionStopEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnSubagentStart(ctx context.Context, ev SubagentStartEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnSubagentStop(ctx context.Context, ev SubagentStopEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnPreCompact(ctx context.Context, ev PreCompactEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnPostCompact(ctx context.Context, ev PostCompactEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnError(ctx context.Context, ev ErrorEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}

func (h *ExternalHook) OnNotification(ctx context.Context, ev NotificationEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}
