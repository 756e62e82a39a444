package compaction

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// TraceHook is the hook name of CompactContext's trace entry.
const TraceHook = "compact_context"

// Options configure one compaction.
type Options struct {
	// Strategy is StrategySandwich (also when empty) or StrategySummary.
	Strategy string
	// Model names the model in the sandwich placeholder.
	Model string
	Hints contract.BudgetHints
	// Estimator defaults to WordEstimator.
	Estimator Estimator
	// Summarizer is used by the summary strategy; defaults to
	// ExtractiveSummarizer.
	Summarizer Summarizer
}

// Result is CompactContext's outcome: the messages for the model call and
// what the trace reports about the decision.
type Result struct {
	Messages              []contract.Message `json:"messages"`
	Compacted             bool               `json:"compacted"`
	Strategy              string             `json:"strategy"`
	Reason                string             `json:"reason"`
	Threshold             int                `json:"threshold"`
	MessageCountBefore    int                `json:"message_count_before"`
	MessageCountAfter     int                `json:"message_count_after"`
	EstimatedTokensBefore int                `json:"estimated_tokens_before"`
	EstimatedTokensAfter  int                `json:"estimated_tokens_after"`
	Estimator             string             `json:"estimator"`
	// Summarizer and SummarizedMessages are set by the summary strategy.
	Summarizer         string `json:"summarizer,omitempty"`
	SummarizedMessages int    `json:"summarized_messages,omitempty"`
}

// Trace is the result's trace entry.
func (r Result) Trace() contract.TraceEntry {
	e := contract.Trace(TraceHook,
		"compacted", r.Compacted,
		"strategy", r.Strategy,
		"reason", r.Reason,
		"threshold", r.Threshold,
		"message_count_before", r.MessageCountBefore,
		"message_count_after", r.MessageCountAfter,
		"estimated_tokens_before", r.EstimatedTokensBefore,
		"estimated_tokens_after", r.EstimatedTokensAfter,
		"estimator", r.Estimator,
	)
	if r.Summarizer != "" {
		e.Fields["summarizer"] = r.Summarizer
		e.Fields["summarized_messages"] = r.SummarizedMessages
	}
	return e
}

// ValidateStrategy rejects strategy names other than "", "sandwich" and
// "summary", so a typo in an assignment fails loudly instead of silently
// falling back.
func ValidateStrategy(strategy string) error {
	switch strategy {
	case "", StrategySandwich, StrategySummary:
		return nil
	}
	return fenixerr.Validation("compaction.strategy %q is unknown: use %q (default) or %q", strategy, StrategySandwich, StrategySummary)
}

// Compact applies the gate of Decide and, when it says so, the selected
// strategy. messages is not modified.
func Compact(ctx context.Context, messages []contract.Message, opts Options) (Result, error) {
	if err := ValidateStrategy(opts.Strategy); err != nil {
		return Result{}, err
	}
	res, d := gate(messages, opts)
	if !d.Compact {
		return res, nil
	}
	return compact(ctx, messages, opts, res, d)
}

// Unneeded is Compact's result when its gate does not fire (the messages
// unchanged, with the reason in the trace), and false when compaction is
// needed or the strategy is unknown: a caller that has the messages at
// hand can skip a stage that would only repeat them.
func Unneeded(messages []contract.Message, opts Options) (Result, bool) {
	if ValidateStrategy(opts.Strategy) != nil {
		return Result{}, false
	}
	res, d := gate(messages, opts)
	return res, !d.Compact
}

// gate decides whether to compact and fills the result as if nothing is
// compacted.
func gate(messages []contract.Message, opts Options) (Result, Decision) {
	strategy := opts.Strategy
	if strategy == "" {
		strategy = StrategySandwich
	}
	est := estimatorOf(opts)
	d := Decide(messages, opts.Hints, est)
	return Result{
		Messages:              messages,
		Strategy:              strategy,
		Reason:                d.Reason,
		Threshold:             d.Threshold,
		MessageCountBefore:    len(messages),
		MessageCountAfter:     len(messages),
		EstimatedTokensBefore: d.EstimatedTokens,
		EstimatedTokensAfter:  d.EstimatedTokens,
		Estimator:             est.Name(),
	}, d
}

// compact applies the strategy once the gate fired.
func compact(ctx context.Context, messages []contract.Message, opts Options, res Result, d Decision) (Result, error) {
	switch res.Strategy {
	case StrategySandwich:
		res.Messages = Sandwich(messages, opts.Model)
	case StrategySummary:
		summarizer := opts.Summarizer
		if summarizer == nil {
			summarizer = ExtractiveSummarizer{}
		}
		res.Summarizer = summarizerName(summarizer)
		head, middle, tail := PlanSummary(messages)
		if len(middle) == 0 {
			res.Reason = fmt.Sprintf("%s, but the recent tool-call group reaches back to the first message: nothing to summarize", d.Reason)
			return res, nil
		}
		summary, err := summarizer.Summarize(ctx, middle)
		if err != nil {
			return Result{}, fmt.Errorf("summarizing %d earlier messages with the %s summarizer: %w", len(middle), res.Summarizer, err)
		}
		res.SummarizedMessages = len(middle)
		res.Messages = ApplySummary(head, summary, tail)
	}
	res.Compacted = true
	res.MessageCountAfter = len(res.Messages)
	res.EstimatedTokensAfter = estimatorOf(opts).EstimateTokens(res.Messages)
	return res, nil
}

func estimatorOf(opts Options) Estimator {
	if opts.Estimator == nil {
		return WordEstimator{}
	}
	return opts.Estimator
}

func summarizerName(s Summarizer) string {
	if named, ok := s.(interface{ Name() string }); ok {
		return named.Name()
	}
	return fmt.Sprintf("%T", s)
}
