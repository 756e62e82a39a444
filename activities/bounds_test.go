package activities

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// bigHook answers every PreToolUse and PostToolUse with ~1 MiB of context
// and, on PreToolUse, a ~1 MiB block reason when asked to block.
type bigHook struct {
	hooks.Base
	name  string
	block bool
}

func (h bigHook) Name() string { return h.name }

func (h bigHook) PreToolUse(context.Context, hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	if h.block {
		return hooks.Block(strings.Repeat("r", 1<<20)), nil
	}
	return hooks.AddContext(strings.Repeat("c", 1<<20)), nil
}

func (h bigHook) PostToolUse(context.Context, hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	return hooks.PostToolUseAction{Kind: hooks.KindContinue, AdditionalContext: strings.Repeat("p", 1<<20)}, nil
}

func resultSize(t *testing.T, v any) int {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}

// Two hooks' ~1 MiB of context each, and a ~1 MiB block reason, come back
// from the stages bounded, far below the 2 MB payload limit; arguments
// and content no hook changed are not repeated.
func TestHookStageResultsAreBounded(t *testing.T) {
	r := hooks.NewRegistry()
	r.Add(bigHook{name: "one"})
	r.Add(bigHook{name: "two"})
	a := &Activities{Hooks: r, DefaultWorkspaceRoot: t.TempDir()}
	ctx := context.Background()
	args := map[string]any{"content": strings.Repeat("a", 1<<20)}
	pre, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{ToolName: "workspace_write", CallID: "c", ToolInput: args})
	if err != nil {
		t.Fatal(err)
	}
	if n := resultSize(t, pre); n > 200<<10 {
		t.Errorf("PreToolUse result is %d bytes", n)
	}
	if pre.Result.FinalArgs != nil || !strings.Contains(pre.Result.AdditionalContext, "[truncated by Fenix: ") {
		t.Errorf("PreToolUse: final args %d, context %q…", len(pre.Result.FinalArgs), pre.Result.AdditionalContext[:40])
	}
	post, err := a.RunPostToolUseHooks(ctx, hooks.PostToolUseEvent{ToolName: "workspace_write", CallID: "c", ToolInput: args, Content: strings.Repeat("o", 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	if n := resultSize(t, post); n > 200<<10 || post.Result.FinalContent != "" {
		t.Errorf("PostToolUse result is %d bytes (final content %d)", n, len(post.Result.FinalContent))
	}

	blocking := hooks.NewRegistry()
	blocking.Add(bigHook{name: "guard", block: true})
	a.Hooks = blocking
	blocked, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{ToolName: "workspace_write", CallID: "c", ToolInput: args})
	if err != nil {
		t.Fatal(err)
	}
	if !blocked.Result.Blocked() || len(blocked.Result.Action.Reason) > maxHookReasonBytes+100 {
		t.Errorf("blocked = %v with a %d-byte reason", blocked.Result.Blocked(), len(blocked.Result.Action.Reason))
	}
}

// The calls of one agent step share StepHookContextBudget: a stage given
// its share in the event's ContextBudget cuts its context to it, and one
// without keeps the stage's own bound.
func TestHookContextKeepsToTheStepsShare(t *testing.T) {
	r := hooks.NewRegistry()
	r.Add(bigHook{name: "one"})
	a := &Activities{Hooks: r, DefaultWorkspaceRoot: t.TempDir()}
	ctx := context.Background()
	share := StepHookContextBudget / 32
	within := func(s string, limit int) bool {
		return strings.Contains(s, "[truncated by Fenix: ") && len(s) <= limit+64
	}
	pre, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{ToolName: "calculator", CallID: "c", ContextBudget: share})
	if err != nil {
		t.Fatal(err)
	}
	if !within(pre.Result.AdditionalContext, share) || !within(pre.Result.Action.AdditionalContext, share) {
		t.Errorf("PreToolUse context %d and %d bytes, want at most the share %d", len(pre.Result.AdditionalContext), len(pre.Result.Action.AdditionalContext), share)
	}
	post, err := a.RunPostToolUseHooks(ctx, hooks.PostToolUseEvent{ToolName: "calculator", CallID: "c", Content: "4", ContextBudget: share})
	if err != nil {
		t.Fatal(err)
	}
	if !within(post.Result.AdditionalContext, share) {
		t.Errorf("PostToolUse context %d bytes, want at most the share %d", len(post.Result.AdditionalContext), share)
	}
	// Each stage names the policy it ran under, so a run whose stages
	// moved between workers holding different policies shows it.
	if got, want := post.Trace.Get("policy_fingerprint"), pre.PolicyFingerprint; got != want || want == "" {
		t.Errorf("PostToolUse's policy_fingerprint = %v, want PreToolUse's %q", got, want)
	}
	alone, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{ToolName: "calculator", CallID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if !within(alone.Result.AdditionalContext, maxHookContextBytes) || len(alone.Result.AdditionalContext) < maxHookContextBytes {
		t.Errorf("a call alone got %d bytes of context, want the stage's %d", len(alone.Result.AdditionalContext), maxHookContextBytes)
	}
}

// rewritingHook rewrites every call's arguments and output to size bytes.
type rewritingHook struct {
	hooks.Base
	size int
}

func (rewritingHook) Name() string { return "rewriter" }

func (h rewritingHook) PreToolUse(context.Context, hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	return hooks.MutateInput(map[string]any{"expression": strings.Repeat("1", h.size)}, ""), nil
}

func (h rewritingHook) PostToolUse(context.Context, hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	return hooks.MutateOutput(strings.Repeat("o", h.size)), nil
}

// What hooks rewrite keeps to the call's share of the step too: rewritten
// arguments over it fail the call naming the budget, rewritten output is
// cut to it; a call alone keeps what the hook wrote.
func TestRewrittenCallsKeepToTheStepsShare(t *testing.T) {
	r := hooks.NewRegistry()
	r.Add(rewritingHook{size: 100 << 10})
	a := &Activities{Hooks: r, DefaultWorkspaceRoot: t.TempDir()}
	ctx := context.Background()
	_, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{ToolName: "calculator", CallID: "c", ArgsBudget: StepArgumentBudget / 32})
	if err == nil || !strings.Contains(err.Error(), "over the 32768 bytes each call's may be") {
		t.Errorf("rewritten arguments over the share: %v", err)
	}
	if _, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{ToolName: "calculator", CallID: "c"}); err != nil {
		t.Errorf("a call alone: %v", err)
	}
	share := StepResultBudget / 32
	post, err := a.RunPostToolUseHooks(ctx, hooks.PostToolUseEvent{ToolName: "calculator", CallID: "c", Content: "4", ResultBudget: share})
	if err != nil || !post.Result.Mutated || len(post.Result.FinalContent) > share+64 || !strings.Contains(post.Result.FinalContent, "[truncated by Fenix: ") {
		t.Errorf("rewritten output over the share: %d bytes, %v", len(post.Result.FinalContent), err)
	}
}
