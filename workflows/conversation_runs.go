package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// How a run takes part in its conversation's session (fenix-shape 6):
// Fenix dialect hooks get the run's SessionStart/SessionStop, Claude
// dialect hooks the conversation's, decided by the ConversationSession
// workflow through a session claim in the SessionStart stage (a local
// activity answered from a per-worker cache in the steady state). Runs of
// older shapes, and runs without a conversation_id, fire every hook per
// run as before.

// conversationSessions reports whether this run's Claude dialect hooks
// follow the conversation.
func (s *session) conversationSessions() bool {
	return s.shape >= shapeConversationSessions && s.id.ConversationID != ""
}

// bindConversationSession gives hooks the conversation as their session
// and a subagent its parent's session.
func (s *session) bindConversationSession(a contract.Assignment) {
	if !s.conversationSessions() {
		return
	}
	s.gov.hookSession.ConversationSessionID = a.ConversationID
	if a.AgentContext.IsSubagent && a.AgentContext.ParentSessionID != "" {
		s.gov.hookSession.Parent = &hooks.ParentSession{SessionID: a.AgentContext.ParentSessionID}
	}
}

// sessionClaim ties this run to its conversation's session; the update ID
// derives from the run so a retried claim gets the same answer.
func (s *session) sessionClaim(mode, what string) *activities.SessionClaim {
	hs := s.gov.hookSession
	return &activities.SessionClaim{ConversationID: s.id.ConversationID, Mode: mode,
		UpdateID: workflow.GetInfo(s.ctx).WorkflowExecution.RunID + "/" + what, WorkspaceRoot: hs.WorkspaceRoot, Cwd: hs.Cwd}
}

// scopeSessionStart sends the run's SessionStart to Fenix dialect hooks
// and, in a main agent, claims the conversation's session: the stage then
// fires Claude dialect SessionStart hooks only when the session starts or
// resumes. A subagent fires none of the conversation's (Claude Code fires
// SubagentStart in the parent instead).
func (s *session) scopeSessionStart(in *activities.LifecycleHooksInput) {
	if !s.conversationSessions() {
		return
	}
	in.SessionScope = hooks.ScopeRun
	if !s.gov.hookSession.IsSubagent {
		in.Claim = s.sessionClaim(activities.ClaimStart, "session-start")
		return
	}
	// A subagent's commands run in its parent's session environment.
	in.Claim = s.sessionClaim(activities.ClaimRead, "session-env")
}

// scopeSessionStop keeps the run's end from Claude dialect SessionEnd
// hooks: the conversation's session ends on its own.
func (s *session) scopeSessionStop(in *activities.LifecycleHooksInput) {
	if s.conversationSessions() {
		in.SessionScope = hooks.ScopeRun
	}
}

// scopeResume: a continued main agent turn fires SessionStart "resume"
// to every hook once and touches the conversation's session; a continued
// subagent only to Fenix dialect hooks.
func (s *session) scopeResume(in *activities.LifecycleHooksInput) {
	if !s.conversationSessions() {
		return
	}
	if s.gov.hookSession.IsSubagent {
		in.SessionScope = hooks.ScopeRun
		in.Claim = s.sessionClaim(activities.ClaimRead, "session-env")
		return
	}
	in.Claim = s.sessionClaim(activities.ClaimTouch, "resume")
}

// touchSession keeps a long turn's session from idling out: each step's
// StepComplete stage touches it (from the cache, mostly).
func (s *session) touchSession(in *activities.LifecycleHooksInput, step int) {
	if s.conversationSessions() && !s.gov.hookSession.IsSubagent {
		in.Claim = s.sessionClaim(activities.ClaimTouch, fmt.Sprintf("step-%d", step))
	}
}

// parentSessionForChild is what a subagent gets as ParentSessionID.
func (s *session) parentSessionForChild() string {
	if !s.conversationSessions() {
		return ""
	}
	return s.gov.hookSession.SessionID
}

// sessionCompacted fires conversation-scoped SessionStart "compact" after
// a main agent's context was compacted, as Claude Code does; its context
// reaches the model's next call.
func (s *session) sessionCompacted() {
	if !s.conversationSessions() || s.gov.hookSession.IsSubagent {
		return
	}
	ev := hooks.SessionStartEvent{Session: s.hookSession(), Source: hooks.SourceCompact}
	s.currentStage = string(hooks.EventSessionStart)
	sum := s.lifecycle(s.stageCtx, activities.LifecycleHooksInput{SessionStart: &ev, SessionScope: hooks.ScopeConversation})
	s.addModelContext(sum.AdditionalContext)
	s.gov.sessionEnv = sum.SessionEnv
}

// sessionEnvFor is what a call's ExecuteTool carries of the session
// environment: only the shell tools run it, so only their calls record it.
func (s *session) sessionEnvFor(tool string) string {
	if tool == shellTool || tool == processTool {
		return s.gov.sessionEnv
	}
	return ""
}

// shellTool is the tool Claude Code's Bash maps to.
const shellTool = "exec_command"
