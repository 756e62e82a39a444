package hooks

import (
	"slices"
	"testing"
)

// denyAll is a permission policy with one deny rule for every call.
type denyAll struct{}

func (denyAll) Name() string        { return "permissions" }
func (denyAll) Fingerprint() string { return "deny-all" }
func (denyAll) Evaluate(PreToolUseEvent, bool) PolicyVerdict {
	return PolicyVerdict{Decision: KindDeny, Rule: "Read", Reason: "denied by rule Read"}
}

// A lean review skips the PreToolUse stage when Subscribed leaves it out,
// and permission rules are decided in that stage: with rules loaded and
// no PreToolUse hook, the stage must still be reported as subscribed, or
// a deny rule would never be consulted.
func TestSubscribedKeepsPreToolUseForPermissionRules(t *testing.T) {
	r := NewRegistry()
	if got := r.Subscribed("", "workspace_read", EventPreToolUse, EventPostToolUse); len(got) != 0 {
		t.Fatalf("no hooks and no rules: Subscribed = %v, want none", got)
	}
	r.SetPermissionPolicy(denyAll{})
	got := r.Subscribed("", "workspace_read", EventPreToolUse, EventPostToolUse)
	if !slices.Equal(got, []Event{EventPreToolUse}) {
		t.Fatalf("with permission rules: Subscribed = %v, want [PreToolUse]", got)
	}
	res := r.RunPreToolUse(t.Context(), PreToolUseEvent{ToolName: "workspace_read"})
	if res.Action.Kind != KindBlock {
		t.Fatalf("RunPreToolUse with a deny rule = %+v, want a block", res.Action)
	}
}

// modesOnly is a policy of session modes only: it acts in plan.
type modesOnly struct{ denyAll }

func (modesOnly) ActsInMode(mode string) bool { return mode == "plan" }

// A worker without permission rules applies only the mode the kernel
// names: its PreToolUse stage runs for a session in such a mode, and is
// skipped, as without any policy, in the default one.
func TestAModeOnlyPolicySubscribesInItsModesOnly(t *testing.T) {
	r := NewRegistry()
	r.SetPermissionPolicy(modesOnly{})
	if got := r.Subscribed("", "workspace_write", EventPreToolUse); len(got) != 0 {
		t.Errorf("default mode: Subscribed = %v, want none", got)
	}
	if got := r.Subscribed("plan", "workspace_write", EventPreToolUse); !slices.Equal(got, []Event{EventPreToolUse}) {
		t.Errorf("plan: Subscribed = %v, want [PreToolUse]", got)
	}
}
