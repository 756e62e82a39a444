package claudecode

import (
	"context"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/hooks"
)

// input is the common part of the event JSON: Claude Code's fields, then
// Fenix's identifiers (scripts ignore fields they do not know).
func (h *ExternalHook) input(s hooks.Session) map[string]any {
	// As the permission rules do, a session mode other than default
	// overrides the settings' defaultMode.
	mode := s.PermissionMode
	if (mode == "" || mode == hooks.PermissionModeDefault) && h.settingsMode != "" {
		mode = h.settingsMode
	}
	if mode == "" {
		mode = hooks.PermissionModeDefault
	}
	in := map[string]any{
		"session_id":      s.SessionID,
		"transcript_path": s.TranscriptPath,
		"cwd":             h.workDir(s),
		"permission_mode": mode,
		"hook_event_name": h.eventName,
	}
	if h.dialect == DialectClaude {
		h.claudeSession(in, s)
	}
	for k, v := range map[string]string{"run_id": s.RunID, "conversation_id": s.ConversationID, "turn_id": s.TurnID,
		"agent_profile": s.Profile, "workspace_root": s.WorkspaceRoot} {
		if v != "" {
			in[k] = v
		}
	}
	if s.IsSubagent {
		in["is_subagent"] = true
	}
	if s.IsReplay {
		// A policy what-if: no tool runs after this event.
		in["is_replay"] = true
	}
	return in
}

// toolInput adds the tool fields every tool event carries.
func (h *ExternalHook) toolInput(in map[string]any, s hooks.Session, tool, callID string, args map[string]any) {
	in["tool_name"] = hookToolName(h.dialect, tool)
	in["tool_input"] = hookToolInput(h.dialect, tool, hooks.CloneArgs(args), s.WorkspaceRoot)
	in["tool_use_id"] = callID
}

func (h *ExternalHook) PreToolUse(ctx context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	if !h.HandlesEvent(hooks.EventPreToolUse) || !h.matchesTool(ev.ToolName, ev.ToolInput, ev.WorkspaceRoot) {
		return hooks.Continue(), nil
	}
	in := h.input(ev.Session)
	h.toolInput(in, ev.Session, ev.ToolName, ev.CallID, ev.ToolInput)
	v, err := h.exchange(ctx, ev.Session, in)
	if err != nil {
		if h.failsClosed(err) {
			return hooks.Block(h.failClosedReason(err)), err
		}
		return hooks.Continue(), err
	}
	if halt := v.halt(); halt != nil {
		return hooks.PreToolUseAction{Kind: hooks.KindBlock, Reason: halt.Reason, Halt: halt}, nil
	}
	hso := v.hso()
	topBlock, topReason := v.topBlock()
	jsonDenyReason := ""
	switch {
	case hso.PermissionDecision == "deny":
		jsonDenyReason = hso.PermissionDecisionReason
	case topBlock:
		jsonDenyReason = topReason
	}
	denied := v.exit2 || hso.PermissionDecision == "deny" || topBlock
	if denied {
		reason := v.blockReason(jsonDenyReason)
		if reason == "" {
			reason = fmt.Sprintf("tool %q blocked by hook %q", ev.ToolName, h.name)
		}
		return hooks.Block(reason), nil
	}
	if hso.PermissionDecision == "defer" {
		reason := hso.PermissionDecisionReason
		if reason == "" {
			reason = fmt.Sprintf("hook %q deferred %s to a decision from outside the run", h.name, ev.ToolName)
		}
		return hooks.Defer(reason, ev.ToolName), nil
	}
	var updated map[string]any
	if hso.UpdatedInput != nil {
		updated = fenixArgs(h.dialect, ev.ToolName, hso.UpdatedInput, ev.WorkspaceRoot)
	}
	contexts := strings.Join(v.contexts(), "\n")
	if hso.PermissionDecision == "allow" {
		allow := hooks.AllowCall(firstNonEmpty(hso.PermissionDecisionReason, "allowed"))
		allow.UpdatedArgs, allow.AdditionalContext = updated, contexts
		return allow, nil
	}
	if hso.PermissionDecision == "ask" {
		permission := hso.PermissionDecisionReason
		if permission == "" {
			permission = fmt.Sprintf("hook %q asks for approval to run %s", h.name, ev.ToolName)
		}
		return hooks.PreToolUseAction{Kind: hooks.KindPermissionRequired, Permission: permission, ToolName: ev.ToolName,
			UpdatedArgs: updated, AdditionalContext: contexts}, nil
	}
	if updated != nil || contexts != "" {
		return hooks.MutateInput(updated, contexts), nil
	}
	return hooks.Continue(), nil
}

func (h *ExternalHook) PostToolUse(ctx context.Context, ev hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	if !h.HandlesEvent(hooks.EventPostToolUse) || !h.matchesTool(ev.ToolName, ev.ToolInput, ev.WorkspaceRoot) {
		return hooks.KeepOutput(), nil
	}
	in := h.input(ev.Session)
	h.toolInput(in, ev.Session, ev.ToolName, ev.CallID, ev.ToolInput)
	in["tool_response"] = hookToolResponse(h.dialect, ev.ToolName, ev.RawResult, ev.ToolInput, ev.Content, ev.WorkspaceRoot)
	in["tool_output"] = ev.Content
	in["duration_ms"] = ev.DurationMS
	if ev.Status != "" {
		in["status"] = ev.Status
	}
	v, err := h.exchange(ctx, ev.Session, in)
	if err != nil {
		return hooks.KeepOutput(), err
	}
	action := hooks.KeepOutput()
	replacement, ok, err := v.updatedToolOutput(strings.HasPrefix(ev.ToolName, "mcp__"))
	if err != nil {
		return hooks.KeepOutput(), fmt.Errorf("hook %q: %w", h.name, err)
	}
	if ok {
		text, err := outputContent(h.dialect, ev.ToolName, replacement)
		if err != nil {
			return hooks.KeepOutput(), fmt.Errorf("hook %q: updatedToolOutput: %w", h.name, err)
		}
		action = hooks.MutateOutput(text)
	}
	action.AdditionalContext = strings.Join(h.feedbackToModel(v), "\n")
	action.Halt = v.halt()
	return action, nil
}

// feedbackToModel is what a tool-result event shows the model: the JSON's
// context, a top-level block's reason and exit 2's stderr (the tool already
// ran, so nothing is blocked).
func (h *ExternalHook) feedbackToModel(v verdict) []string {
	out := v.contexts()
	if blocked, reason := v.topBlock(); blocked && reason != "" {
		out = append(out, reason)
	}
	if v.exit2 && v.stderr != "" {
		out = append(out, v.stderr)
	}
	return out
}

// PermissionRequest maps decision.behavior deny to Deny, allow to Allow
// (with its updatedInput) and silence to NoOpinion, which leaves the
// decision to a human. Claude Code ignores exit 2 on this event; a Fenix
// file's exit 2 denies, as it always did.
func (h *ExternalHook) PermissionRequest(ctx context.Context, ev hooks.PermissionRequestEvent) (hooks.PermissionDecision, error) {
	if !h.HandlesEvent(hooks.EventPermissionRequest) || !h.matchesTool(ev.ToolName, ev.ToolInput, ev.WorkspaceRoot) {
		return hooks.NoOpinion(), nil
	}
	in := h.input(ev.Session)
	h.toolInput(in, ev.Session, ev.ToolName, ev.CallID, ev.ToolInput)
	in["permission"] = ev.Permission
	in["permission_suggestions"] = []any{}
	v, err := h.exchange(ctx, ev.Session, in)
	if err != nil {
		if h.failsClosed(err) {
			return hooks.Deny(h.failClosedReason(err)), err
		}
		return hooks.NoOpinion(), err
	}
	if halt := v.halt(); halt != nil {
		return hooks.PermissionDecision{Kind: hooks.KindDeny, Reason: halt.Reason, Halt: halt}, nil
	}
	hso := v.hso()
	if d := hso.Decision; d != nil {
		if d.Behavior == "deny" {
			out := hooks.Deny(d.Message)
			if d.Interrupt {
				out.Halt = &hooks.Halt{Reason: firstNonEmpty(d.Message, "permission denied and the turn interrupted")}
			}
			return out, nil
		}
		out := hooks.Allow(d.Message)
		if d.UpdatedInput != nil {
			out.UpdatedArgs = fenixArgs(h.dialect, ev.ToolName, d.UpdatedInput, ev.WorkspaceRoot)
		}
		return out, nil
	}
	topBlock, topReason := v.topBlock()
	switch {
	case hso.PermissionDecision == "deny":
		return hooks.Deny(hso.PermissionDecisionReason), nil
	case topBlock:
		return hooks.Deny(topReason), nil
	case hso.PermissionDecision == "allow":
		return hooks.Allow(hso.PermissionDecisionReason), nil
	case v.exit2 && h.dialect == DialectFenix:
		return hooks.Deny(v.stderr), nil
	}
	return hooks.NoOpinion(), nil
}

func (h *ExternalHook) UserPromptSubmit(ctx context.Context, ev hooks.UserPromptSubmitEvent) (hooks.PromptAction, error) {
	if !h.HandlesEvent(hooks.EventUserPromptSubmit) || !h.matchesSubject("", false) {
		return hooks.PromptAction{Kind: hooks.KindContinue}, nil
	}
	in := h.input(ev.Session)
	in["prompt"] = ev.Prompt
	v, err := h.exchange(ctx, ev.Session, in)
	if err != nil {
		if h.failsClosed(err) {
			return hooks.PromptAction{Kind: hooks.KindBlock, Reason: h.failClosedReason(err)}, err
		}
		return hooks.PromptAction{Kind: hooks.KindContinue}, err
	}
	contexts := v.contexts()
	if v.plainText != "" && !v.exit2 {
		contexts = append(contexts, v.plainText)
	}
	out := hooks.PromptAction{Kind: hooks.KindContinue, AdditionalContext: strings.Join(contexts, "\n"), Halt: v.halt()}
	if blocked, reason := v.topBlock(); blocked || v.exit2 {
		out.Kind = hooks.KindBlock
		out.Reason = v.blockReason(reason)
	}
	return out, nil
}

// Stop handles Claude Code's Stop (main agents) and SubagentStop
// (subagents): a block keeps the agent going with the reason as its next
// instruction, additionalContext does too, continue: false ends the turn.
func (h *ExternalHook) Stop(ctx context.Context, ev hooks.StopEvent) (hooks.StopAction, error) {
	if !h.Applies(hooks.EventStop, ev) {
		return hooks.StopAction{Kind: hooks.KindContinue}, nil
	}
	in := h.input(ev.Session)
	in["stop_hook_active"] = ev.StopHookActive
	in["last_assistant_message"] = ev.LastAssistantMessage
	in["background_tasks"] = []any{}
	in["session_crons"] = []any{}
	if ev.IsSubagent {
		// input set the parent's transcript_path in a shape-6 subagent.
		in["agent_id"] = ev.SessionID
		in["agent_type"] = ev.Profile
		in["agent_transcript_path"] = ev.TranscriptPath
	}
	v, err := h.exchange(ctx, ev.Session, in)
	if err != nil {
		if h.failsClosed(err) {
			return hooks.StopAction{Kind: hooks.KindBlock, Reason: h.failClosedReason(err)}, err
		}
		return hooks.StopAction{Kind: hooks.KindContinue}, err
	}
	out := hooks.StopAction{Kind: hooks.KindContinue, AdditionalContext: strings.Join(v.contexts(), "\n"), Halt: v.halt()}
	if blocked, reason := v.topBlock(); blocked || v.exit2 {
		out.Kind = hooks.KindBlock
		out.Reason = v.blockReason(reason)
	}
	return out, nil
}

func (h *ExternalHook) PostToolBatch(ctx context.Context, ev hooks.PostToolBatchEvent) (hooks.BatchAction, error) {
	if !h.HandlesEvent(hooks.EventPostToolBatch) || !h.matchesSubject("", false) {
		return hooks.BatchAction{Kind: hooks.KindContinue}, nil
	}
	in := h.input(ev.Session)
	calls := make([]any, 0, len(ev.Calls))
	for _, c := range ev.Calls {
		calls = append(calls, map[string]any{
			"tool_name":     hookToolName(h.dialect, c.ToolName),
			"tool_input":    hookToolInput(h.dialect, c.ToolName, hooks.CloneArgs(c.ToolInput), ev.WorkspaceRoot),
			"tool_use_id":   c.CallID,
			"tool_response": c.Content,
		})
	}
	in["tool_calls"] = calls
	v, err := h.exchange(ctx, ev.Session, in)
	if err != nil {
		if h.failsClosed(err) {
			return hooks.BatchAction{Kind: hooks.KindBlock, Reason: h.failClosedReason(err)}, err
		}
		return hooks.BatchAction{Kind: hooks.KindContinue}, err
	}
	out := hooks.BatchAction{Kind: hooks.KindContinue, AdditionalContext: strings.Join(v.contexts(), "\n"), Halt: v.halt()}
	if blocked, reason := v.topBlock(); blocked || v.exit2 {
		out.Kind = hooks.KindBlock
		out.Reason = v.blockReason(reason)
	}
	return out, nil
}

func (h *ExternalHook) PermissionDenied(ctx context.Context, ev hooks.PermissionDeniedEvent) (hooks.DeniedAction, error) {
	if !h.HandlesEvent(hooks.EventPermissionDenied) || !h.matchesTool(ev.ToolName, ev.ToolInput, ev.WorkspaceRoot) {
		return hooks.DeniedAction{}, nil
	}
	in := h.input(ev.Session)
	h.toolInput(in, ev.Session, ev.ToolName, ev.CallID, ev.ToolInput)
	in["reason"] = ev.Reason
	v, err := h.exchange(ctx, ev.Session, in)
	if err != nil {
		return hooks.DeniedAction{}, err
	}
	// Exit code and stderr are ignored: the denial already happened.
	return hooks.DeniedAction{Retry: v.hso().Retry, AdditionalContext: strings.Join(v.contexts(), "\n")}, nil
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
