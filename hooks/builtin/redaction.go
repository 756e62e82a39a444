package builtin

import (
	"context"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/redact"
)

// RedactionHook is the built-in PostToolUse hook that removes secrets from
// a call's content, including content an earlier hook rewrote. Raw tool
// results are redacted before they leave the ExecuteTool activity; this
// hook covers what the model and the kernel read. Register it last so it
// sees every rewrite.
type RedactionHook struct {
	hooks.Base

	redactor *redact.Redactor
}

// NewRedactionHook redacts with r.
func NewRedactionHook(r *redact.Redactor) *RedactionHook { return &RedactionHook{redactor: r} }

func (h *RedactionHook) Name() string { return "redaction" }

func (h *RedactionHook) HandlesEvent(ev hooks.Event) bool { return ev == hooks.EventPostToolUse }

func (h *RedactionHook) PostToolUse(_ context.Context, ev hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	redacted, n := h.redactor.String(ev.Content)
	if n == 0 {
		return hooks.KeepOutput(), nil
	}
	return hooks.MutateOutput(redacted), nil
}
