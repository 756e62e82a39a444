package activities

// The stages of the turn events Claude Code hooks rely on (fenix-shape 2):
// UserPromptSubmit, Stop, PostToolBatch and PermissionDenied. The tool
// call and lifecycle stages are in hooks.go.

import (
	"context"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// UserPromptSubmitHooksResult is the verdict on a turn's prompt.
type UserPromptSubmitHooksResult struct {
	Result hooks.UserPromptSubmitResult `json:"result"`
	Trace  contract.TraceEntry          `json:"trace"`
}

// RunUserPromptSubmitHooks asks every hook about the prompt before the
// turn's first model call: the first block ends the turn, contexts reach
// the model next to the prompt.
func (a *Activities) RunUserPromptSubmitHooks(ctx context.Context, ev hooks.UserPromptSubmitEvent) (UserPromptSubmitHooksResult, error) {
	var err error
	if ev.Prompt == "" && ev.Transcript != nil {
		// The workflow holds only a reference: the prompt is the
		// transcript's last user message.
		msgs, err := contextstore.Unpack(ctx, a.Contexts, *ev.Transcript)
		if err != nil {
			return fail[UserPromptSubmitHooksResult](err)
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == contract.RoleUser {
				ev.Prompt = msgs[i].Content
				break
			}
		}
	}
	if ev.Session, err = a.hookSession(ctx, hooks.EventUserPromptSubmit, ev.Session); err != nil {
		return fail[UserPromptSubmitHooksResult](err)
	}
	res := a.hookRegistry().RunUserPromptSubmit(ctx, ev)
	boundUserPromptSubmit(&res)
	a.recordDecisions(hooks.EventUserPromptSubmit, res.Decisions)
	trace := contract.Trace(StageUserPromptSubmit,
		"blocked", res.Blocked,
		"decided_by", res.DecidedBy,
		"hooks", decisionsOrEmpty(res.Decisions),
	)
	if res.Reason != "" {
		trace.Fields["reason"] = res.Reason
	}
	addContextAndHalt(trace, res.AdditionalContext, res.Halt)
	return UserPromptSubmitHooksResult{Result: res, Trace: trace}, nil
}

// StopHooksResult is the verdict when an agent is about to stop.
type StopHooksResult struct {
	Result hooks.StopResult    `json:"result"`
	Trace  contract.TraceEntry `json:"trace"`
}

// RunStopHooks asks every hook whether the agent may end its turn (Stop,
// or SubagentStop in a subagent): a block or feedback makes it take
// another step with the reason as its instruction.
func (a *Activities) RunStopHooks(ctx context.Context, ev hooks.StopEvent) (StopHooksResult, error) {
	var err error
	if ev.Session, err = a.hookSession(ctx, hooks.EventStop, ev.Session); err != nil {
		return fail[StopHooksResult](err)
	}
	res := a.hookRegistry().RunStop(ctx, ev)
	boundStop(&res)
	a.recordDecisions(hooks.EventStop, res.Decisions)
	trace := contract.Trace(StageStop,
		"continue", res.Continue,
		"blocked_by", res.BlockedBy,
		"stop_hook_active", ev.StopHookActive,
		"hooks", decisionsOrEmpty(res.Decisions),
	)
	if res.Reason != "" {
		trace.Fields["reason"] = preview(res.Reason)
	}
	addContextAndHalt(trace, "", res.Halt)
	return StopHooksResult{Result: res, Trace: trace}, nil
}

// PostToolBatchHooksResult is the verdict after a step's tool calls.
type PostToolBatchHooksResult struct {
	Result hooks.PostToolBatchResult `json:"result"`
	Trace  contract.TraceEntry       `json:"trace"`
}

// RunPostToolBatchHooks runs every hook once after all tool calls of a
// step resolved: context reaches the next model call, a block or halt
// ends the loop before it.
func (a *Activities) RunPostToolBatchHooks(ctx context.Context, ev hooks.PostToolBatchEvent) (PostToolBatchHooksResult, error) {
	var err error
	if ev.Session, err = a.hookSession(ctx, hooks.EventPostToolBatch, ev.Session); err != nil {
		return fail[PostToolBatchHooksResult](err)
	}
	res := a.hookRegistry().RunPostToolBatch(ctx, ev)
	boundPostToolBatch(&res)
	a.recordDecisions(hooks.EventPostToolBatch, res.Decisions)
	trace := contract.Trace(StagePostToolBatch,
		"calls", len(ev.Calls),
		"hooks", decisionsOrEmpty(res.Decisions),
	)
	addContextAndHalt(trace, res.AdditionalContext, res.Halt)
	return PostToolBatchHooksResult{Result: res, Trace: trace}, nil
}

// PermissionDeniedHooksResult is what hooks said about a denial.
type PermissionDeniedHooksResult struct {
	Result hooks.PermissionDeniedResult `json:"result"`
	Trace  contract.TraceEntry          `json:"trace"`
}

// RunPermissionDeniedHooks tells hooks a permission was denied; a hook's
// retry lets the model know it may try the call again.
func (a *Activities) RunPermissionDeniedHooks(ctx context.Context, ev hooks.PermissionDeniedEvent) (PermissionDeniedHooksResult, error) {
	var err error
	if ev.Session, err = a.hookSession(ctx, hooks.EventPermissionDenied, ev.Session); err != nil {
		return fail[PermissionDeniedHooksResult](err)
	}
	res := a.hookRegistry().RunPermissionDenied(ctx, ev)
	boundPermissionDenied(&res)
	a.recordDecisions(hooks.EventPermissionDenied, res.Decisions)
	trace := contract.Trace(StagePermissionDenied,
		"tool_name", ev.ToolName,
		"call_id", ev.CallID,
		"retry", res.Retry,
		"hooks", decisionsOrEmpty(res.Decisions),
	)
	addContextAndHalt(trace, res.AdditionalContext, nil)
	return PermissionDeniedHooksResult{Result: res, Trace: trace}, nil
}
