package builtin

import (
	"context"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// MetricsSummaryEverySteps is how often MetricsHook logs a summary.
const MetricsSummaryEverySteps = 3

// MetricsHook counts tool calls, tool errors, steps, errors and tokens.
//
// It is pure and deterministic (no clock, no goroutines, no I/O besides the
// injected log function, no map iteration), so workflow code can drive it
// directly and serve Metrics() on the metrics query; its counters are then
// workflow state, and NewMetricsHook's initial value carries them across
// continue-as-new. It is not safe for concurrent use, which workflow code
// never needs.
type MetricsHook struct {
	hooks.Base

	metrics   contract.Metrics
	sessionID string
	logf      hooks.LogFunc
}

// NewMetricsHook starts from initial (zero for a new session) and logs a
// summary through logf every MetricsSummaryEverySteps steps and at session
// stop; logf may be nil.
func NewMetricsHook(initial contract.Metrics, logf hooks.LogFunc) *MetricsHook {
	return &MetricsHook{metrics: initial, logf: logf}
}

func (h *MetricsHook) Name() string { return "metrics" }

func (h *MetricsHook) HandlesEvent(ev hooks.Event) bool {
	switch ev {
	case hooks.EventSessionStart, hooks.EventPostToolUse, hooks.EventPostToolUseFailure, hooks.EventStepComplete, hooks.EventError, hooks.EventSessionStop:
		return true
	}
	return false
}

// Metrics returns the counters so far.
func (h *MetricsHook) Metrics() contract.Metrics { return h.metrics }

func (h *MetricsHook) OnSessionStart(_ context.Context, ev hooks.SessionStartEvent) error {
	h.sessionID = ev.SessionID
	return nil
}

// PostToolUse counts a call; a result whose own status is failed counts as
// a tool error too.
func (h *MetricsHook) PostToolUse(_ context.Context, ev hooks.PostToolUseEvent) (hooks.PostToolUseAction, error) {
	h.metrics.ToolCalls++
	if ev.Status == contract.StatusFailed || ev.Status == "error" {
		h.metrics.ToolErrors++
	}
	return hooks.KeepOutput(), nil
}

func (h *MetricsHook) PostToolUseFailure(context.Context, hooks.PostToolUseFailureEvent) error {
	h.metrics.ToolCalls++
	h.metrics.ToolErrors++
	return nil
}

func (h *MetricsHook) OnStepComplete(_ context.Context, ev hooks.StepCompleteEvent) error {
	h.metrics.Steps++
	h.metrics.PromptTokens += ev.Usage.PromptTokens
	h.metrics.CompletionTokens += ev.Usage.CompletionTokens
	h.metrics.TotalTokens += ev.Usage.Total()
	if h.metrics.Steps%MetricsSummaryEverySteps == 0 {
		h.log("agent metrics summary", h.sessionOr(ev.SessionID))
	}
	return nil
}

func (h *MetricsHook) OnError(context.Context, hooks.ErrorEvent) error {
	h.metrics.Errors++
	return nil
}

func (h *MetricsHook) OnSessionStop(_ context.Context, ev hooks.SessionStopEvent) error {
	h.log("agent session metrics", h.sessionOr(ev.SessionID), "stop_reason", ev.StopReason)
	return nil
}

func (h *MetricsHook) sessionOr(fallback string) string {
	if h.sessionID != "" {
		return h.sessionID
	}
	return fallback
}

func (h *MetricsHook) log(msg, sessionID string, extra ...any) {
	if h.logf == nil {
		return
	}
	m := h.metrics
	kv := []any{
		"session_id", sessionID,
		"steps", m.Steps,
		"tool_calls", m.ToolCalls,
		"tool_errors", m.ToolErrors,
		"errors", m.Errors,
		"prompt_tokens", m.PromptTokens,
		"completion_tokens", m.CompletionTokens,
		"total_tokens", m.TotalTokens,
	}
	h.logf(msg, append(kv, extra...)...)
}
