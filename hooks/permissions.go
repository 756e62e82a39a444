package hooks

import "fmt"

// PermissionPolicy is a declarative rule set (Claude Code's "permissions":
// allow, ask and deny rules with a default mode) that the registry
// consults after the PreToolUse hooks, on the arguments they settled on.
// Its verdict combines with theirs by Claude Code's precedence: a hook's
// block stands whatever the rules say; a deny rule blocks even a call a
// hook allowed; an ask rule asks even when a hook allowed; an allow rule
// does not silence a hook's ask.
type PermissionPolicy interface {
	// Name labels the policy's decisions in the trace.
	Name() string
	// Evaluate judges one call. hookAllowed says a PreToolUse hook
	// explicitly allowed it (which pre-approves it where the policy's mode
	// denies what nothing approved).
	Evaluate(ev PreToolUseEvent, hookAllowed bool) PolicyVerdict
	// Fingerprint identifies the effective rules for PolicyFingerprint.
	Fingerprint() string
}

// AskRefuser is a PermissionPolicy whose mode may refuse what would ask
// (Claude Code's dontAsk): a PreToolUse hook's ask is then refused as an
// ask rule's is, rather than left for a person nobody is meant to ask.
type AskRefuser interface {
	// RefusesAsks reports whether ev's calls that would ask are refused,
	// and why.
	RefusesAsks(ev PreToolUseEvent) (reason string, refused bool)
}

// PathFilter is a PermissionPolicy whose rules deny reading or writing
// some paths (Claude Code's Read and Edit deny rules). Tools that list or
// search the workspace ask it about every path they would show, so a file
// the rules keep from a read does not surface through them; and every
// file a workspace tool opens is judged again at the open, on the path
// its symlinks reach then (workspace.Judge), so a link repointed after
// the call was reviewed does not carry it to a denied file.
type PathFilter interface {
	// ReadDenied reports whether a deny rule covers reading rel, a path
	// relative to the workspace root. resolve follows a path's symlinks
	// inside the workspace (an error: it cannot, and the path may lead
	// anywhere). It returns false at once when no rule denies a read.
	ReadDenied(root, rel string, resolve func(rel string) (string, error)) bool
	// WriteDenied is ReadDenied for writing rel (Edit and Write rules).
	WriteDenied(root, rel string, resolve func(rel string) (string, error)) bool
}

// PolicyVerdict is a PermissionPolicy's judgement of one call.
type PolicyVerdict struct {
	// Decision is KindAllow, KindDeny or KindPermissionRequired (an ask
	// rule); empty when no rule matched and the mode leaves the call to
	// the rest of the pipeline.
	Decision Kind `json:"decision,omitempty"`
	// Rule is the rule that decided, as written ("Bash(git push:*)"), or
	// the mode ("defaultMode dontAsk") when no rule matched.
	Rule string `json:"rule,omitempty"`
	// Source is the settings file the rule or mode came from.
	Source string `json:"source,omitempty"`
	// Reason is what the model and the trace are told.
	Reason string `json:"reason,omitempty"`
}

// SetPermissionPolicy installs the policy RunPreToolUse consults after
// its hooks; nil removes it.
func (r *Registry) SetPermissionPolicy(p PermissionPolicy) { r.permissions = p }

// PermissionPolicy returns the installed policy, or nil.
func (r *Registry) PermissionPolicy() PermissionPolicy { return r.permissions }

// applyPermissions combines the policy's verdict with the hooks' result
// (which did not block): deny blocks, ask requires permission unless a hook
// already deferred or asked, allow is recorded.
func (r *Registry) applyPermissions(ev PreToolUseEvent, res *PreToolUseResult, hookAllowed bool) {
	if r.permissions == nil {
		return
	}
	ev.ToolInput = CloneArgs(res.FinalArgs)
	v := r.permissions.Evaluate(ev, hookAllowed)
	defer r.refuseHookAsk(ev, res)
	if v.Decision == "" {
		return
	}
	res.Permission = &v
	name := r.permissions.Name()
	d := HookDecision{Hook: name, Kind: v.Decision, Reason: v.Reason}
	switch v.Decision {
	case KindDeny:
		d.Kind = KindBlock
		reason := v.Reason
		if reason == "" {
			reason = fmt.Sprintf("tool %q denied by permission rule %s", ev.ToolName, v.Rule)
		}
		res.Action = Block(reason)
		res.DecidedBy = name
		res.PermissionRequired = nil
	case KindPermissionRequired:
		if res.PermissionRequired == nil {
			res.PermissionRequired = &PermissionRequirement{Permission: v.Reason, ToolName: ev.ToolName, Hook: name}
			res.DecidedBy = name
		}
	case KindAllow:
		if res.DecidedBy == "" {
			res.DecidedBy = name
		}
	}
	res.Decisions = append(res.Decisions, d)
}

// refuseHookAsk refuses the permission a hook asked for where the
// policy's mode refuses what would ask (AskRefuser).
func (r *Registry) refuseHookAsk(ev PreToolUseEvent, res *PreToolUseResult) {
	refuser, ok := r.permissions.(AskRefuser)
	if !ok || res.PermissionRequired == nil || res.Action.Kind == KindBlock {
		return
	}
	reason, refused := refuser.RefusesAsks(ev)
	if !refused {
		return
	}
	reason = fmt.Sprintf("%s: %s", res.PermissionRequired.Permission, reason)
	res.Action = Block(reason)
	res.DecidedBy = r.permissions.Name()
	res.PermissionRequired = nil
	res.Decisions = append(res.Decisions, HookDecision{Hook: r.permissions.Name(), Kind: KindBlock, Reason: reason})
}
