package hooks

import (
	"context"
	"fmt"
	"strings"
)

// UserPromptSubmitResult is the aggregated verdict on a turn's prompt.
type UserPromptSubmitResult struct {
	// Blocked ends the turn before any model call.
	Blocked   bool   `json:"blocked"`
	Reason    string `json:"reason,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
	// AdditionalContext joins every hook's context; it reaches the model
	// next to the prompt.
	AdditionalContext string         `json:"additional_context,omitempty"`
	Halt              *Halt          `json:"halt,omitempty"`
	Decisions         []HookDecision `json:"decisions"`
}

// RunUserPromptSubmit asks every hook in order about the prompt. The first
// block (or Halt, which blocks) wins and stops the chain; contexts
// accumulate.
func (r *Registry) RunUserPromptSubmit(ctx context.Context, ev UserPromptSubmitEvent) UserPromptSubmitResult {
	res := UserPromptSubmitResult{Decisions: []HookDecision{}}
	var contexts []string
	subs, run := runHooks(r, EventUserPromptSubmit, ev, func(e entry) func() (PromptAction, error) {
		return func() (PromptAction, error) { return e.hook.UserPromptSubmit(ctx, ev) }
	}, failClosedOr(func(reason string) PromptAction { return PromptAction{Kind: KindBlock, Reason: reason} }, PromptAction{Kind: KindContinue}))
	defer run.wait()
	for i, e := range subs {
		action, d := run.get(i)
		if action.AdditionalContext != "" {
			contexts = append(contexts, action.AdditionalContext)
		}
		if action.Halt != nil {
			res.Halt = haltFrom(action.Halt, e.name)
			action.Kind, action.Reason = KindBlock, res.Halt.Reason
		}
		d.Kind = kindOr(action.Kind, KindContinue)
		switch d.Kind {
		case KindContinue:
			if action.AdditionalContext != "" {
				d.Reason = "added context"
			}
		case KindBlock:
			reason := action.Reason
			if reason == "" {
				reason = fmt.Sprintf("prompt blocked by hook %q", e.name)
			}
			d.Reason = reason
			res.Decisions = append(res.Decisions, d)
			res.Blocked, res.Reason, res.DecidedBy = true, reason, e.name
			res.AdditionalContext = strings.Join(contexts, "\n")
			return res
		default:
			d.Error = joinErr(d.Error, fmt.Sprintf("hook returned unknown UserPromptSubmit action kind %q", d.Kind))
			d.Kind = KindContinue
		}
		res.Decisions = append(res.Decisions, d)
	}
	res.AdditionalContext = strings.Join(contexts, "\n")
	return res
}

// StopResult is the aggregated verdict when an agent is about to stop.
type StopResult struct {
	// Continue is set when a hook blocked the stop or gave feedback: the
	// agent takes another step with Reason as its instruction.
	Continue bool `json:"continue"`
	// Reason joins every blocking hook's reason and every hook's feedback.
	Reason string `json:"reason,omitempty"`
	// BlockedBy names the first hook that kept the agent going.
	BlockedBy         string `json:"blocked_by,omitempty"`
	AdditionalContext string `json:"additional_context,omitempty"`
	// Halt ends the turn whatever other hooks said (continue: false).
	Halt      *Halt          `json:"halt,omitempty"`
	Decisions []HookDecision `json:"decisions"`
}

// RunStop asks every hook whether the agent may stop. Every hook runs (as
// in Claude Code, where they run in parallel); any block or feedback keeps
// the agent going, a Halt overrides them all.
func (r *Registry) RunStop(ctx context.Context, ev StopEvent) StopResult {
	res := StopResult{Decisions: []HookDecision{}}
	var reasons []string
	var fb feedback
	subs, run := runHooks(r, EventStop, ev, func(e entry) func() (StopAction, error) {
		return func() (StopAction, error) { return e.hook.Stop(ctx, ev) }
	}, failClosedOr(func(reason string) StopAction { return StopAction{Kind: KindBlock, Reason: reason} }, StopAction{Kind: KindContinue}))
	for i, e := range subs {
		action, d := run.get(i)
		d.Kind = kindOr(action.Kind, KindContinue)
		var notes []string
		switch d.Kind {
		case KindContinue:
		case KindBlock:
			reason := action.Reason
			if reason == "" {
				reason = fmt.Sprintf("hook %q asked the agent to keep going", e.name)
			}
			reasons = append(reasons, reason)
			notes = append(notes, reason)
			if res.BlockedBy == "" {
				res.BlockedBy = e.name
			}
		default:
			d.Error = joinErr(d.Error, fmt.Sprintf("hook returned unknown Stop action kind %q", d.Kind))
			d.Kind = KindContinue
		}
		// Feedback keeps the agent going too.
		if action.AdditionalContext != "" && res.BlockedBy == "" {
			res.BlockedBy = e.name
		}
		notes = append(notes, fb.take(e.name, action.AdditionalContext, action.Halt)...)
		d.Reason = strings.Join(notes, "; ")
		res.Decisions = append(res.Decisions, d)
	}
	res.AdditionalContext, res.Halt = fb.context(), fb.halt
	res.Reason = strings.Join(append(reasons, fb.contexts...), "\n")
	res.Continue = res.Halt == nil && res.Reason != ""
	return res
}

// PostToolBatchResult is the aggregated verdict after a step's tool calls.
type PostToolBatchResult struct {
	AdditionalContext string `json:"additional_context,omitempty"`
	// Halt stops the loop before the next model call: a hook blocked or
	// asked to end the turn.
	Halt      *Halt          `json:"halt,omitempty"`
	Decisions []HookDecision `json:"decisions"`
}

// RunPostToolBatch runs every hook in order; the first block or Halt stops
// the loop and the chain, contexts accumulate.
func (r *Registry) RunPostToolBatch(ctx context.Context, ev PostToolBatchEvent) PostToolBatchResult {
	res := PostToolBatchResult{Decisions: []HookDecision{}}
	var contexts []string
	subs, run := runHooks(r, EventPostToolBatch, ev, func(e entry) func() (BatchAction, error) {
		hookEv := ev
		hookEv.Calls = cloneCalls(ev.Calls)
		return func() (BatchAction, error) { return e.hook.PostToolBatch(ctx, hookEv) }
	}, failClosedOr(func(reason string) BatchAction { return BatchAction{Kind: KindBlock, Reason: reason} }, BatchAction{Kind: KindContinue}))
	defer run.wait()
	for i, e := range subs {
		action, d := run.get(i)
		if action.AdditionalContext != "" {
			contexts = append(contexts, action.AdditionalContext)
			d.Reason = "added context"
		}
		d.Kind = kindOr(action.Kind, KindContinue)
		halt := action.Halt
		if halt == nil && d.Kind == KindBlock {
			halt = &Halt{Reason: action.Reason}
		}
		if d.Kind != KindContinue && d.Kind != KindBlock {
			d.Error = joinErr(d.Error, fmt.Sprintf("hook returned unknown PostToolBatch action kind %q", d.Kind))
			d.Kind = KindContinue
		}
		if halt != nil {
			res.Halt = haltFrom(halt, e.name)
			d.Kind, d.Reason = KindBlock, res.Halt.Reason
			res.Decisions = append(res.Decisions, d)
			break
		}
		res.Decisions = append(res.Decisions, d)
	}
	res.AdditionalContext = strings.Join(contexts, "\n")
	return res
}

// PermissionDeniedResult is what hooks said about a denial.
type PermissionDeniedResult struct {
	// Retry tells the model it may retry the call; the denial stands.
	Retry             bool           `json:"retry,omitempty"`
	RetryBy           string         `json:"retry_by,omitempty"`
	AdditionalContext string         `json:"additional_context,omitempty"`
	Decisions         []HookDecision `json:"decisions"`
}

// RunPermissionDenied runs every hook; any Retry sets Retry.
func (r *Registry) RunPermissionDenied(ctx context.Context, ev PermissionDeniedEvent) PermissionDeniedResult {
	res := PermissionDeniedResult{Decisions: []HookDecision{}}
	var contexts []string
	subs, run := runHooks(r, EventPermissionDenied, ev, func(e entry) func() (DeniedAction, error) {
		hookEv := ev
		hookEv.ToolInput = CloneArgs(ev.ToolInput)
		return func() (DeniedAction, error) { return e.hook.PermissionDenied(ctx, hookEv) }
	}, func(entry, any) DeniedAction { return DeniedAction{} })
	for i, e := range subs {
		action, d := run.get(i)
		d.Kind = KindRan
		if action.Retry {
			d.Reason = "retry"
			if !res.Retry {
				res.Retry, res.RetryBy = true, e.name
			}
		}
		if action.AdditionalContext != "" {
			contexts = append(contexts, action.AdditionalContext)
		}
		res.Decisions = append(res.Decisions, d)
	}
	res.AdditionalContext = strings.Join(contexts, "\n")
	return res
}

// RunNotification tells every hook the run needs attention.
func (r *Registry) RunNotification(ctx context.Context, ev NotificationEvent) Summary {
	return r.runAll(ctx, EventNotification, ev, func(h AgentHook) error { return h.OnNotification(ctx, ev) })
}

// RunConfigChange asks every hook about a settings file an operator's
// reload would change; Summary.Blocked is the first refusal.
func (r *Registry) RunConfigChange(ctx context.Context, ev ConfigChangeEvent) Summary {
	return r.runAll(ctx, EventConfigChange, ev, func(h AgentHook) error { return h.OnConfigChange(ctx, ev) })
}

func kindOr(k, def Kind) Kind {
	if k == "" {
		return def
	}
	return k
}

func cloneCalls(calls []BatchCall) []BatchCall {
	if calls == nil {
		return nil
	}
	out := make([]BatchCall, len(calls))
	for i, c := range calls {
		c.ToolInput = CloneArgs(c.ToolInput)
		out[i] = c
	}
	return out
}
