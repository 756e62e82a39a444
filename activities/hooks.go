package activities

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// Trace hooks of the lifecycle-hook stages.
const (
	StagePreToolUse         = "pre_tool_use"
	StagePostToolUse        = "post_tool_use"
	StagePermissionRequest  = "permission_request"
	StagePermissionDecision = "permission_decision"
	StageUserPromptSubmit   = "user_prompt_submit"
	StageStop               = "stop"
	StagePostToolBatch      = "post_tool_batch"
	StagePermissionDenied   = "permission_denied"
)

func (a *Activities) hookRegistry() *hooks.Registry {
	if a.LiveHooks != nil {
		if r := a.LiveHooks.Load(); r != nil {
			return r
		}
	}
	if a.Hooks == nil {
		return hooks.NewRegistry()
	}
	return a.Hooks
}

// withWorkspace fills the session's workspace from the worker default, so
// command hooks run in the same directory the tools do, checks it (and
// a different cwd) against the workspace bases — a hook never runs in, or
// is pointed at, a directory the tools could not open — and sets the
// permission mode.
func (a *Activities) withWorkspace(s hooks.Session) (hooks.Session, error) {
	given := s.WorkspaceRoot
	root, err := a.resolveWorkspaceRoot(given)
	if err != nil {
		return s, err
	}
	s.WorkspaceRoot = root
	switch {
	case s.Cwd == "" || s.Cwd == given:
		s.Cwd = root
	default:
		if s.Cwd, err = a.resolveWorkspaceRoot(s.Cwd); err != nil {
			return s, err
		}
	}
	if s.PermissionMode == "" {
		s.PermissionMode = hooks.PermissionModeDefault
	}
	return s, nil
}

// hookSession prepares an event's session for the hooks of ev: workspace
// and permission mode, and, when a subscribed hook reads it, the
// transcript materialized as a JSONL file (from the session's inline
// messages or context-store reference) with its path in TranscriptPath.
// The message set itself never reaches the hooks.
func (a *Activities) hookSession(ctx context.Context, ev hooks.Event, s hooks.Session) (hooks.Session, error) {
	s, err := a.withWorkspace(s)
	if err != nil {
		return s, err
	}
	source := s.Transcript
	s.Transcript = nil
	if s.Parent != nil && a.Transcripts != nil {
		parent := *s.Parent
		if parent.TranscriptPath, err = a.Transcripts.Ensure(parent.SessionID); err != nil {
			return s, err
		}
		s.Parent = &parent
	}
	if a.Transcripts == nil || s.SessionID == "" || !a.hookRegistry().WantsTranscript(ev) {
		return s, nil
	}
	if source == nil {
		// An event of the conversation itself (its SessionEnd after the
		// idle timeout) reads the conversation's latest transcript.
		if path, ok := a.Transcripts.Latest(s.ConversationSessionID); ok && s.ConversationSessionID != "" && !s.IsSubagent {
			s.TranscriptPath = path
			return s, nil
		}
		path, err := a.Transcripts.Ensure(s.SessionID)
		if err != nil {
			return s, err
		}
		s.TranscriptPath = path
		return s, nil
	}
	path, err := a.Transcripts.WriteSet(s, *source, func() ([]contract.Message, error) {
		return contextstore.Unpack(ctx, a.Contexts, *source)
	})
	if err != nil {
		return s, err
	}
	s.TranscriptPath = path
	return s, nil
}

// LifecycleHooksInput carries exactly one fire-and-forget event.
type LifecycleHooksInput struct {
	SessionStart       *hooks.SessionStartEvent       `json:"session_start,omitempty"`
	SessionStop        *hooks.SessionStopEvent        `json:"session_stop,omitempty"`
	Error              *hooks.ErrorEvent              `json:"error,omitempty"`
	PostToolUseFailure *hooks.PostToolUseFailureEvent `json:"post_tool_use_failure,omitempty"`
	StepComplete       *hooks.StepCompleteEvent       `json:"step_complete,omitempty"`
	SubagentStart      *hooks.SubagentStartEvent      `json:"subagent_start,omitempty"`
	SubagentStop       *hooks.SubagentStopEvent       `json:"subagent_stop,omitempty"`
	Notification       *hooks.NotificationEvent       `json:"notification,omitempty"`
	// SessionScope is which hooks SessionStart or SessionStop reach
	// (fenix-shape 6); empty reaches every hook.
	SessionScope hooks.SessionScope `json:"session_scope,omitempty"`
	// Claim ties the run to its conversation's session (fenix-shape 6).
	Claim *SessionClaim `json:"claim,omitempty"`
	// TurnEvents asks a SessionStart stage which of the turn's session
	// and turn events have a hook (fenix-shape 9): the agent turn leaves
	// the others' stages out.
	TurnEvents bool `json:"turn_events,omitempty"`
	// ConversationSessions tells the TurnEvents answer that the run's
	// conversation-scoped hooks follow its conversation (fenix-shape 6).
	ConversationSessions bool `json:"conversation_sessions,omitempty"`
}

// Event names the event the input carries.
func (in LifecycleHooksInput) Event() hooks.Event {
	switch {
	case in.SessionStart != nil:
		return hooks.EventSessionStart
	case in.SessionStop != nil:
		return hooks.EventSessionStop
	case in.Error != nil:
		return hooks.EventError
	case in.PostToolUseFailure != nil:
		return hooks.EventPostToolUseFailure
	case in.StepComplete != nil:
		return hooks.EventStepComplete
	case in.SubagentStart != nil:
		return hooks.EventSubagentStart
	case in.SubagentStop != nil:
		return hooks.EventSubagentStop
	case in.Notification != nil:
		return hooks.EventNotification
	}
	return ""
}

// HookSummaryResult is what a fire-and-forget event's hooks did.
type HookSummaryResult struct {
	Summary hooks.Summary       `json:"summary"`
	Trace   contract.TraceEntry `json:"trace"`
	// Turn answers TurnEvents.
	Turn *HookSubscription `json:"turn,omitempty"`
}

// RunLifecycleHooks runs every hook for one fire-and-forget event. Hook
// failures are reported in the trace, never fatal to the run; context the
// hooks gave for the model and a request to end the turn come back in the
// summary.
func (a *Activities) RunLifecycleHooks(ctx context.Context, in LifecycleHooksInput) (HookSummaryResult, error) {
	r := a.hookRegistry()
	ev := in.Event()
	if ev == "" {
		return fail[HookSummaryResult](fmt.Errorf("RunLifecycleHooks got no event"))
	}
	session := func(s hooks.Session) (hooks.Session, error) { return a.hookSession(ctx, ev, s) }
	var sum hooks.Summary
	var err error
	claimTrace := contract.TraceEntry{Fields: map[string]any{}}
	switch {
	case in.SessionStart != nil:
		e := *in.SessionStart
		e.Scope = in.SessionScope
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunSessionStart(ctx, e)
			// Claude Code dialect hooks, the ones that write
			// $CLAUDE_ENV_FILE, heard it unless it was the run's alone.
			fired := e.Scope != hooks.ScopeRun
			claim := a.claimSession(ctx, in.Claim, claimTrace)
			if claim.Source != "" {
				conv := e
				conv.Source, conv.Scope = claim.Source, hooks.ScopeConversation
				sum = mergeSummary(sum, r.RunSessionStart(ctx, conv))
				fired = true
			}
			sum.SessionEnv = a.sessionEnv(ctx, in, e.Session, sum.SessionEnv, fired, claim, claimTrace)
		}
	case in.SessionStop != nil:
		e := *in.SessionStop
		e.Scope = in.SessionScope
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunSessionStop(ctx, e)
		}
	case in.Error != nil:
		e := *in.Error
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunError(ctx, e)
		}
	case in.PostToolUseFailure != nil:
		e := *in.PostToolUseFailure
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunPostToolUseFailure(ctx, e)
		}
	case in.StepComplete != nil:
		e := *in.StepComplete
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunStepComplete(ctx, e)
			a.claimSession(ctx, in.Claim, claimTrace)
		}
	case in.SubagentStart != nil:
		e := *in.SubagentStart
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunSubagentStart(ctx, e)
		}
	case in.SubagentStop != nil:
		e := *in.SubagentStop
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunSubagentStop(ctx, e)
		}
	case in.Notification != nil:
		e := a.withInboxLink(ctx, *in.Notification)
		if e.Session, err = session(e.Session); err == nil {
			sum = r.RunNotification(ctx, e)
		}
	}
	if err != nil {
		return fail[HookSummaryResult](err)
	}
	if err := hooks.EssentialErr(ev, sum.Decisions); err != nil {
		// A failure's or a session stop's audit row is not stored.
		return fail[HookSummaryResult](fenixerr.Transient(err))
	}
	a.recordDecisions(ev, sum.Decisions)
	contextBudget := 0
	if in.PostToolUseFailure != nil {
		contextBudget = in.PostToolUseFailure.ContextBudget
	}
	boundSummary(&sum, contextBudget)
	trace := summaryTrace(ev, sum)
	if in.SessionScope != hooks.ScopeAll {
		trace.Fields["session_scope"] = string(in.SessionScope)
	}
	for k, v := range claimTrace.Fields {
		trace.Fields[k] = v
	}
	res := HookSummaryResult{Summary: sum, Trace: trace}
	if in.TurnEvents && in.SessionStart != nil {
		res.Turn = a.turnSubscription(in.ConversationSessions)
		trace.Fields["turn_hook_events"] = res.Turn.Events
	}
	return res, nil
}

func (a *Activities) recordDecisions(ev hooks.Event, decisions []hooks.HookDecision) {
	for _, d := range decisions {
		a.metrics().HookDecision(string(ev), string(d.Kind))
	}
}

func summaryTrace(ev hooks.Event, sum hooks.Summary) contract.TraceEntry {
	e := contract.Trace(string(ev), "hooks", decisionsOrEmpty(sum.Decisions))
	if err := sum.Err(); err != nil {
		e.Fields["hook_errors"] = err.Error()
	}
	addContextAndHalt(e, sum.AdditionalContext, sum.Halt)
	if sum.Blocked != "" {
		e.Fields["blocked"] = sum.Blocked
	}
	return e
}

// addContextAndHalt records a stage's context for the model and a request
// to end the turn in its trace entry.
func addContextAndHalt(e contract.TraceEntry, additionalContext string, halt *hooks.Halt) {
	if additionalContext != "" {
		e.Fields["additional_context"] = preview(additionalContext)
	}
	if halt != nil {
		e.Fields["halt"] = halt.Reason
		e.Fields["halted_by"] = halt.Hook
	}
}

func decisionsOrEmpty(d []hooks.HookDecision) []hooks.HookDecision {
	if d == nil {
		return []hooks.HookDecision{}
	}
	return d
}

// PreToolUseHooksResult is the aggregated PreToolUse verdict.
type PreToolUseHooksResult struct {
	Result hooks.PreToolUseResult `json:"result"`
	// PolicyFingerprint identifies the policy that made the verdict.
	PolicyFingerprint string              `json:"policy_fingerprint,omitempty"`
	Trace             contract.TraceEntry `json:"trace"`
	// ReachedPath is the file a workspace tool's path argument (after
	// the hooks' updatedInput) led to through symlinks when the rules
	// judged it; ExecuteTool holds the open to it. Empty without path
	// rules.
	ReachedPath string `json:"reached_path,omitempty"`
}

// RunPreToolUseHooks asks every hook about a reviewed call, in order: the
// first Block wins, the last MutateInput wins, contexts accumulate.
func (a *Activities) RunPreToolUseHooks(ctx context.Context, ev hooks.PreToolUseEvent) (PreToolUseHooksResult, error) {
	var err error
	if ev.Session, err = a.hookSession(ctx, hooks.EventPreToolUse, ev.Session); err != nil {
		return fail[PreToolUseHooksResult](err)
	}
	ev.ReadOnly = a.readOnly(ev.ToolName)
	registry := a.hookRegistry()
	fingerprint := registry.PolicyFingerprint(ev.AllowedToolNames)
	res := registry.RunPreToolUse(ctx, ev)
	if err := checkRewrittenArgs(ev, res); err != nil {
		return fail[PreToolUseHooksResult](err)
	}
	boundPreToolUse(&res, ev.ContextBudget)
	a.recordDecisions(hooks.EventPreToolUse, res.Decisions)
	trace := contract.Trace(StagePreToolUse,
		"tool_name", ev.ToolName,
		"call_id", ev.CallID,
		"action", string(res.Action.Kind),
		"decided_by", res.DecidedBy,
		"args_mutated", res.ArgsMutated,
		"hooks", decisionsOrEmpty(res.Decisions),
		"policy_fingerprint", fingerprint,
	)
	if res.Action.Reason != "" {
		trace.Fields["reason"] = res.Action.Reason
	}
	if p := res.Permission; p != nil {
		trace.Fields["permission_rule"] = map[string]any{"decision": string(p.Decision), "rule": p.Rule, "source": p.Source}
	}
	addContextAndHalt(trace, res.AdditionalContext, res.Halt)
	if res.PermissionRequired != nil {
		trace.Fields["permission"] = res.PermissionRequired.Permission
		if res.PermissionRequired.Deferred {
			trace.Fields["deferred"] = true
		}
	}
	args := ev.ToolInput
	if res.ArgsMutated {
		args = res.FinalArgs
	}
	return PreToolUseHooksResult{Result: res, PolicyFingerprint: fingerprint, Trace: trace,
		ReachedPath: a.reachedPath(ev.WorkspaceRoot, ev.ToolName, args)}, nil
}

// readOnly says whether this worker's registry marks the tool read-only;
// one it cannot look up (an MCP server that is down) is not.
func (a *Activities) readOnly(tool string) bool {
	if a.Tools == nil {
		return false
	}
	def, ok := a.Tools.Lookup(tool)
	return ok && def.ReadOnly
}

// PermissionRequestHooksResult is whether a hook settled a permission.
type PermissionRequestHooksResult struct {
	Result hooks.PermissionRequestResult `json:"result"`
	// PolicyFingerprint identifies the policy that made the verdict.
	PolicyFingerprint string              `json:"policy_fingerprint,omitempty"`
	Trace             contract.TraceEntry `json:"trace"`
}

// RunPermissionRequestHooks lets hooks settle a PermissionRequired before a
// human is asked: the first deny wins, else the first allow.
func (a *Activities) RunPermissionRequestHooks(ctx context.Context, ev hooks.PermissionRequestEvent) (PermissionRequestHooksResult, error) {
	var err error
	if ev.Session, err = a.hookSession(ctx, hooks.EventPermissionRequest, ev.Session); err != nil {
		return fail[PermissionRequestHooksResult](err)
	}
	registry := a.hookRegistry()
	fingerprint := registry.PolicyFingerprint(ev.AllowedToolNames)
	res := registry.RunPermissionRequest(ctx, ev)
	boundPermissionRequest(&res)
	a.recordDecisions(hooks.EventPermissionRequest, res.Decisions)
	if res.Settled() {
		a.metrics().PermissionDecision(string(res.Decision.Kind), "hook")
	}
	trace := contract.Trace(StagePermissionRequest,
		"tool_name", ev.ToolName,
		"call_id", ev.CallID,
		"permission", ev.Permission,
		"decision", string(res.Decision.Kind),
		"reason", res.Decision.Reason,
		"decided_by", res.DecidedBy,
		"hooks", decisionsOrEmpty(res.Decisions),
		"policy_fingerprint", fingerprint,
	)
	addContextAndHalt(trace, "", res.Halt)
	return PermissionRequestHooksResult{Result: res, PolicyFingerprint: fingerprint, Trace: trace}, nil
}

// PostToolUseHooksResult is the aggregated PostToolUse verdict.
type PostToolUseHooksResult struct {
	Result hooks.PostToolUseResult `json:"result"`
	Trace  contract.TraceEntry     `json:"trace"`
}

// RunPostToolUseHooks runs every hook on a completed call's projected
// content; the last MutateOutput wins. The audit row is written here, so
// it is written once per call however often this stage is retried.
func (a *Activities) RunPostToolUseHooks(ctx context.Context, ev hooks.PostToolUseEvent) (PostToolUseHooksResult, error) {
	var err error
	if ev.Session, err = a.hookSession(ctx, hooks.EventPostToolUse, ev.Session); err != nil {
		return fail[PostToolUseHooksResult](err)
	}
	res := a.hookRegistry().RunPostToolUse(ctx, ev)
	if err := hooks.EssentialErr(hooks.EventPostToolUse, res.Decisions); err != nil {
		// The call's audit row is not stored: retry the stage rather
		// than hand on a result nothing recorded.
		return fail[PostToolUseHooksResult](fenixerr.Transient(err))
	}
	boundPostToolUse(&res, ev.ContextBudget, ev.ResultBudget)
	a.recordDecisions(hooks.EventPostToolUse, res.Decisions)
	// The policy this stage ran under, as the review's and PreToolUse's
	// record theirs: a run whose stages moved to a worker holding another
	// policy (a rolling change of settings) shows where it changed.
	trace := contract.Trace(StagePostToolUse,
		"tool_name", ev.ToolName,
		"call_id", ev.CallID,
		"mutated", res.Mutated,
		"mutated_by", res.MutatedBy,
		"hooks", decisionsOrEmpty(res.Decisions),
		"policy_fingerprint", a.hookRegistry().PolicyFingerprint(ev.AllowedToolNames),
	)
	addContextAndHalt(trace, res.AdditionalContext, res.Halt)
	return PostToolUseHooksResult{Result: res, Trace: trace}, nil
}
