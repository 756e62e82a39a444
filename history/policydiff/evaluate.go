package policydiff

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

// Policy is the candidate: the tools (for Review), the hook registry a
// worker would run (fenixworker.PolicyHooks builds it from the same
// settings) and, optionally, a new allow-list.
type Policy struct {
	Tools *tools.Registry
	Hooks *hooks.Registry
	// AllowedTools, when not nil, replaces every call's allowed_tool_names.
	AllowedTools []string
	// WorkspaceRoot is the worker default for sessions without one, so
	// command hooks run where the worker ran them.
	WorkspaceRoot string
	// WorkspaceBases is the allow-list a session's workspace root and cwd
	// must resolve inside before hooks run there, as on the worker
	// (FENIX_WORKSPACE_BASES); nil means WorkspaceRoot alone.
	WorkspaceBases *workspace.Bases
}

// Evaluate decides a recorded call under the policy, exactly as the
// worker's stages would — Review, then PreToolUse hooks, then, when one
// asks, PermissionRequest hooks — and stops before ExecuteTool. Hooks see
// is_replay.
func (p *Policy) Evaluate(ctx context.Context, c Call) Verdict {
	agent := c.AgentContext
	if p.AllowedTools != nil {
		agent.AllowedToolNames = slices.Clone(p.AllowedTools)
	}
	sv := stageVerdicts{fingerprint: p.Hooks.PolicyFingerprint(agent.AllowedToolNames)}
	if _, err := p.Tools.Review(c.ToolCall, agent); err != nil {
		if errors.Is(err, fenixerr.ErrUnsupportedTool) && !errors.Is(err, fenixerr.ErrToolNotVisible) {
			// A tool only the recording worker has (an MCP or test tool):
			// this registry cannot review it, whatever the policy.
			return skipped(sv.fingerprint, fmt.Sprintf("tool %q is not registered here, only on the worker that ran it", c.ToolCall.ToolName))
		}
		sv.reviewErr = fenixerr.As(err)
		return sv.verdict()
	}
	sv.reviewed = true

	session := c.session
	session.IsReplay = true
	session.AllowedToolNames = agent.AllowedToolNames
	if session.WorkspaceRoot == "" {
		session.WorkspaceRoot = p.WorkspaceRoot
	}
	if session.Cwd == "" {
		session.Cwd = session.WorkspaceRoot
	}
	// A root outside the bases fails the run before any stage on the
	// worker, so a recorded verdict means the worker allowed it: here it
	// is this environment that differs (a deployment check, not the
	// policy), and hooks must not run somewhere else instead.
	if err := p.checkWorkspace(&session); err != nil {
		return skipped(sv.fingerprint, "the recorded workspace cannot be used here ("+fenixerr.As(err).Message+
			"); give -workspace-root/-workspace-bases as on the worker, or run policy-diff where it runs")
	}
	def, _ := p.Tools.Lookup(c.ToolCall.ToolName)
	pre := p.Hooks.RunPreToolUse(ctx, hooks.PreToolUseEvent{Session: session, ToolName: c.ToolCall.ToolName, CallID: c.ToolCall.CallID,
		ToolInput: c.ToolCall.Arguments, Step: c.Step, Cancelled: c.cancelled, CancelReason: c.cancelReason, ReadOnly: def.ReadOnly})
	sv.pre = &pre
	if pre.NeedsPermission() {
		args := c.ToolCall.Arguments
		if pre.ArgsMutated {
			args = pre.FinalArgs
		}
		perm := p.Hooks.RunPermissionRequest(ctx, hooks.PermissionRequestEvent{Session: session, ToolName: c.ToolCall.ToolName,
			CallID: c.ToolCall.CallID, ToolInput: args, Permission: pre.PermissionRequired.Permission, RequestedBy: pre.PermissionRequired.Hook})
		sv.permission = &perm
	}
	return sv.verdict()
}

// skipped is the verdict on a call this environment cannot re-decide
// faithfully; reason says why.
func skipped(fingerprint, reason string) Verdict {
	return Verdict{Outcome: OutcomeUndecided, Reason: reason, PolicyFingerprint: fingerprint}
}

// checkWorkspace resolves the session's workspace root and cwd through the
// bases, as the worker's hook stages do.
func (p *Policy) checkWorkspace(s *hooks.Session) error {
	bases := p.WorkspaceBases
	if bases == nil {
		var err error
		if bases, err = workspace.DefaultBases(p.WorkspaceRoot); err != nil {
			return fenixerr.Runtime("workspace bases: %v", err)
		}
	}
	for _, dir := range []*string{&s.WorkspaceRoot, &s.Cwd} {
		if *dir == "" {
			continue
		}
		resolved, _, err := bases.Resolve(*dir)
		if err != nil {
			return err
		}
		*dir = resolved
	}
	return nil
}
