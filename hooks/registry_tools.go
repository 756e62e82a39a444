package hooks

import (
	"context"
	"fmt"
	"strings"
)

// RunPreToolUse asks every hook in order whether and how the tool may run.
// Each hook sees the arguments as rewritten by the hooks before it, so a
// guard registered after a rewriter checks what will actually run; a run
// of ConcurrentHooks starts together and sees the arguments as they stood
// before it.
//
// Precedence across hooks is Claude Code's: deny (Block) > defer > ask
// (PermissionRequired) > allow. The first Block or Halt wins and stops the
// chain; the first defer outranks any ask.
func (r *Registry) RunPreToolUse(ctx context.Context, ev PreToolUseEvent) PreToolUseResult {
	res := PreToolUseResult{FinalArgs: CloneArgs(ev.ToolInput), Decisions: []HookDecision{}}
	if res.FinalArgs == nil {
		res.FinalArgs = map[string]any{}
	}
	var contexts []string
	mutated, hookAllowed := false, false
	block := func(d HookDecision, name, reason string, halt *Halt) PreToolUseResult {
		d.Kind, d.Reason = KindBlock, reason
		res.Decisions = append(res.Decisions, d)
		res.Action = Block(reason)
		res.Action.Halt = halt
		res.Halt = halt
		res.DecidedBy = name
		res.AdditionalContext = strings.Join(contexts, "\n")
		return res
	}
	subs, run := runHooks(r, EventPreToolUse, ev, func(e entry) func() (PreToolUseAction, error) {
		hookEv := ev
		hookEv.ToolInput = CloneArgs(res.FinalArgs)
		return func() (PreToolUseAction, error) { return e.hook.PreToolUse(ctx, hookEv) }
	}, failClosedOr(Block, Continue()))
	defer run.wait()
	for i, e := range subs {
		action, d := run.get(i)
		if action.Halt != nil {
			halt := haltFrom(action.Halt, e.name)
			return block(d, e.name, halt.Reason, halt)
		}
		kind := action.kind()
		d.Kind = kind
		switch kind {
		case KindContinue:
		case KindBlock:
			reason := action.Reason
			if reason == "" {
				reason = fmt.Sprintf("tool %q blocked by hook %q", ev.ToolName, e.name)
			}
			return block(d, e.name, reason, nil)
		case KindMutateInput, KindPermissionRequired, KindDefer, KindAllow:
			var notes []string
			if kind == KindAllow {
				// An explicit allow: recorded with its hook; it settles
				// nothing a later ask or a permission rule says otherwise.
				hookAllowed = true
				notes = append(notes, firstNonEmptyNote(action.Reason, "allowed"))
				if res.DecidedBy == "" {
					res.DecidedBy = e.name
				}
			}
			if action.UpdatedArgs != nil {
				res.FinalArgs = CloneArgs(action.UpdatedArgs)
				res.ArgsMutated = true
				mutated = true
				notes = append(notes, "updated args")
			}
			if action.AdditionalContext != "" {
				contexts = append(contexts, action.AdditionalContext)
				mutated = true
				notes = append(notes, "added context")
			}
			if kind == KindPermissionRequired || kind == KindDefer {
				req := PermissionRequirement{Permission: action.Permission, ToolName: action.ToolName, Hook: e.name, Deferred: kind == KindDefer}
				if req.ToolName == "" {
					req.ToolName = ev.ToolName
				}
				if req.Permission == "" {
					req.Permission = "run tool " + req.ToolName
				}
				notes = append([]string{req.Permission}, notes...)
				if res.PermissionRequired == nil || (req.Deferred && !res.PermissionRequired.Deferred) {
					res.PermissionRequired = &req
					res.DecidedBy = e.name
				}
			}
			d.Reason = strings.Join(notes, ", ")
		default:
			d.Error = joinErr(d.Error, fmt.Sprintf("hook returned unknown PreToolUse action kind %q", kind))
			if e.failClosed {
				return block(d, e.name, fmt.Sprintf("hook %q failed closed: unknown PreToolUse action kind %q", e.name, kind), nil)
			}
			d.Kind = KindContinue
		}
		res.Decisions = append(res.Decisions, d)
	}
	res.AdditionalContext = strings.Join(contexts, "\n")
	r.applyPermissions(ev, &res, hookAllowed)
	switch {
	case res.Blocked():
		// A deny rule blocked the call.
	case res.PermissionRequired != nil && res.PermissionRequired.Deferred:
		res.Action = Defer(res.PermissionRequired.Permission, res.PermissionRequired.ToolName)
	case res.PermissionRequired != nil:
		res.Action = RequirePermission(res.PermissionRequired.Permission, res.PermissionRequired.ToolName)
	case mutated:
		var args map[string]any
		if res.ArgsMutated {
			args = CloneArgs(res.FinalArgs)
		}
		res.Action = MutateInput(args, res.AdditionalContext)
	default:
		res.Action = Continue()
	}
	return res
}

func firstNonEmptyNote(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// haltFrom completes a hook's Halt with its name and a default reason.
func haltFrom(h *Halt, hook string) *Halt {
	out := *h
	out.Hook = hook
	if out.Reason == "" {
		out.Reason = fmt.Sprintf("hook %q ended the turn", hook)
	}
	return &out
}

// feedback collects what hooks give back besides their verdict: context
// for the model, joined in hook order, and the first request to end the
// turn.
type feedback struct {
	contexts []string
	halt     *Halt
}

// take records one hook's context and halt and returns the notes for its
// decision.
func (f *feedback) take(hook, context string, halt *Halt) []string {
	var notes []string
	if context != "" {
		f.contexts = append(f.contexts, context)
		notes = append(notes, "added context")
	}
	if halt != nil && f.halt == nil {
		f.halt = haltFrom(halt, hook)
		notes = append(notes, "halt: "+f.halt.Reason)
	}
	return notes
}

func (f *feedback) context() string { return strings.Join(f.contexts, "\n") }

// RunPostToolUse runs every hook; each sees the output as rewritten by the
// hooks before it and the last MutateOutput wins. Contexts accumulate; the
// first Halt is kept.
func (r *Registry) RunPostToolUse(ctx context.Context, ev PostToolUseEvent) PostToolUseResult {
	res := PostToolUseResult{FinalContent: ev.Content, Decisions: []HookDecision{}}
	var fb feedback
	subs, run := runHooks(r, EventPostToolUse, ev, func(e entry) func() (PostToolUseAction, error) {
		hookEv := ev
		hookEv.Content = res.FinalContent
		hookEv.ToolInput = CloneArgs(ev.ToolInput)
		return func() (PostToolUseAction, error) { return e.hook.PostToolUse(ctx, hookEv) }
	}, func(entry, any) PostToolUseAction { return KeepOutput() })
	for i, e := range subs {
		action, d := run.get(i)
		kind := action.kind()
		d.Kind = kind
		var notes []string
		switch kind {
		case KindContinue:
		case KindMutateOutput:
			res.FinalContent = action.UpdatedContent
			res.Mutated = true
			res.MutatedBy = e.name
			notes = append(notes, fmt.Sprintf("output replaced (%d bytes)", len(action.UpdatedContent)))
		default:
			d.Error = joinErr(d.Error, fmt.Sprintf("hook returned unknown PostToolUse action kind %q", kind))
			d.Kind = KindContinue
		}
		notes = append(notes, fb.take(e.name, action.AdditionalContext, action.Halt)...)
		d.Reason = strings.Join(notes, ", ")
		res.Decisions = append(res.Decisions, d)
	}
	res.AdditionalContext, res.Halt = fb.context(), fb.halt
	return res
}

// RunPermissionRequest lets hooks settle a permission request before a
// human is asked. The first deny (or Halt, which denies) wins and stops the
// chain; otherwise the first allow wins; otherwise the result is NoOpinion.
func (r *Registry) RunPermissionRequest(ctx context.Context, ev PermissionRequestEvent) PermissionRequestResult {
	res := PermissionRequestResult{Decision: NoOpinion(), Decisions: []HookDecision{}}
	subs, run := runHooks(r, EventPermissionRequest, ev, func(e entry) func() (PermissionDecision, error) {
		hookEv := ev
		hookEv.ToolInput = CloneArgs(ev.ToolInput)
		return func() (PermissionDecision, error) { return e.hook.PermissionRequest(ctx, hookEv) }
	}, failClosedOr(Deny, NoOpinion()))
	defer run.wait()
	for i, e := range subs {
		decision, d := run.get(i)
		if decision.Halt != nil {
			res.Halt = haltFrom(decision.Halt, e.name)
			decision = Deny(res.Halt.Reason)
		}
		kind := decision.kind()
		d.Kind = kind
		d.Reason = decision.Reason
		switch kind {
		case KindNoOpinion:
		case KindDeny:
			if decision.Reason == "" {
				decision.Reason = fmt.Sprintf("permission %q for tool %q denied by hook %q", ev.Permission, ev.ToolName, e.name)
				d.Reason = decision.Reason
			}
			res.Decisions = append(res.Decisions, d)
			res.Decision = PermissionDecision{Kind: KindDeny, Reason: decision.Reason}
			res.DecidedBy = e.name
			return res
		case KindAllow:
			if res.Decision.kind() != KindAllow {
				if decision.Reason == "" {
					decision.Reason = fmt.Sprintf("permission %q for tool %q allowed by hook %q", ev.Permission, ev.ToolName, e.name)
				}
				res.Decision = PermissionDecision{Kind: KindAllow, Reason: decision.Reason, UpdatedArgs: CloneArgs(decision.UpdatedArgs)}
				res.DecidedBy = e.name
			}
		default:
			d.Error = joinErr(d.Error, fmt.Sprintf("hook returned unknown permission decision kind %q", kind))
			if e.failClosed {
				reason := fmt.Sprintf("hook %q failed closed: unknown permission decision kind %q", e.name, kind)
				d.Kind, d.Reason = KindDeny, reason
				res.Decisions = append(res.Decisions, d)
				res.Decision = Deny(reason)
				res.DecidedBy = e.name
				return res
			}
			d.Kind = KindNoOpinion
		}
		res.Decisions = append(res.Decisions, d)
	}
	return res
}
