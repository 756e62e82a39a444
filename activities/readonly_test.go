package activities

import (
	"context"
	"testing"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
)

// seenPolicy records what the permission policy was told about a call.
type seenPolicy struct{ readOnly map[string]bool }

func (*seenPolicy) Name() string        { return "seen" }
func (*seenPolicy) Fingerprint() string { return "seen" }
func (p *seenPolicy) Evaluate(ev hooks.PreToolUseEvent, _ bool) hooks.PolicyVerdict {
	p.readOnly[ev.ToolName] = ev.ReadOnly
	return hooks.PolicyVerdict{}
}

// The PreToolUse stage tells the permission policy whether the tool only
// reads, from the worker's registry: the caller's claim does not count,
// and a tool the registry does not know is not read-only.
func TestPreToolUseSaysWhetherTheToolOnlyReads(t *testing.T) {
	policy := &seenPolicy{readOnly: map[string]bool{}}
	registry := hooks.NewRegistry()
	registry.SetPermissionPolicy(policy)
	a := &Activities{Tools: tools.Builtin(), Hooks: registry, DefaultWorkspaceRoot: t.TempDir()}
	want := map[string]bool{"workspace_read": true, "calculator": true, "workspace_write": false, "process_stop": false, "mcp__gone__tool": false}
	for tool := range want {
		if _, err := a.RunPreToolUseHooks(context.Background(), hooks.PreToolUseEvent{ToolName: tool, CallID: "c1", ToolInput: map[string]any{}, ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
	}
	for tool, w := range want {
		if got, seen := policy.readOnly[tool]; !seen || got != w {
			t.Errorf("%s: policy saw read-only %v (evaluated %v), want %v", tool, got, seen, w)
		}
	}
}
