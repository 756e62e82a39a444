package compaction

import (
	"fmt"

	"github.com/fenixrt/fenix/contract"
)

// Strategy names.
const (
	StrategySandwich = "sandwich"
	StrategySummary  = "summary"
)

// Decision is the outcome of the gating rule shared by every strategy.
type Decision struct {
	Threshold       int
	EstimatedTokens int
	Compact         bool
	Reason          string
}

// Decide applies the seed's gate: compact only when the threshold is
// positive, the estimate exceeds it and there are more than two messages.
func Decide(messages []contract.Message, hints contract.BudgetHints, est Estimator) Decision {
	d := Decision{Threshold: hints.CompactionThreshold(), EstimatedTokens: est.EstimateTokens(messages)}
	switch {
	case d.Threshold <= 0:
		d.Reason = "no positive compaction threshold in budget_hints"
	case d.EstimatedTokens <= d.Threshold:
		d.Reason = fmt.Sprintf("estimate %d is within threshold %d", d.EstimatedTokens, d.Threshold)
	case len(messages) <= 2:
		d.Reason = fmt.Sprintf("only %d message(s); nothing to compact", len(messages))
	default:
		d.Compact = true
		d.Reason = fmt.Sprintf("estimate %d exceeds threshold %d", d.EstimatedTokens, d.Threshold)
	}
	return d
}

// PlaceholderContent is the seed's marker for dropped context.
func PlaceholderContent(model string) string {
	if model == "" {
		model = "unknown-model"
	}
	return fmt.Sprintf("Earlier context compacted for %s.", model)
}

// Sandwich is the seed's strategy: keep the first message when it is a
// system message, keep the last two messages, and put a system placeholder
// between them. The first message is every system message the context
// opens with: PrepareRound puts Fenix's prompt first, and a kernel's own
// rules after it would otherwise be the first thing compaction dropped.
// A tail that opens with tool results keeps the assistant message that
// asked for them (and the results between): providers refuse a tool
// message whose call is not before it.
func Sandwich(messages []contract.Message, model string) []contract.Message {
	head := 0
	for head < len(messages) && messages[head].Role == contract.RoleSystem {
		head++
	}
	tail := max(len(messages)-2, head)
	if call := callBefore(messages, head, tail); call >= 0 {
		tail = call
	}
	out := make([]contract.Message, 0, head+1+len(messages)-tail)
	out = append(out, messages[:head]...)
	out = append(out, contract.Message{Role: contract.RoleSystem, Content: PlaceholderContent(model)})
	out = append(out, messages[tail:]...)
	return out
}

// callBefore is the index of the assistant message whose tool calls the
// messages from tail on answer, when they open with tool results (-1
// otherwise, or when no such message follows head).
func callBefore(messages []contract.Message, head, tail int) int {
	if tail >= len(messages) || messages[tail].Role != contract.RoleTool {
		return -1
	}
	for i := tail - 1; i >= head; i-- {
		switch {
		case messages[i].Role == contract.RoleTool:
			continue
		case messages[i].Role == contract.RoleAssistant && len(messages[i].ToolCalls) > 0:
			return i
		default:
			return -1
		}
	}
	return -1
}
