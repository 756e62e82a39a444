package llm

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// SummaryPrompt is the system prompt of Summarizer. It is fixed so a
// compaction is reproducible and reviewable; change it deliberately.
const SummaryPrompt = `You compress the earlier part of an AI agent's conversation so the agent can continue without it.
Write a concise summary that keeps:
- the user's goal and every explicit instruction or constraint;
- facts established and decisions made, with numbers, names, file paths and identifiers exactly as written;
- each tool call's purpose and its important results or errors;
- open questions and the work still to do.
Drop greetings, repetition and reasoning that led nowhere. Write in the conversation's language.
Output only the summary as short bullet points, with no preamble.`

// Summarizer defaults.
const (
	DefaultSummaryMaxTokens       = 1024
	DefaultSummaryMaxMessageChars = 4000
)

// Summarizer condenses transcript messages with a model, for context
// compaction (it satisfies compaction.Summarizer). The messages are sent
// as one rendered user message, not replayed as chat turns: the slice to
// summarize may hold tool results whose requests were cut off, which the
// Chat Completions API would reject.
type Summarizer struct {
	Provider Provider
	// Model is passed to the provider; empty means its default.
	Model string
	// MaxTokens caps the summary; 0 means DefaultSummaryMaxTokens.
	MaxTokens int
	// MaxMessageChars caps each message's text in the prompt, so one huge
	// tool result cannot crowd out the rest; 0 means
	// DefaultSummaryMaxMessageChars.
	MaxMessageChars int
}

// Name identifies the summarizer in compaction traces.
func (s Summarizer) Name() string { return "llm:" + s.Model }

// Summarize returns the model's summary of messages ("" for none).
func (s Summarizer) Summarize(ctx context.Context, messages []contract.Message) (string, error) {
	if len(messages) == 0 {
		return "", nil
	}
	maxTokens := s.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultSummaryMaxTokens
	}
	temperature := 0.0
	resp, err := s.Provider.Complete(ctx, Request{
		Model: s.Model,
		Messages: []contract.Message{
			{Role: contract.RoleSystem, Content: SummaryPrompt},
			{Role: contract.RoleUser, Content: RenderTranscript(messages, s.maxMessageChars())},
		},
		MaxTokens:   maxTokens,
		Temperature: &temperature,
	})
	if err != nil {
		return "", err
	}
	summary := strings.TrimSpace(resp.Message.Content)
	if summary == "" {
		return "", fenixerr.New(fenixerr.TypeModelProvider,
			"summarizer model %q (provider %s) returned an empty summary (finish_reason %q)", resp.Model, resp.Provider, resp.FinishReason)
	}
	return summary, nil
}

func (s Summarizer) maxMessageChars() int {
	if s.MaxMessageChars > 0 {
		return s.MaxMessageChars
	}
	return DefaultSummaryMaxMessageChars
}

// RenderTranscript writes messages as plain text for a summarizing model:
//
//	[user]
//	What is 2+2?
//
//	[assistant]
//	calls calculator (call-0-0) with {"expression":"2+2"}
//
//	[tool result for call-0-0]
//	4
func RenderTranscript(messages []contract.Message, maxMessageChars int) string {
	var b strings.Builder
	for i, m := range messages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if m.Role == contract.RoleTool {
			fmt.Fprintf(&b, "[tool result for %s]", m.ToolCallID)
		} else {
			fmt.Fprintf(&b, "[%s]", m.Role)
		}
		if content := strings.TrimSpace(m.Content); content != "" {
			b.WriteString("\n")
			b.WriteString(truncate(content, maxMessageChars))
		}
		for _, tc := range m.ToolCalls {
			args, err := EncodeArguments(tc.Arguments)
			if err != nil {
				args = fmt.Sprintf("(arguments not encodable: %v)", err)
			}
			fmt.Fprintf(&b, "\ncalls %s (%s) with %s", tc.ToolName, tc.CallID, truncate(args, maxMessageChars))
		}
	}
	return b.String()
}

// truncate keeps the first n bytes of s (on a rune boundary) and says how
// much it dropped.
func truncate(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n[... %d bytes omitted ...]", s[:cut], len(s)-cut)
}
