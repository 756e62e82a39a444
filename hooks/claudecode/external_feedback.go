package claudecode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// Feedback runs the hook for a fire-and-forget event and returns its
// context and halt.
func (h *ExternalHook) Feedback(ctx context.Context, event any) (hooks.Feedback, error) {
	var (
		s  hooks.Session
		in map[string]any
	)
	ev, subject, hasSubject, ok := h.feedbackSubject(event)
	if !ok {
		return hooks.Feedback{}, fmt.Errorf("hook %q: no feedback for event %T", h.name, event)
	}
	if !h.HandlesEvent(ev) {
		return hooks.Feedback{}, nil
	}
	switch e := event.(type) {
	case hooks.SessionStartEvent:
		s = e.Session
		in = h.input(s)
		in["source"] = e.Source
	case hooks.PostToolUseFailureEvent:
		s = e.Session
		// A Claude Code hook hears of a tool that ran and failed, not of a
		// call a hook or a permission decision refused.
		if (h.dialect == DialectClaude && e.Refused()) || !h.matchesTool(e.ToolName, e.ToolInput, s.WorkspaceRoot) {
			return hooks.Feedback{}, nil
		}
		in = h.input(s)
		h.toolInput(in, s, e.ToolName, e.CallID, e.ToolInput)
		in["error"] = e.ErrorMessage
		in["error_type"] = e.ErrorType
		in["is_interrupt"] = e.Interrupted()
		in["duration_ms"] = e.DurationMS
	case hooks.StepCompleteEvent:
		s = e.Session
		in = h.input(s)
		in["step"] = e.Step
		usage := e.Usage
		in["usage"] = &usage
	case hooks.SessionStopEvent:
		s = e.Session
		in = h.input(s)
		in["reason"] = subject
		in["stop_reason"] = e.StopReason
		if e.ErrorMessage != "" {
			in["error"] = e.ErrorMessage
		}
	case hooks.SubagentStartEvent:
		s = e.Session
		in = h.input(s)
		in["agent_id"], in["agent_type"], in["task"] = e.SubagentID, e.SubagentProfile, e.Task
	case hooks.SubagentStopEvent:
		s = e.Session
		in = h.input(s)
		in["agent_id"], in["agent_type"], in["reason"] = e.SubagentID, e.SubagentProfile, e.StopReason
		if e.ErrorMessage != "" {
			in["error"] = e.ErrorMessage
		}
	case hooks.PreCompactEvent:
		s = e.Session
		in = h.input(s)
		in["trigger"] = e.Trigger
		in["custom_instructions"] = ""
		in["compaction"] = map[string]any{"message_count": e.MessageCount, "token_count": e.TokenCount, "threshold": e.Threshold}
	case hooks.PostCompactEvent:
		s = e.Session
		in = h.input(s)
		in["trigger"] = e.Trigger
		in["compaction"] = map[string]any{"messages_before": e.MessagesBefore, "messages_after": e.MessagesAfter,
			"tokens_before": e.TokensBefore, "tokens_after": e.TokensAfter}
	case hooks.ErrorEvent:
		s = e.Session
		if h.spec.modelFailure {
			if !h.hearsOfFailure(e) {
				return hooks.Feedback{}, nil
			}
			in = h.input(s)
			in["error"], in["error_details"] = subject, e.ErrorMessage
			in["last_assistant_message"] = "API Error: " + e.ErrorMessage
			break
		}
		in = h.input(s)
		in["stage"], in["error_type"], in["error"] = e.Stage, e.ErrorType, e.ErrorMessage
		if e.ToolName != "" {
			in["tool_name"] = hookToolName(h.dialect, e.ToolName)
			in["tool_use_id"] = e.CallID
		}
	case hooks.NotificationEvent:
		s = e.Session
		in = h.input(s)
		in["message"], in["title"], in["notification_type"] = e.Message, e.Title, e.NotificationType
		if rest, ok := strings.CutPrefix(e.Message, hooks.PermissionPromptMessage(e.ToolName)); ok && h.dialect == DialectClaude && e.ToolName != "" {
			// Claude Code's words, which a notifier script matches on,
			// then the reason and where to decide.
			in["message"] = "Claude needs your permission to use " + hookToolName(h.dialect, e.ToolName) + rest
		}
	case hooks.ConfigChangeEvent:
		s = e.Session
		in = h.input(s)
		in["source"], in["file_path"] = e.Source, e.FilePath
		if h.dialect == DialectFenix {
			in["change"] = e.Change
		}
	}
	if ev != hooks.EventPostToolUseFailure && !h.matchesSubject(subject, hasSubject) {
		return hooks.Feedback{}, nil
	}
	v, err := h.exchange(ctx, s, in)
	envErr := h.sessionEnvErr(v)
	refusable := ev == hooks.EventPreCompact || ev == hooks.EventConfigChange
	if err != nil {
		fb := hooks.Feedback{SessionEnv: v.sessionEnv}
		if refusable && h.FailClosed() {
			// A guard that fails closed refuses what it could not judge.
			fb.Block = fmt.Sprintf("it failed and fails closed: %v", err)
		}
		return fb, errors.Join(err, envErr)
	}
	switch {
	case ev == hooks.EventNotification, h.spec.modelFailure:
		// Output, exit code and stderr are ignored, as in Claude Code.
		return hooks.Feedback{}, nil
	case ev == hooks.EventPostToolUseFailure:
		return hooks.Feedback{AdditionalContext: strings.Join(h.feedbackToModel(v), "\n"), Halt: v.halt()}, nil
	}
	contexts := v.contexts()
	if ev == hooks.EventSessionStart && v.plainText != "" && !v.exit2 {
		contexts = append(contexts, v.plainText)
	}
	fb := hooks.Feedback{AdditionalContext: strings.Join(contexts, "\n"), Halt: v.halt(), SessionEnv: v.sessionEnv}
	if refusable {
		// Claude Code skips a compaction a PreCompact hook blocks (exit 2
		// or decision "block") and goes on uncompacted, and keeps the
		// settings a ConfigChange hook blocks.
		if blocked, reason := v.topBlock(); blocked || v.exit2 {
			fb.Block = cmp.Or(v.blockReason(reason), "blocked by "+h.name)
		}
		return fb, envErr
	}
	return fb, errors.Join(h.cannotBlock(v), envErr)
}

// sessionEnvErr names the hook whose $CLAUDE_ENV_FILE was not applied.
func (h *ExternalHook) sessionEnvErr(v verdict) error {
	if v.sessionEnvErr == nil {
		return nil
	}
	return fmt.Errorf("hook %q: %w", h.name, v.sessionEnvErr)
}

// feedbackSubject is the event of a fire-and-forget payload and what its
// matcher matches: SessionStart's source, SessionEnd's reason, a
// subagent's type, a compaction's trigger, an error's type, a
// notification's type (hasSubject is false for events without matcher
// support). ok is false for a payload that is no such event.
func (h *ExternalHook) feedbackSubject(event any) (ev hooks.Event, subject string, hasSubject, ok bool) {
	switch e := event.(type) {
	case hooks.SessionStartEvent:
		return hooks.EventSessionStart, e.Source, true, true
	case hooks.PostToolUseFailureEvent:
		return hooks.EventPostToolUseFailure, "", false, true
	case hooks.StepCompleteEvent:
		return hooks.EventStepComplete, "", false, true
	case hooks.SessionStopEvent:
		if h.dialect != DialectClaude {
			return hooks.EventSessionStop, e.StopReason, true, true
		}
		// Claude Code's SessionEnd reasons: a run's end is "other"; a
		// conversation's end says why it ended.
		if e.Reason != "" {
			return hooks.EventSessionStop, e.Reason, true, true
		}
		return hooks.EventSessionStop, hooks.EndReasonOther, true, true
	case hooks.SubagentStartEvent:
		return hooks.EventSubagentStart, e.SubagentProfile, true, true
	case hooks.SubagentStopEvent:
		return hooks.EventSubagentStop, e.SubagentProfile, true, true
	case hooks.PreCompactEvent:
		return hooks.EventPreCompact, e.Trigger, true, true
	case hooks.PostCompactEvent:
		return hooks.EventPostCompact, e.Trigger, true, true
	case hooks.ErrorEvent:
		if h.spec.modelFailure {
			return hooks.EventError, apiErrorName(e.ErrorCode), true, true
		}
		return hooks.EventError, e.ErrorType, true, true
	case hooks.NotificationEvent:
		return hooks.EventNotification, e.NotificationType, true, true
	case hooks.ConfigChangeEvent:
		return hooks.EventConfigChange, e.Source, true, true
	}
	return "", "", false, false
}

// hearsOfFailure says whether a StopFailure hook hears of an error: a
// failed model call of a main agent (a subagent's ends in its parent's
// tool result), not a step limit or a cancel, which also end at the model
// stage.
func (h *ExternalHook) hearsOfFailure(e hooks.ErrorEvent) bool {
	if e.Stage != hooks.StageCallModel || (h.spec.scope == mainAgents && e.IsSubagent) {
		return false
	}
	return e.ErrorType == fenixerr.TypeModelProvider || e.ErrorType == fenixerr.TypeTransient
}

// apiErrorName is Claude Code's StopFailure "error" for a failed model
// call's code.
func apiErrorName(code string) string {
	switch code {
	case fenixerr.CodeRateLimited:
		return "rate_limit"
	case fenixerr.CodeAuthenticationFailed:
		return "authentication_failed"
	case fenixerr.CodeInsufficientQuota:
		return "billing_error"
	case fenixerr.CodeInvalidRequest, fenixerr.CodeContextLengthExceeded:
		return "invalid_request"
	case fenixerr.CodeProviderUnavailable:
		return "server_error"
	}
	return "unknown"
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

func (h *ExternalHook) OnConfigChange(ctx context.Context, ev hooks.ConfigChangeEvent) error {
	_, err := h.Feedback(ctx, ev)
	return err
}
