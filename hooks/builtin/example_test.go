package builtin_test

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
)

// The built-ins: cancellation reads the workflow's own cancelled flag from
// the event, so there is a single cancellation source.
func Example() {
	metrics := builtin.NewMetricsHook(contract.Metrics{}, nil)
	registry := hooks.NewRegistry()
	registry.Add(builtin.NewCancellationHook())
	registry.Add(metrics)

	ctx := context.Background()
	session := hooks.Session{SessionID: "agent-turn-42"}
	pre := registry.RunPreToolUse(ctx, hooks.PreToolUseEvent{
		Session: session, ToolName: "calculator", CallID: "c1",
		Cancelled: true, CancelReason: "user pressed stop",
	})
	fmt.Println(pre.Action.Kind)

	registry.RunPostToolUseFailure(ctx, hooks.PostToolUseFailureEvent{Session: session, ToolName: "calculator", CallID: "c1"})
	registry.RunStepComplete(ctx, hooks.StepCompleteEvent{Session: session, Step: 1, Usage: hooks.TokenUsage{PromptTokens: 90, CompletionTokens: 10}})
	fmt.Printf("%+v\n", metrics.Metrics())
	// Output:
	// block
	// {ToolCalls:1 ToolErrors:1 Steps:1 Errors:0 PromptTokens:90 CompletionTokens:10 TotalTokens:100}
}
