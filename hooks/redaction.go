package hooks

import (
	"context"

	"github.com/fenixrt/fenix/redact"
)

// RedactionHook is the built-in PostToolUse hook that removes secrets from
// a call's content, including content an earlier hook rewrote. Raw tool
// results are redacted before they leave the ExecuteTool activity; this
// hook covers what the model and the kernel read. Register it last so it
// sees every rewrite.
type RedactionHook struct {
	Base
	redactor *redact.Redactor
}

// NewRedactionHook redacts with r.
func NewRedactionHook(r *redact.Redactor) *RedactionHook { return &RedactionHook{redactor: r} }

func (h *RedactionHook) Name() string { return "redaction" }

func (h *RedactionHook) HandlesEvent(ev Event) bool { return ev == EventPostToolUse }

func (h *RedactionHook) PostToolUse(_ context.Context, ev PostToolUseEvent) (PostToolUseAction, error) {
	redacted, n := h.redactor.String(ev.Content)
	if n == 0 {
		return KeepOutput(), nil
	}
	return MutateOutput(redacted), nil
}
