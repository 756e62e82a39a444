package claudecode

import "github.com/fenixrt/fenix/hooks"

var _ hooks.Selective = (*ExternalHook)(nil)

// Applies reports whether the hook's matcher and "if" rule select this
// occurrence of an event, so the registry lists only the hooks that ran:
// tool events by tool and "if" rule, the prompt, batch and stop events,
// session, subagent, compaction, error and notification events by their
// matcher's subject (feedbackSubject), and elicitation events by the MCP
// server's name.
func (h *ExternalHook) Applies(ev hooks.Event, payload any) bool {
	if !h.HandlesEvent(ev) {
		return false
	}
	switch e := payload.(type) {
	case hooks.PreToolUseEvent:
		return h.matchesTool(e.ToolName, e.ToolInput, e.WorkspaceRoot)
	case hooks.PostToolUseEvent:
		return h.matchesTool(e.ToolName, e.ToolInput, e.WorkspaceRoot)
	case hooks.PermissionRequestEvent:
		return h.matchesTool(e.ToolName, e.ToolInput, e.WorkspaceRoot)
	case hooks.PermissionDeniedEvent:
		return h.matchesTool(e.ToolName, e.ToolInput, e.WorkspaceRoot)
	case hooks.PostToolUseFailureEvent:
		return h.matchesTool(e.ToolName, e.ToolInput, e.WorkspaceRoot)
	case hooks.UserPromptSubmitEvent:
		// A subagent's task is not a prompt the user submitted.
		if h.dialect == DialectClaude && e.IsSubagent && e.Parent != nil {
			return false
		}
		return h.matchesSubject("", false)
	case hooks.PostToolBatchEvent:
		return h.matchesSubject("", false)
	case hooks.ElicitationEvent:
		return h.matchesSubject(e.ServerName, true)
	case hooks.ElicitationResultEvent:
		return h.matchesSubject(e.ServerName, true)
	case hooks.ErrorEvent:
		if h.spec.modelFailure && !h.hearsOfFailure(e) {
			return false
		}
	case hooks.StopEvent:
		switch {
		case h.spec.scope == mainAgents && e.IsSubagent, h.spec.scope == subagents && !e.IsSubagent:
			return false
		case h.spec.scope == subagents:
			return h.matchesSubject(e.Profile, true)
		}
		return h.matchesSubject("", false)
	}
	if _, subject, hasSubject, ok := h.feedbackSubject(payload); ok {
		return h.matchesSubject(subject, hasSubject)
	}
	return true
}
