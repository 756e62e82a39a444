package hooks_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/hooks"
)

// noForcePush is a custom hook. Step 1: embed hooks.Base and implement only
// what you need (plus Name).
type noForcePush struct{ hooks.Base }

func (noForcePush) Name() string { return "no-force-push" }

func (noForcePush) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	if cmd, _ := ev.ToolInput["command"].(string); strings.Contains(cmd, "push --force") {
		return hooks.Block("force-push rewrites shared history"), nil
	}
	return hooks.Continue(), nil
}

// Adding a custom hook takes two steps: implement it with hooks.Base
// embedded, then registry.Add it.
func Example_customHook() {
	registry := hooks.NewRegistry()
	registry.Add(noForcePush{}) // step 2

	res := registry.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{
		Session:   hooks.Session{SessionID: "agent-turn-42"},
		ToolName:  "exec_command",
		CallID:    "call-1",
		ToolInput: map[string]any{"command": "git push --force origin main"},
	})
	fmt.Println(res.Action.Kind, "-", res.Action.Reason, "- by", res.DecidedBy)
	// Output: block - force-push rewrites shared history - by no-force-push
}

// Aggregation: the last MutateInput wins for the arguments and every
// additional context is kept.
func ExampleRegistry_RunPreToolUse() {
	registry := hooks.NewRegistry()
	registry.Add(rewriter{name: "add-flag", args: map[string]any{"command": "ls -l"}, context: "listing is long"})
	registry.Add(rewriter{name: "add-hidden", args: map[string]any{"command": "ls -la"}, context: "hidden files shown"})

	res := registry.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{
		ToolName: "exec_command", ToolInput: map[string]any{"command": "ls"},
	})
	fmt.Println(res.FinalArgs["command"])
	fmt.Println(res.AdditionalContext)
	// Output:
	// ls -la
	// listing is long
	// hidden files shown
}

type rewriter struct {
	hooks.Base
	name    string
	args    map[string]any
	context string
}

func (r rewriter) Name() string { return r.name }

func (r rewriter) PreToolUse(context.Context, hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	return hooks.MutateInput(r.args, r.context), nil
}
