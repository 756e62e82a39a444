package activities

import (
	"cmp"
	"context"
	"reflect"

	"github.com/fenixrt/fenix/agent/compaction"
	"github.com/fenixrt/fenix/agent/prompt"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// Context stage names.
const (
	StageStoreContext     = "store_context"
	StageSummarizeContext = "summarize_context"
	StagePreCompact       = "pre_compact"
	StagePostCompact      = "post_compact"
)

// StoreContextInput carries an inline transcript too large to copy into
// every stage's input.
type StoreContextInput struct {
	Messages []contract.Message `json:"messages"`
}

// StoreContextResult is the transcript's reference in the context store.
type StoreContextResult struct {
	Messages contract.MessageSet `json:"messages"`
	Trace    contract.TraceEntry `json:"trace"`
}

// StoreContext moves an inline transcript into the context store. It runs
// as a local activity: local activity inputs are not written to history,
// so the transcript is recorded once (in the workflow's start event) and
// later stages carry only its reference.
func (a *Activities) StoreContext(ctx context.Context, in StoreContextInput) (StoreContextResult, error) {
	set, err := contextstore.Put(ctx, a.Contexts, in.Messages)
	if err != nil {
		return fail[StoreContextResult](err)
	}
	return StoreContextResult{
		Messages: set,
		Trace:    contract.Trace(StageStoreContext, "context_ref", set.Ref, "message_count", set.Count, "context_bytes", set.Bytes),
	}, nil
}

// PrepareTurnInput is PrepareTurn's input.
type PrepareTurnInput struct {
	Assignment contract.Assignment `json:"assignment"`
	// DecideCompaction asks PrepareTurn to apply CompactContext's gate
	// to the context it assembled (fenix-shape 7): when no compaction is
	// needed, its result carries CompactContext's answer and the workflow
	// leaves that stage out.
	DecideCompaction bool `json:"decide_compaction,omitempty"`
	// ContextUnused says the caller does not read the assembled messages
	// (a tool call's or skill operation's assignment, fenix-shape 8): when
	// DecideCompaction finds nothing to compact, the result leaves them
	// out and nothing is put in the context store, so the stage costs its
	// trace and estimates rather than a copy of the system prompt.
	ContextUnused bool `json:"context_unused,omitempty"`
	// TranscriptKept says the caller keeps the inline transcript it sent
	// (fenix-shape 10): when the assembled context is inline and ends with
	// that transcript unchanged, the result holds only what precedes it
	// (TranscriptTail), so history does not record the transcript again.
	TranscriptKept bool `json:"transcript_kept,omitempty"`
}

// PrepareTurnResult is the assembled context.
type PrepareTurnResult struct {
	Messages              contract.MessageSet `json:"messages"`
	LikelyModel           string              `json:"likely_model"`
	EstimatedMessageCount int                 `json:"estimated_message_count"`
	EstimatedTokenCount   int                 `json:"estimated_token_count"`
	Trace                 contract.TraceEntry `json:"trace"`
	// NoCompaction is set when DecideCompaction found nothing to compact:
	// CompactContext's result for Messages (which it leaves out), without
	// running it.
	NoCompaction *CompactContextResult `json:"no_compaction,omitempty"`
	// TranscriptTail says Messages holds only the context's head (the
	// system prompt): the context is the head followed by the transcript
	// the caller sent and kept. Count and Bytes are the whole context's.
	TranscriptTail bool `json:"transcript_tail,omitempty"`
}

func (a *Activities) assembler() *prompt.Assembler {
	if a.Assembler != nil {
		return a.Assembler
	}
	return &prompt.Assembler{Estimator: a.estimator(), DefaultWorkspaceRoot: a.DefaultWorkspaceRoot, WorkspaceBases: a.WorkspaceBases}
}

// assemblerFor is the assembler for one PrepareTurn: when nothing reads
// the context (ContextUnused: a tool call's is never sent to a model), one
// that skips what grows with the workspace, the workspace snapshot (which
// also writes operator_state.json; 13 ms at 10,000 files in one
// directory) and loading the skills the transcript refers to.
//
// The snapshot leaves out what the permission rules keep from a read, as
// workspace_list does, so the assembler gets the current rules' verdict.
func (a *Activities) assemblerFor(in PrepareTurnInput) *prompt.Assembler {
	as := *a.assembler()
	if filter, ok := a.hookRegistry().PermissionPolicy().(hooks.PathFilter); ok {
		as.ReadDenied = filter.ReadDenied
	}
	if in.ContextUnused {
		as.Unread = "the context goes to no model (a tool call or skill operation)"
	}
	return &as
}

// PrepareTurn assembles [system prompt] + transcript: profile sections,
// selected skills, the operator snapshot (main agent only), estimates.
func (a *Activities) PrepareTurn(ctx context.Context, in PrepareTurnInput) (PrepareTurnResult, error) {
	as := in.Assignment
	// Every run starts here, so a workspace root outside the bases fails the
	// assignment even when no tool would open it.
	if _, err := a.resolveWorkspaceRoot(as.WorkspaceRoot); err != nil {
		return fail[PrepareTurnResult](err)
	}
	transcript := as.ContextMessages
	if as.ContextRef != "" {
		var err error
		if transcript, err = contextstore.Unpack(ctx, a.Contexts, contract.MessageSet{Ref: as.ContextRef}); err != nil {
			return fail[PrepareTurnResult](err)
		}
	}
	prepared, err := a.assemblerFor(in).Prepare(ctx, as, transcript)
	if err != nil {
		return fail[PrepareTurnResult](ctxErr(ctx, err))
	}
	var noCompaction *CompactContextResult
	if in.ContextUnused {
		// Nothing reads this context unless it must be compacted (then
		// CompactContext's hooks and summarizer see it): decide first, and
		// redact only a context that goes on. Redacting a long transcript
		// is most of this stage's work (22 of 35 ms at 1 MB).
		noCompaction = a.noCompaction(as, prepared.Messages, prepared.LikelyModel)
	}
	redactions := 0
	if noCompaction == nil {
		if prepared.Messages, redactions, err = a.redactMessages(prepared.Messages); err != nil {
			return fail[PrepareTurnResult](err)
		}
		if in.DecideCompaction && !in.ContextUnused {
			noCompaction = a.noCompaction(as, prepared.Messages, prepared.LikelyModel)
		}
	}
	var set contract.MessageSet
	if in.ContextUnused && noCompaction != nil {
		set, err = contextstore.Measure(prepared.Messages)
	} else {
		set, err = contextstore.Pack(ctx, a.Contexts, prepared.Messages, a.InlineLimit)
	}
	if err != nil {
		return fail[PrepareTurnResult](err)
	}
	tail := in.TranscriptKept && set.Ref == "" && as.ContextRef == "" && endsWith(set.Messages, transcript)
	if tail {
		set.Messages = set.Messages[:len(set.Messages)-len(transcript)]
	}
	trace := prepared.Trace.Entry()
	trace.Fields["context_bytes"] = set.Bytes
	if set.Ref != "" {
		trace.Fields["context_ref"] = set.Ref
	}
	if redactions > 0 {
		trace.Fields["context_redactions"] = redactions
	}
	return PrepareTurnResult{
		Messages:              set,
		LikelyModel:           prepared.LikelyModel,
		EstimatedMessageCount: prepared.EstimatedMessageCount,
		EstimatedTokenCount:   prepared.EstimatedTokenCount,
		NoCompaction:          noCompaction,
		TranscriptTail:        tail,
		Trace:                 trace,
	}, nil
}

// endsWith is whether messages end with tail, unchanged (not redacted).
func endsWith(messages, tail []contract.Message) bool {
	return len(messages) >= len(tail) && reflect.DeepEqual(messages[len(messages)-len(tail):], tail)
}

// CompactContextInput is CompactContext's input.
type CompactContextInput struct {
	Messages    contract.MessageSet  `json:"messages"`
	BudgetHints contract.BudgetHints `json:"budget_hints"`
	LikelyModel string               `json:"likely_model"`
	Strategy    string               `json:"strategy,omitempty"`
	// InlineLimit overrides the worker's inline limit for the result, so
	// PrepareRound can return its messages directly when they fit.
	InlineLimit int           `json:"inline_limit,omitempty"`
	Session     hooks.Session `json:"session"`
}

// SummaryPlan is a summary compaction waiting for its summary: the middle
// goes to SummarizeContext, head and tail are kept as they are.
type SummaryPlan struct {
	Head      contract.MessageSet `json:"head"`
	Middle    contract.MessageSet `json:"middle"`
	Tail      contract.MessageSet `json:"tail"`
	Threshold int                 `json:"threshold"`
	// EstimatedTokensBefore and MessageCountBefore describe the whole
	// context before compaction, for SummarizeContext's trace.
	EstimatedTokensBefore int    `json:"estimated_tokens_before"`
	MessageCountBefore    int    `json:"message_count_before"`
	Reason                string `json:"reason"`
}

// CompactContextResult is the (possibly) compacted context, or a summary
// plan when the summary strategy needs SummarizeContext to finish.
type CompactContextResult struct {
	Messages            contract.MessageSet  `json:"messages"`
	Compacted           bool                 `json:"compacted"`
	EstimatedTokenCount int                  `json:"estimated_token_count"`
	Summary             *SummaryPlan         `json:"summary_plan,omitempty"`
	PreCompact          *contract.TraceEntry `json:"pre_compact,omitempty"`
	PostCompact         *contract.TraceEntry `json:"post_compact,omitempty"`
	Trace               contract.TraceEntry  `json:"trace"`
}

// CompactContext applies the seed's gate and, when it fires, the chosen
// strategy, with PreCompact/PostCompact hooks around it. The summary
// strategy returns a plan; SummarizeContext produces the summary.
func (a *Activities) CompactContext(ctx context.Context, in CompactContextInput) (CompactContextResult, error) {
	if err := compaction.ValidateStrategy(in.Strategy); err != nil {
		return fail[CompactContextResult](err)
	}
	messages, err := contextstore.Unpack(ctx, a.Contexts, in.Messages)
	if err != nil {
		return fail[CompactContextResult](err)
	}
	limit := in.InlineLimit
	if limit == 0 {
		limit = a.InlineLimit
	}
	decision := compaction.Decide(messages, in.BudgetHints, a.estimator())
	var out CompactContextResult
	if decision.Compact {
		// PreCompact hooks read the transcript about to be compacted.
		session, err := a.hookSession(ctx, hooks.EventPreCompact, withTranscript(in.Session, messages))
		if err != nil {
			return fail[CompactContextResult](err)
		}
		pre := a.hookRegistry().RunPreCompact(ctx, hooks.PreCompactEvent{
			Session: session, Trigger: hooks.CompactAuto,
			MessageCount: len(messages), TokenCount: decision.EstimatedTokens,
		})
		t := summaryTrace(hooks.EventPreCompact, pre)
		out.PreCompact = &t
		if pre.Blocked != "" {
			return a.compactionBlocked(ctx, out, messages, limit, in.Strategy, decision, pre.Blocked)
		}
	}

	if in.Strategy == compaction.StrategySummary && decision.Compact {
		head, middle, tail := compaction.PlanSummary(messages)
		if len(middle) > 0 {
			plan := &SummaryPlan{Threshold: decision.Threshold, EstimatedTokensBefore: decision.EstimatedTokens, MessageCountBefore: len(messages), Reason: decision.Reason}
			for _, part := range []struct {
				dst *contract.MessageSet
				src []contract.Message
			}{{&plan.Head, head}, {&plan.Middle, middle}, {&plan.Tail, tail}} {
				if *part.dst, err = contextstore.Pack(ctx, a.Contexts, part.src, a.InlineLimit); err != nil {
					return fail[CompactContextResult](err)
				}
			}
			out.Summary = plan
			out.EstimatedTokenCount = decision.EstimatedTokens
			out.Trace = contract.Trace(compaction.TraceHook,
				"compacted", false, "strategy", compaction.StrategySummary, "summary_pending", true,
				"reason", decision.Reason, "threshold", decision.Threshold,
				"estimated_tokens_before", decision.EstimatedTokens, "message_count_before", len(messages),
				"messages_to_summarize", len(middle))
			return out, nil
		}
	}

	res, err := compaction.Compact(ctx, messages, compaction.Options{
		Strategy: in.Strategy, Model: in.LikelyModel, Hints: in.BudgetHints, Estimator: a.estimator(),
		Summarizer: compaction.ExtractiveSummarizer{},
	})
	if err != nil {
		return fail[CompactContextResult](ctxErr(ctx, err))
	}
	if out.Messages, err = contextstore.Pack(ctx, a.Contexts, res.Messages, limit); err != nil {
		return fail[CompactContextResult](err)
	}
	out.Compacted = res.Compacted
	out.EstimatedTokenCount = res.EstimatedTokensAfter
	out.Trace = res.Trace()
	if res.Compacted {
		post, err := a.postCompact(ctx, withTranscript(in.Session, res.Messages), res.MessageCountBefore, res.MessageCountAfter, res.EstimatedTokensBefore, res.EstimatedTokensAfter)
		if err != nil {
			return fail[CompactContextResult](err)
		}
		out.PostCompact = &post
	}
	return out, nil
}

// compactionBlocked is CompactContext's result when a PreCompact hook
// refused the compaction: as in Claude Code, the conversation goes on
// uncompacted (and a model call it no longer fits fails as such).
func (a *Activities) compactionBlocked(ctx context.Context, out CompactContextResult, messages []contract.Message, limit int, strategy string, d compaction.Decision, blocked string) (CompactContextResult, error) {
	packed, err := contextstore.Pack(ctx, a.Contexts, messages, limit)
	if err != nil {
		return fail[CompactContextResult](err)
	}
	out.Messages = packed
	out.EstimatedTokenCount = d.EstimatedTokens
	out.Trace = compaction.Result{Strategy: cmp.Or(strategy, compaction.StrategySandwich), Reason: d.Reason, Threshold: d.Threshold,
		MessageCountBefore: len(messages), MessageCountAfter: len(messages),
		EstimatedTokensBefore: d.EstimatedTokens, EstimatedTokensAfter: d.EstimatedTokens,
		Estimator: a.estimator().Name()}.Trace()
	out.Trace.Fields["blocked_by"] = blocked
	return out, nil
}

// noCompaction applies CompactContext's gate to the assembled messages
// and, when it does not fire, returns CompactContext's result for them
// (the same messages and its "compact_context" trace entry), so the
// stage, which would only repeat them, can be left out. It returns nil
// when compaction is needed or the strategy is invalid (CompactContext
// then runs, and refuses it).
func (a *Activities) noCompaction(as contract.Assignment, messages []contract.Message, model string) *CompactContextResult {
	res, unneeded := compaction.Unneeded(messages, compaction.Options{
		Strategy: as.Compaction.Strategy, Model: model, Hints: as.BudgetHints, Estimator: a.estimator(),
	})
	if !unneeded {
		return nil
	}
	// The messages are PrepareTurn's own: the workflow puts them back
	// rather than history holding them twice.
	return &CompactContextResult{EstimatedTokenCount: res.EstimatedTokensAfter, Trace: res.Trace()}
}

// withTranscript gives the hooks of a compaction the messages at hand as
// the session's transcript.
func withTranscript(s hooks.Session, msgs []contract.Message) hooks.Session {
	s.Transcript = &contract.MessageSet{Messages: msgs, Count: len(msgs)}
	return s
}

func (a *Activities) postCompact(ctx context.Context, s hooks.Session, before, after, tokensBefore, tokensAfter int) (contract.TraceEntry, error) {
	s, err := a.hookSession(ctx, hooks.EventPostCompact, s)
	if err != nil {
		return contract.TraceEntry{}, err
	}
	sum := a.hookRegistry().RunPostCompact(ctx, hooks.PostCompactEvent{
		Session: s, Trigger: hooks.CompactAuto,
		MessagesBefore: before, MessagesAfter: after, TokensBefore: tokensBefore, TokensAfter: tokensAfter,
	})
	return summaryTrace(hooks.EventPostCompact, sum), nil
}

// SummarizeContextInput finishes a summary compaction.
type SummarizeContextInput struct {
	Plan        SummaryPlan   `json:"plan"`
	Summarizer  string        `json:"summarizer,omitempty"`
	LikelyModel string        `json:"likely_model"`
	InlineLimit int           `json:"inline_limit,omitempty"`
	Session     hooks.Session `json:"session"`
}

// SummarizeContext runs the pluggable summarizer over the middle of the
// context and splices its summary between head and tail. It is its own
// stage so a model-backed summarizer gets its own timeout and retries.
func (a *Activities) SummarizeContext(ctx context.Context, in SummarizeContextInput) (CompactContextResult, error) {
	name := in.Summarizer
	if name == "" {
		name = compaction.ExtractiveSummarizer{}.Name()
	}
	summarizer, ok := a.Summarizers[name]
	if !ok && name == (compaction.ExtractiveSummarizer{}).Name() {
		summarizer, ok = compaction.ExtractiveSummarizer{}, true
	}
	if !ok {
		return fail[CompactContextResult](fenixerr.Validation("summarizer %q is not configured on this worker", name))
	}
	var parts [3][]contract.Message
	for i, set := range []contract.MessageSet{in.Plan.Head, in.Plan.Middle, in.Plan.Tail} {
		msgs, err := contextstore.Unpack(ctx, a.Contexts, set)
		if err != nil {
			return fail[CompactContextResult](err)
		}
		parts[i] = msgs
	}
	summary, err := summarizer.Summarize(ctx, parts[1])
	if err != nil {
		return fail[CompactContextResult](ctxErr(ctx, err))
	}
	messages := compaction.ApplySummary(parts[0], summary, parts[2])
	limit := in.InlineLimit
	if limit == 0 {
		limit = a.InlineLimit
	}
	set, err := contextstore.Pack(ctx, a.Contexts, messages, limit)
	if err != nil {
		return fail[CompactContextResult](err)
	}
	tokens := a.estimator().EstimateTokens(messages)
	post, err := a.postCompact(ctx, withTranscript(in.Session, messages), in.Plan.MessageCountBefore, len(messages), in.Plan.EstimatedTokensBefore, tokens)
	if err != nil {
		return fail[CompactContextResult](err)
	}
	return CompactContextResult{
		Messages:            set,
		Compacted:           true,
		EstimatedTokenCount: tokens,
		PostCompact:         &post,
		Trace: contract.Trace(StageSummarizeContext,
			"compacted", true, "strategy", compaction.StrategySummary, "summarizer", name,
			"summarized_messages", len(parts[1]), "summary_bytes", len(summary),
			"message_count_before", in.Plan.MessageCountBefore, "message_count_after", len(messages),
			"estimated_tokens_before", in.Plan.EstimatedTokensBefore, "estimated_tokens_after", tokens),
	}, nil
}
