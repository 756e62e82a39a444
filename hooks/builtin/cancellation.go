package builtin

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/hooks"
)

// CancellationHook blocks tool calls once the workflow is cancelled. It
// reads the cancellation state the workflow puts in the event and keeps
// none of its own, so there is exactly one cancellation source.
type CancellationHook struct{ hooks.Base }

// NewCancellationHook returns the built-in cancellation guard.
func NewCancellationHook() CancellationHook { return CancellationHook{} }

func (CancellationHook) Name() string { return "cancellation" }

// FailClosed: the cancellation guard never waves a call through by
// accident.
func (CancellationHook) FailClosed() bool { return true }

func (CancellationHook) HandlesEvent(ev hooks.Event) bool { return ev == hooks.EventPreToolUse }

func (CancellationHook) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	if !ev.Cancelled {
		return hooks.Continue(), nil
	}
	reason := ev.CancelReason
	if reason == "" {
		reason = "no reason given"
	}
	return hooks.Block(fmt.Sprintf("session %s was cancelled (%s): tool %q not run", ev.SessionID, reason, ev.ToolName)), nil
}

// CheckedByWorkflow: the workflow checks its cancel state before every
// stage, so PreToolUse never reaches this hook cancelled; a PreToolUse
// stage with no other hook is skipped.
func (CancellationHook) CheckedByWorkflow() bool { return true }
