package testtools

import (
	"context"
	"strings"

	"github.com/fenixrt/fenix/hooks"
)

// PolicyHook is a deterministic policy for recorded histories and tests:
// calls whose call ID starts with "block-" are blocked, "ask-" require
// permission, "defer-" are deferred, "rewrite-" get their arguments
// rewritten, "halt-" end the turn, and "context-" get context after they
// ran. Prompts mentioning "policy-block" are refused, "policy-context"
// get context; an answer saying "unverified" is sent back once by the
// Stop hook.
type PolicyHook struct{ hooks.Base }

// Texts the PolicyHook gives the model, for tests to look for.
const (
	PolicyPromptContext = "Policy: every answer ends with VERIFIED once it is checked."
	PolicyStopReason    = "Check the answer and end it with VERIFIED."
	PolicyPostContext   = "Policy note: this result was audited."
)

func (PolicyHook) Name() string { return "test_policy" }

func (PolicyHook) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	switch {
	case strings.HasPrefix(ev.CallID, "block-"):
		return hooks.Block("call IDs starting with block- are refused by the test policy"), nil
	case strings.HasPrefix(ev.CallID, "ask-"):
		return hooks.RequirePermission("test_approval", ev.ToolName), nil
	case strings.HasPrefix(ev.CallID, "defer-"):
		return hooks.Defer("the test policy defers to the kernel", ev.ToolName), nil
	case strings.HasPrefix(ev.CallID, "rewrite-"):
		return hooks.MutateInput(map[string]any{"expression": "6 * 7"}, "the test policy rewrote the expression"), nil
	case strings.HasPrefix(ev.CallID, "halt-"):
		return hooks.PreToolUseAction{Kind: hooks.KindBlock, Halt: &hooks.Halt{Reason: "the test policy ends the turn"}}, nil
	}
	return hooks.Continue(), nil
}

func (PolicyHook) PostToolUse(_ context.Context, ev hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	if strings.HasPrefix(ev.CallID, "context-") {
		return hooks.PostToolUseAction{Kind: hooks.KindContinue, AdditionalContext: PolicyPostContext}, nil
	}
	return hooks.KeepOutput(), nil
}

func (PolicyHook) UserPromptSubmit(_ context.Context, ev hooks.UserPromptSubmitEvent) (hooks.PromptAction, error) {
	switch {
	case strings.Contains(ev.Prompt, "policy-block"):
		return hooks.PromptAction{Kind: hooks.KindBlock, Reason: "the test policy refuses this prompt"}, nil
	case strings.Contains(ev.Prompt, "policy-context"):
		return hooks.PromptAction{Kind: hooks.KindContinue, AdditionalContext: PolicyPromptContext}, nil
	}
	return hooks.PromptAction{Kind: hooks.KindContinue}, nil
}

func (PolicyHook) Stop(_ context.Context, ev hooks.StopEvent) (hooks.StopAction, error) {
	if !ev.StopHookActive && strings.Contains(ev.LastAssistantMessage, "unverified") {
		return hooks.StopAction{Kind: hooks.KindBlock, Reason: PolicyStopReason}, nil
	}
	return hooks.StopAction{Kind: hooks.KindContinue}, nil
}
