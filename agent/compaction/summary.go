package compaction

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
)

// SummaryPrefix starts the system message that replaces the middle of the
// transcript under the summary strategy.
const SummaryPrefix = "Summary of earlier context:\n"

// Summarizer condenses the middle of a transcript into text. The extractive
// summarizer below is deterministic and offline; an LLM-backed one can
// replace it without touching the split rules.
type Summarizer interface {
	Summarize(ctx context.Context, messages []contract.Message) (string, error)
}

// SummaryContent is the content of the system message holding a summary.
func SummaryContent(summary string) string { return SummaryPrefix + summary }

// PlanSummary splits messages for the summary strategy:
//
//   - head is the leading system message, if there is one;
//   - tail is the most recent messages: at least the last two, extended
//     backwards until no assistant message with tool_calls is separated
//     from the tool messages answering it (matched by tool_call_id);
//   - middle is everything in between, the part to summarize.
//
// middle is empty when the tail has to reach back to the head; there is
// then nothing to summarize. The three slices share messages' backing
// array.
func PlanSummary(messages []contract.Message) (head, middle, tail []contract.Message) {
	start := 0
	if len(messages) > 0 && messages[0].Role == contract.RoleSystem {
		start = 1
	}
	head = messages[:start]
	tailStart := max(len(messages)-2, start)
	tailStart = extendOverToolPairs(messages, start, tailStart)
	return head, messages[start:tailStart], messages[tailStart:]
}

// extendOverToolPairs moves tailStart back until every tool message in the
// tail has the assistant message that requested it in the tail too. Tool
// results always follow their request, so pulling requests in is enough to
// keep every pair on one side of the cut.
func extendOverToolPairs(messages []contract.Message, floor, tailStart int) int {
	requester := make(map[string]int)
	for i := floor; i < tailStart; i++ {
		for _, tc := range messages[i].ToolCalls {
			if tc.CallID != "" {
				requester[tc.CallID] = i
			}
		}
	}
	if len(requester) == 0 {
		return tailStart
	}
	// Scan the tail from the right; whenever a tool message's request lies
	// left of the cut, move the cut there and keep scanning the newly
	// included messages too.
	for i := len(messages) - 1; i >= tailStart; i-- {
		id := messages[i].ToolCallID
		if id == "" {
			continue
		}
		if at, ok := requester[id]; ok && at < tailStart {
			tailStart = at
		}
	}
	return tailStart
}

// ApplySummary rebuilds the transcript: head, one system message holding
// the summary, tail.
func ApplySummary(head []contract.Message, summary string, tail []contract.Message) []contract.Message {
	out := make([]contract.Message, 0, len(head)+1+len(tail))
	out = append(out, head...)
	out = append(out, contract.Message{Role: contract.RoleSystem, Content: SummaryContent(summary)})
	return append(out, tail...)
}

// Extractive summarizer defaults.
const (
	DefaultSummaryMaxChars     = 4000
	DefaultSummaryPerMessage   = 200
	extractiveSummarizerName   = "extractive"
	omittedLineFormat          = "[... %d message(s) omitted ...]"
	extractiveScanWindowFactor = 4
)

// ExtractiveSummarizer summarizes without a model: one line per message
// with its role and the first sentence of its content (or its tool
// calls). When the lines exceed MaxChars it keeps the first user message
// (usually the task) and the most recent messages, and says how many it
// left out. It reads at most a few hundred bytes of each message, so its
// cost does not grow with message size.
type ExtractiveSummarizer struct {
	// MaxChars caps the summary; 0 means DefaultSummaryMaxChars.
	MaxChars int
	// PerMessageChars caps one message's line; 0 means
	// DefaultSummaryPerMessage.
	PerMessageChars int
}

func (ExtractiveSummarizer) Name() string { return extractiveSummarizerName }

// Summarize never fails; the error is there to satisfy Summarizer.
func (s ExtractiveSummarizer) Summarize(_ context.Context, messages []contract.Message) (string, error) {
	maxChars := s.MaxChars
	if maxChars <= 0 {
		maxChars = DefaultSummaryMaxChars
	}
	perMessage := s.PerMessageChars
	if perMessage <= 0 {
		perMessage = DefaultSummaryPerMessage
	}
	if len(messages) == 0 {
		return "", nil
	}

	first := -1
	for i, m := range messages {
		if m.Role == contract.RoleUser {
			first = i
			break
		}
	}
	budget := maxChars
	var firstLine string
	if first >= 0 {
		firstLine = summaryLine(messages[first], perMessage)
		budget -= len(firstLine) + 1
	}
	// Fill the rest from the most recent message backwards.
	var recent []string
	stop := first + 1
	i := len(messages) - 1
	for ; i >= stop; i-- {
		line := summaryLine(messages[i], perMessage)
		if len(line)+1 > budget {
			break
		}
		budget -= len(line) + 1
		recent = append(recent, line)
	}
	omitted := i - stop + 1

	var lines []string
	if first > 0 {
		// Whatever came before the first user message is left out.
		lines = append(lines, fmt.Sprintf(omittedLineFormat, first))
	}
	if first >= 0 {
		lines = append(lines, firstLine)
	}
	if omitted > 0 {
		lines = append(lines, fmt.Sprintf(omittedLineFormat, omitted))
	}
	for j := len(recent) - 1; j >= 0; j-- {
		lines = append(lines, recent[j])
	}
	return strings.Join(lines, "\n"), nil
}

// summaryLine renders "- role: first sentence" for one message.
func summaryLine(m contract.Message, perMessage int) string {
	var b strings.Builder
	b.WriteString("- ")
	b.WriteString(m.Role)
	if m.ToolCallID != "" {
		b.WriteString(" (")
		b.WriteString(oneLine(m.ToolCallID, 64))
		b.WriteByte(')')
	}
	b.WriteString(": ")
	text := firstSentence(m.Content, perMessage)
	if len(m.ToolCalls) > 0 {
		names := make([]string, 0, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			names = append(names, oneLine(tc.ToolName, 64))
		}
		calls := "called " + strings.Join(names, ", ")
		if text != "" {
			text = calls + "; " + text
		} else {
			text = calls
		}
	}
	if text == "" {
		text = "(empty)"
	}
	b.WriteString(clip(text, perMessage))
	return b.String()
}

// firstSentence returns the whitespace-collapsed text up to the first
// sentence end or line break, looking at no more than a small window.
func firstSentence(s string, limit int) string {
	if window := limit * extractiveScanWindowFactor; len(s) > window {
		s = s[:runeBoundary(s, window)]
	}
	s = strings.TrimSpace(s)
	end := len(s)
	for i, r := range s {
		if r == '\n' {
			end = i
			break
		}
		if r == '.' || r == '!' || r == '?' {
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				end = i + 1
				break
			}
		}
		if r == '。' || r == '！' || r == '？' {
			end = i + utf8.RuneLen(r)
			break
		}
	}
	return strings.Join(strings.Fields(s[:end]), " ")
}

// oneLine is s with its whitespace collapsed, clipped to n bytes: a call
// ID or tool name is text from the model, and must not add lines to the
// summary's system message.
func oneLine(s string, n int) string {
	// Whatever is past the clip need not be collapsed.
	if window := n * extractiveScanWindowFactor; len(s) > window {
		s = s[:runeBoundary(s, window)]
	}
	return clip(strings.Join(strings.Fields(s), " "), n)
}

// runeBoundary returns the largest rune start <= n in s.
func runeBoundary(s string, n int) int {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	return s[:runeBoundary(s, max(n-len(ellipsis), 0))] + ellipsis
}
