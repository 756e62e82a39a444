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
	// ClaimRead only asks for the session environment (a subagent, which
	// has no session of its own and must not start or resume one).
	ClaimRead = "read"
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
	// WritesEnv is set by the stage, not the workflow: its SessionStart
	// hooks may write $CLAUDE_ENV_FILE (hooks.Registry.WritesSessionEnv).
	WritesEnv bool `json:"writes_env,omitempty"`
}

// ClaimAnswer is a session's answer to a claim. Source is SourceStartup,
// SourceResume or "" (the session is already going); Env is then the
// session environment its SessionStart hooks wrote; Cached reports an
// answer from the worker's cache.
type ClaimAnswer struct {
	Source string
	Env    string
	Cached bool
}

// SessionClaimer answers claims; the worker's answers from a per-worker
// cache and asks the conversation's session workflow only when its entry
// is missing or stale. SetEnv reports what the SessionStart hooks of the
// run that started (or resumed, or compacted) the session wrote to
// $CLAUDE_ENV_FILE, under an update ID derived from that run.
type SessionClaimer interface {
	Claim(ctx context.Context, c SessionClaim) (ClaimAnswer, error)
	SetEnv(ctx context.Context, conversationID, updateID, env string) error
}

// claimSession runs the claim, if any, and returns the source the
// conversation-scoped SessionStart hooks must fire with ("" for none) and
// the session environment when they need not. A claim that fails is
// traced, never fatal: the run goes on without conversation hooks rather
// than fail over its session's bookkeeping.
func (a *Activities) claimSession(ctx context.Context, c *SessionClaim, trace contract.TraceEntry) ClaimAnswer {
	if c == nil {
		return ClaimAnswer{}
	}
	if !a.hookRegistry().NeedsConversationSession() {
		// No hook follows the conversation: nothing to start or end.
		trace.Fields["session_claim"] = "no conversation hooks"
		return ClaimAnswer{}
	}
	if a.Sessions == nil {
		// No session bookkeeping (tests, tools without a worker): every
		// claim starts a session, the behaviour before conversations.
		trace.Fields["session_claim"] = "no session claimer"
		if c.Mode == ClaimStart {
			return ClaimAnswer{Source: hooks.SourceStartup}
		}
		return ClaimAnswer{}
	}
	claim := *c
	claim.WritesEnv = c.Mode == ClaimStart && a.hookRegistry().WritesSessionEnv()
	ans, err := a.Sessions.Claim(ctx, claim)
	if err != nil {
		trace.Fields["session_claim_error"] = err.Error()
		if a.Logger != nil {
			a.Logger.Warn("conversation session claim failed", "conversation_id", c.ConversationID, "error", err)
		}
		return ClaimAnswer{}
	}
	trace.Fields["session_cached"] = ans.Cached
	if ans.Source != "" {
		trace.Fields["session_source"] = ans.Source
	}
	if c.Mode != ClaimStart {
		ans.Source = ""
	}
	return ans
}

// sessionEnv is the session environment the run's commands get from a
// SessionStart stage on: what the Claude Code dialect hooks that fired
// wrote to $CLAUDE_ENV_FILE (reported to the conversation's session when
// they follow it, so its other runs get it), else what the session's own
// SessionStart wrote (the claim's answer).
func (a *Activities) sessionEnv(ctx context.Context, in LifecycleHooksInput, s hooks.Session, written string, fired bool, claim ClaimAnswer, trace contract.TraceEntry) string {
	env := claim.Env
	if fired {
		env = written
		followsConversation := in.Claim != nil || in.SessionScope == hooks.ScopeConversation
		if followsConversation && s.ConversationSessionID != "" && a.Sessions != nil && a.hookRegistry().WritesSessionEnv() {
			if err := a.Sessions.SetEnv(ctx, s.ConversationSessionID, sessionEnvUpdateID(ctx, in.Claim), env); err != nil {
				trace.Fields["session_env_error"] = err.Error()
				if a.Logger != nil {
					a.Logger.Warn("reporting the session environment failed; the conversation's other runs go on without it",
						"conversation_id", s.ConversationSessionID, "error", err)
				}
			}
		}
	}
	if env != "" {
		trace.Fields["session_env_bytes"] = len(env)
	}
	return env
}

// sessionEnvUpdateID derives the report's update ID from the claim, else
// from the stage's run and activity, so a stage run again reports under
// the same ID.
func sessionEnvUpdateID(ctx context.Context, claim *SessionClaim) string {
	if claim != nil {
		return claim.UpdateID + "/env"
	}
	info, ok := currentActivity(ctx)
	if !ok {
		return ""
	}
	return info.WorkflowExecution.RunID + "/session-env/" + info.ActivityID
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
	if env, err := hooks.JoinSessionEnv(a.SessionEnv, b.SessionEnv); err == nil {
		a.SessionEnv = env
	} else {
		a.SessionEnv = b.SessionEnv
	}
	return a
}
