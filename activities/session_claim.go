package activities

import (
	"context"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// Claim modes of SessionClaim.
const (
	// ClaimStart asks whether the conversation's session must start (or
	// resume) and fires conversation-scoped SessionStart hooks if so.
	ClaimStart = "start"
	// ClaimTouch only keeps the conversation's session from expiring.
	ClaimTouch = "touch"
)

// SessionClaim ties a run to its conversation's session (fenix-shape 6).
type SessionClaim struct {
	ConversationID string `json:"conversation_id"`
	// UpdateID derives from the calling run, so a retried claim gets the
	// session's first answer again.
	UpdateID      string `json:"update_id"`
	Mode          string `json:"mode"`
	WorkspaceRoot string `json:"workspace_root,omitempty"`
	Cwd           string `json:"cwd,omitempty"`
}

// SessionClaimer answers claims; the worker's answers from a per-worker
// cache and asks the conversation's session workflow only when its entry
// is missing or stale. Source is SourceStartup, SourceResume or "" (the
// session is already going); Cached reports an answer from the cache.
type SessionClaimer interface {
	Claim(ctx context.Context, c SessionClaim) (source string, cached bool, err error)
}

// claimSession runs the claim, if any, and returns the source the
// conversation-scoped SessionStart hooks must fire with ("" for none).
// A claim that fails is traced, never fatal: the run goes on without
// conversation hooks rather than fail over its session's bookkeeping.
func (a *Activities) claimSession(ctx context.Context, c *SessionClaim, trace contract.TraceEntry) string {
	if c == nil {
		return ""
	}
	if !a.hookRegistry().NeedsConversationSession() {
		// No hook follows the conversation: nothing to start or end.
		trace.Fields["session_claim"] = "no conversation hooks"
		return ""
	}
	if a.Sessions == nil {
		// No session bookkeeping (tests, tools without a worker): every
		// claim starts a session, the behaviour before conversations.
		trace.Fields["session_claim"] = "no session claimer"
		if c.Mode == ClaimStart {
			return hooks.SourceStartup
		}
		return ""
	}
	src, cached, err := a.Sessions.Claim(ctx, *c)
	if err != nil {
		trace.Fields["session_claim_error"] = err.Error()
		if a.Logger != nil {
			a.Logger.Warn("conversation session claim failed", "conversation_id", c.ConversationID, "error", err)
		}
		return ""
	}
	trace.Fields["session_cached"] = cached
	if src != "" {
		trace.Fields["session_source"] = src
	}
	if c.Mode != ClaimStart {
		return ""
	}
	return src
}

// mergeSummary appends a second run of the same event's hooks.
func mergeSummary(a, b hooks.Summary) hooks.Summary {
	a.Decisions = append(a.Decisions, b.Decisions...)
	switch {
	case a.AdditionalContext == "":
		a.AdditionalContext = b.AdditionalContext
	case b.AdditionalContext != "":
		a.AdditionalContext += "\n" + b.AdditionalContext
	}
	if a.Halt == nil {
		a.Halt = b.Halt
	}
	return a
}
