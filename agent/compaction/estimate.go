// Package compaction estimates the token size of a transcript and shrinks
// it when it passes the kernel's budget.
package compaction

import (
	"unicode"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
)

// PerMessageOverhead is the seed's fixed per-message token cost.
const PerMessageOverhead = 4

// Estimator estimates the token count of a message list. The seed's word
// estimator is the default; a tokenizer-backed one can replace it.
type Estimator interface {
	Name() string
	EstimateTokens(messages []contract.Message) int
}

// WordEstimator is the seed's EstimateTokens: whitespace-separated words
// plus 4 per message.
type WordEstimator struct{}

func (WordEstimator) Name() string { return "words+4" }

func (WordEstimator) EstimateTokens(messages []contract.Message) int {
	total := 0
	for _, m := range messages {
		total += CountWords(m.Content) + PerMessageOverhead
		for _, tc := range m.ToolCalls {
			total += CountWords(tc.ToolName)
		}
	}
	return total
}

// CountWords counts whitespace-separated fields without allocating, so the
// estimate is linear in the transcript size with a small constant.
func CountWords(s string) int {
	n := 0
	inWord := false
	for i := 0; i < len(s); {
		c := s[i]
		var space bool
		if c < utf8.RuneSelf {
			space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if space {
			inWord = false
		} else if !inWord {
			inWord = true
			n++
		}
	}
	return n
}

// EstimateMessages is the seed's EstimateMessages: the message count.
func EstimateMessages(messages []contract.Message) int { return len(messages) }
