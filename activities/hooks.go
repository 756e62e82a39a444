package activities

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// Trace hooks of the lifecycle-hook stages.
const (
	StagePreToolUse         = "pre_tool_use"
	StagePostToolUse        = "post_tool_use"
	StagePermissionRequest  = "permission_request"
	StagePermissionDecision = "permission_decision"
)

func (a *Activities) hookRegistry() *hooks.Registry {
	if a.Hooks == nil {
		return hooks.NewRegistry()
	}
	return a.Hooks
}

// withWorkspace fills the session's workspace from the worker default, so
// command hooks run in the same directory the tools do, and checks it (and
// a different cwd) against the workspace bases: a hook never runs in, or
// is pointed at, a directory the tools could not open.
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
	}
	return ""
}

// HookSummaryResult is what a fire-and-forget event's hooks did.
type HookSummaryResult struct {
	Summary hooks.Summary       `json:"summary"`
	Trace   contract.TraceEntry `json:"trace"`
}

// RunLifecycleHooks runs every hook for one fire-and-forget event. Hook
// failures are reported in the trace, never fatal to the run.
func (a *Activities) RunLifecycleHooks(ctx context.Context, in LifecycleHooksInput) (HookSummaryResult, error) {
	r := a.hookRegistry()
	var sum hooks.Summary
	var err error
	switch {
	case in.SessionStart != nil:
		ev := *in.SessionStart
		if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
			return fail[HookSummaryResult](err)
		}
		sum = r.RunSessionStart(ctx, ev)
	case in.SessionStop != nil:
		ev := *in.SessionStop
		if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
			return fail[HookSummaryResult](err)
		}
		sum = r.RunSessionStop(ctx, ev)
	case in.Error != nil:
		ev := *in.Error
		if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
			return fail[HookSummaryResult](err)
		}
		sum = r.RunError(ctx, ev)
	case in.PostToolUseFailure != nil:
		ev := *in.PostToolUseFailure
		if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
			return fail[HookSummaryResult](err)
		}
		sum = r.RunPostToolUseFailure(ctx, ev)
	case in.StepComplete != nil:
		ev := *in.StepComplete
		if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
			return fail[HookSummaryResult](err)
		}
		sum = r.RunStepComplete(ctx, ev)
	case in.SubagentStart != nil:
		ev := *in.SubagentStart
		if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
			return fail[HookSummaryResult](err)
		}
		sum = r.RunSubagentStart(ctx, ev)
	case in.SubagentStop != nil:
		ev := *in.SubagentStop
		if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
			return fail[HookSummaryResult](err)
		}
		sum = r.RunSubagentStop(ctx, ev)
	default:
		return fail[HookSummaryResult](fmt.Errorf("RunLifecycleHooks got no event"))
	}
	return HookSummaryResult{Summary: sum, Trace: summaryTrace(in.Event(), sum)}, nil
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
	return e
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
}

// RunPreToolUseHooks asks every hook about a reviewed call, in order: the
// first Block wins, the last MutateInput wins, contexts accumulate.
func (a *Activities) RunPreToolUseHooks(ctx context.Context, ev hooks.PreToolUseEvent) (PreToolUseHooksResult, error) {
	var err error
	if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
		return fail[PreToolUseHooksResult](err)
	}
	registry := a.hookRegistry()
	fingerprint := registry.PolicyFingerprint(ev.AllowedToolNames)
	res := registry.RunPreToolUse(ctx, ev)
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
	if res.AdditionalContext != "" {
		trace.Fields["additional_context"] = preview(res.AdditionalContext)
	}
	if res.PermissionRequired != nil {
		trace.Fields["permission"] = res.PermissionRequired.Permission
	}
	return PreToolUseHooksResult{Result: res, PolicyFingerprint: fingerprint, Trace: trace}, nil
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
	if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
		return fail[PermissionRequestHooksResult](err)
	}
	registry := a.hookRegistry()
	fingerprint := registry.PolicyFingerprint(ev.AllowedToolNames)
	res := registry.RunPermissionRequest(ctx, ev)
	a.recordDecisions(hooks.EventPermissionRequest, res.Decisions)
	if res.Settled() {
		a.metrics().PermissionDecision(string(res.Decision.Kind), "hook")
	}
	return PermissionRequestHooksResult{Result: res, PolicyFingerprint: fingerprint, Trace: contract.Trace(StagePermissionRequest,
		"tool_name", ev.ToolName,
		"call_id", ev.CallID,
		"permission", ev.Permission,
		"decision", string(res.Decision.Kind),
		"reason", res.Decision.Reason,
		"decided_by", res.DecidedBy,
		"hooks", decisionsOrEmpty(res.Decisions),
		"policy_fingerprint", fingerprint,
	)}, nil
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
	if ev.Session, err = a.withWorkspace(ev.Session); err != nil {
		return fail[PostToolUseHooksResult](err)
	}
	res := a.hookRegistry().RunPostToolUse(ctx, ev)
	a.recordDecisions(hooks.EventPostToolUse, res.Decisions)
	return PostToolUseHooksResult{Result: res, Trace: contract.Trace(StagePostToolUse,
		"tool_name", ev.ToolName,
		"call_id", ev.CallID,
		"mutated", res.Mutated,
		"mutated_by", res.MutatedBy,
		"hooks", decisionsOrEmpty(res.Decisions),
	)}, nil
}
