package hooks

import "slices"

// SessionScope says which hooks a SessionStart or SessionStop event is
// for. Claude Code's session is the conversation: its SessionStart fires
// once per conversation and its SessionEnd when the conversation ends,
// while the seed's (Fenix) SessionStart/SessionStop bracket every run.
// Since fenix-shape 6 a run fires the per-run events to the run scope and
// the conversation's session tracks the conversation scope.
type SessionScope string

const (
	// ScopeAll reaches every hook: runs of older shapes, and conversations
	// without a conversation_id.
	ScopeAll SessionScope = ""
	// ScopeRun reaches the hooks that are not ConversationScoped.
	ScopeRun SessionScope = "run"
	// ScopeConversation reaches only ConversationScoped hooks.
	ScopeConversation SessionScope = "conversation"
)

// ConversationScoped is implemented by hooks whose SessionStart and
// SessionStop follow the conversation rather than the run (Claude Code
// dialect settings-file hooks).
type ConversationScoped interface {
	ConversationScoped() bool
}

// isConversationScoped reports whether h follows the conversation.
func isConversationScoped(h AgentHook) bool {
	cs, ok := h.(ConversationScoped)
	return ok && cs.ConversationScoped()
}

// scopeOf is the session scope of a SessionStart or SessionStop payload;
// other events reach every hook.
func scopeOf(payload any) SessionScope {
	switch e := payload.(type) {
	case SessionStartEvent:
		return e.Scope
	case SessionStopEvent:
		return e.Scope
	}
	return ScopeAll
}

// inScope reports whether a hook is meant to see payload.
func inScope(h AgentHook, payload any) bool {
	switch scopeOf(payload) {
	case ScopeRun:
		return !isConversationScoped(h)
	case ScopeConversation:
		return isConversationScoped(h)
	}
	return true
}

// ParentSession is the session a subagent works for: Claude Code's
// SubagentStop and the subagent's tool events carry the parent's
// session_id and transcript_path, with the subagent as agent_id.
type ParentSession struct {
	// SessionID is the parent run's session (its workflow ID): where its
	// transcript file is.
	SessionID string `json:"session_id"`
	// TranscriptPath is the parent's transcript file, set by the worker.
	TranscriptPath string `json:"transcript_path,omitempty"`
}

// NeedsConversationSession reports whether a conversation-scoped hook
// handles SessionStart or SessionStop: then a run must claim its
// conversation's session in its SessionStart stage (so the session can
// end with SessionEnd hooks), even when no other hook acts on the stage.
func (r *Registry) NeedsConversationSession() bool {
	for _, ev := range []Event{EventSessionStart, EventSessionStop} {
		for _, e := range r.subscribers(ev) {
			if isConversationScoped(e.hook) {
				return true
			}
		}
	}
	return false
}

// SubscribedInConversation is Subscribed for a run whose conversation-
// scoped hooks follow the conversation (fenix-shape 6): those hooks do
// not act on the run's SessionStop, and the run's SessionStart stage (which
// claims the conversation's session) and StepComplete stages (which keep
// it from idling out) are needed whenever some hook follows the
// conversation.
func (r *Registry) SubscribedInConversation(mode, tool string, evs ...Event) []Event {
	out := r.subscribed(mode, tool, func(h AgentHook, ev Event) bool {
		return ev == EventSessionStop && isConversationScoped(h)
	}, evs)
	for i, ev := range evs {
		if (ev != EventSessionStart && ev != EventStepComplete) || slices.Contains(out, ev) || !r.NeedsConversationSession() {
			continue
		}
		// Keep evs' order: the event goes before the events after it.
		at := len(out)
		for j, o := range out {
			if slices.Index(evs, o) > i {
				at = j
				break
			}
		}
		out = slices.Insert(out, at, ev)
	}
	return out
}
