package claudecode

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fenixrt/fenix/hooks"
)

var _ hooks.ElicitationHook = (*ExternalHook)(nil)

// Elicitation runs the hook when an MCP server asks for input during a
// call; the matcher matches the server's name. The hook answers in the
// user's place through hookSpecificOutput.action ("accept" with content,
// "decline", "cancel"); exit 2, a decision "block" or continue: false
// decline; silence leaves the question to a person.
func (h *ExternalHook) Elicitation(ctx context.Context, ev hooks.ElicitationEvent) (hooks.ElicitationAction, error) {
	if !h.Applies(hooks.EventElicitation, ev) {
		return hooks.ElicitationAction{}, nil
	}
	in := h.elicitationInput(ev.Session, ev.ServerName, ev.Mode, ev.ElicitationID, ev.ToolName, ev.CallID)
	in["message"] = ev.Message
	if ev.Mode != hooks.ElicitModeURL && ev.RequestedSchema != nil {
		in["requested_schema"] = hooks.CloneArgs(ev.RequestedSchema)
	}
	if ev.URL != "" {
		in["url"] = ev.URL
	}
	return h.elicitationAnswer(ctx, ev.Session, in)
}

// ElicitationResult shows the hook the answer about to go back to the
// server (content only for an accept, as Claude Code sends it); its
// hookSpecificOutput.action and content replace the answer, exit 2 turns
// it into a decline.
func (h *ExternalHook) ElicitationResult(ctx context.Context, ev hooks.ElicitationResultEvent) (hooks.ElicitationAction, error) {
	if !h.Applies(hooks.EventElicitationResult, ev) {
		return hooks.ElicitationAction{}, nil
	}
	in := h.elicitationInput(ev.Session, ev.ServerName, ev.Mode, ev.ElicitationID, ev.ToolName, ev.CallID)
	in["action"] = ev.Action
	if ev.Action == hooks.ElicitAccept && ev.Content != nil {
		in["content"] = hooks.CloneArgs(ev.Content)
	}
	return h.elicitationAnswer(ctx, ev.Session, in)
}

// elicitationInput is the event JSON both elicitation events share:
// Claude Code's fields, then the call the server asked during (Fenix's).
func (h *ExternalHook) elicitationInput(s hooks.Session, server, mode, id, tool, callID string) map[string]any {
	in := h.input(s)
	if mode == "" {
		mode = hooks.ElicitModeForm // MCP's default
	}
	in["mcp_server_name"] = server
	in["mode"] = mode
	if id != "" {
		in["elicitation_id"] = id
	}
	if tool != "" {
		in["tool_name"] = hookToolName(h.dialect, tool)
	}
	if callID != "" {
		in["tool_use_id"] = callID
	}
	return in
}

// elicitationAnswer runs the hook and reads its answer. A failure has no
// opinion (a person is asked, the answer stands) unless the hook fails
// closed, which declines.
func (h *ExternalHook) elicitationAnswer(ctx context.Context, s hooks.Session, in map[string]any) (hooks.ElicitationAction, error) {
	v, err := h.exchange(ctx, s, in)
	if err != nil {
		if h.failsClosed(err) {
			return declined(h.failClosedReason(err)), err
		}
		return hooks.ElicitationAction{}, err
	}
	if v.exit2 {
		return declined(firstNonEmpty(v.stderr, fmt.Sprintf("hook %q declined the elicitation (exit 2)", h.name))), nil
	}
	if halt := v.halt(); halt != nil {
		// An answer cannot end the turn: the question is declined, and
		// the unhonoured stop shows in the hook's decision.
		return declined(halt.Reason), fmt.Errorf("hook %q asked to stop (continue: false) on %s: the elicitation is declined, the turn is not ended", h.name, h.eventName)
	}
	if blocked, reason := v.topBlock(); blocked {
		return declined(firstNonEmpty(reason, fmt.Sprintf("hook %q declined the elicitation (decision: block)", h.name))), nil
	}
	hso := v.hso()
	switch hso.Action {
	case "":
		return hooks.ElicitationAction{}, nil
	case hooks.ElicitDecline, hooks.ElicitCancel:
		// Content is read only with an accept, as in Claude Code.
		return hooks.ElicitationAction{Action: hso.Action}, nil
	case hooks.ElicitAccept:
		content, err := elicitationContent(hso.Content)
		if err != nil {
			return hooks.ElicitationAction{}, fmt.Errorf("hook %q: hookSpecificOutput.content: %w", h.name, err)
		}
		return hooks.ElicitationAction{Action: hooks.ElicitAccept, Content: content}, nil
	}
	return hooks.ElicitationAction{}, fmt.Errorf("hook %q: hookSpecificOutput.action %q is not accept, decline or cancel", h.name, hso.Action)
}

func declined(reason string) hooks.ElicitationAction {
	return hooks.ElicitationAction{Action: hooks.ElicitDecline, Reason: reason}
}

// elicitationContent decodes an accept's content: absent or null, or an
// object of the form's values.
func elicitationContent(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var content map[string]any
	if err := json.Unmarshal(raw, &content); err != nil {
		return nil, fmt.Errorf("want an object of the form's values: %w", err)
	}
	return content, nil
}
