package testtools

import (
	"context"
	"strings"

	"github.com/fenixrt/fenix/hooks"
)

// PolicyHook is a deterministic PreToolUse policy for recorded histories
// and tests: calls whose call ID starts with "block-" are blocked, "ask-"
// require permission, "rewrite-" get their arguments rewritten.
type PolicyHook struct{ hooks.Base }

func (PolicyHook) Name() string { return "test_policy" }

func (PolicyHook) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	switch {
	case strings.HasPrefix(ev.CallID, "block-"):
		return hooks.Block("call IDs starting with block- are refused by the test policy"), nil
	case strings.HasPrefix(ev.CallID, "ask-"):
		return hooks.RequirePermission("test_approval", ev.ToolName), nil
	case strings.HasPrefix(ev.CallID, "rewrite-"):
		return hooks.MutateInput(map[string]any{"expression": "6 * 7"}, "the test policy rewrote the expression"), nil
	}
	return hooks.Continue(), nil
}
