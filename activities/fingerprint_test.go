package activities

import (
	"context"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/tools"
)

type askHook struct{ hooks.Base }

func (askHook) Name() string { return "ask" }

func (askHook) PreToolUse(context.Context, hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	return hooks.RequirePermission("approve calculator", "calculator"), nil
}

// Every verdict stage records the fingerprint of the policy that made it,
// in its result and its trace entry; a rejected review in its failure.
func TestVerdictsCarryThePolicyFingerprint(t *testing.T) {
	registry := hooks.NewRegistry()
	registry.Add(builtin.NewCancellationHook())
	registry.Add(askHook{})
	a := &Activities{Tools: tools.Builtin(), Hooks: registry}
	agent := contract.AgentContext{Profile: "main", AllowedToolNames: []string{"calculator"}}
	want := registry.PolicyFingerprint(agent.AllowedToolNames)
	call := contract.ToolCall{CallID: "c1", ToolName: "calculator", Arguments: map[string]any{"expression": "1 + 1"}}
	session := hooks.SessionFromAssignment("wf", "run", contract.Assignment{AgentContext: agent})
	ctx := context.Background()

	reviewed, err := a.ReviewToolCall(ctx, ReviewToolCallInput{ToolCall: call, AgentContext: agent})
	if err != nil {
		t.Fatal(err)
	}
	pre, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{Session: session, ToolName: call.ToolName, CallID: call.CallID, ToolInput: call.Arguments})
	if err != nil {
		t.Fatal(err)
	}
	perm, err := a.RunPermissionRequestHooks(ctx, hooks.PermissionRequestEvent{Session: session, ToolName: call.ToolName, CallID: call.CallID, ToolInput: call.Arguments, Permission: "approve calculator"})
	if err != nil {
		t.Fatal(err)
	}
	for stage, got := range map[string]struct {
		result string
		trace  contract.TraceEntry
	}{
		"review":             {reviewed.PolicyFingerprint, reviewed.Trace},
		"pre_tool_use":       {pre.PolicyFingerprint, pre.Trace},
		"permission_request": {perm.PolicyFingerprint, perm.Trace},
	} {
		if got.result != want || got.trace.Get("policy_fingerprint") != want {
			t.Errorf("%s: result fingerprint %q, trace %v, want %s", stage, got.result, got.trace.Get("policy_fingerprint"), want)
		}
	}

	_, err = a.ReviewToolCall(ctx, ReviewToolCallInput{ToolCall: contract.ToolCall{CallID: "c2", ToolName: "workspace_read", Arguments: map[string]any{"path": "x"}}, AgentContext: agent})
	fe := fenixerr.FromTemporal(err)
	if fe.Type != fenixerr.TypeToolNotVisible || fe.PolicyFingerprint != want {
		t.Errorf("rejected review: %s with fingerprint %q, want %s with %s", fe.Type, fe.PolicyFingerprint, fenixerr.TypeToolNotVisible, want)
	}
	if other := registry.PolicyFingerprint([]string{"calculator", "workspace_read"}); other == want {
		t.Error("a wider allow-list has the same fingerprint")
	}
}
