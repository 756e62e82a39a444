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
// between them.
func Sandwich(messages []contract.Message, model string) []contract.Message {
	out := make([]contract.Message, 0, 4)
	if messages[0].Role == contract.RoleSystem {
		out = append(out, messages[0])
	}
	out = append(out, contract.Message{Role: contract.RoleSystem, Content: PlaceholderContent(model)})
	out = append(out, messages[len(messages)-2:]...)
	return out
}
