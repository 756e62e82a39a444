package compaction

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
)

var benchSizes = []struct {
	name  string
	bytes int
}{
	{"1KB", 1 << 10},
	{"10KB", 10 << 10},
	{"100KB", 100 << 10},
	{"1MB", 1 << 20},
	{"10MB", 10 << 20},
	{"100MB", 100 << 20},
}

// benchTranscript builds a transcript whose contents total size bytes:
// messages of up to 1 KiB that slice one shared text, with a tool call and
// result every tenth message so the summary split has pairs to respect.
func benchTranscript(size int) []contract.Message {
	const sentence = "The deploy step finished. Logs show 42 warnings and 0 errors; résumé 部署 ok.\n"
	text := strings.Repeat(sentence, size/len(sentence)+1)[:size]
	per := min(1<<10, max(size/8, 1))
	messages := []contract.Message{{Role: contract.RoleSystem, Content: "You are Fenix."}}
	for i, off := 0, 0; off < size; i++ {
		end := min(off+per, size)
		m := contract.Message{Role: contract.RoleUser, Content: text[off:end]}
		switch i % 10 {
		case 1, 3:
			m.Role = contract.RoleAssistant
		case 8:
			m.Role = contract.RoleAssistant
			m.ToolCalls = []contract.ToolCall{{CallID: fmt.Sprintf("call-%d", i), ToolName: "exec_command"}}
		case 9:
			m.Role = contract.RoleTool
			m.ToolCallID = fmt.Sprintf("call-%d", i-1)
		}
		messages = append(messages, m)
		off = end
	}
	return messages
}

func runSizes(b *testing.B, fn func(b *testing.B, messages []contract.Message)) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			if testing.Short() && size.bytes > 10<<20 {
				b.Skip("skipping transcripts over 10 MB in -short mode")
			}
			messages := benchTranscript(size.bytes)
			b.SetBytes(int64(size.bytes))
			b.ReportAllocs()
			b.ResetTimer()
			fn(b, messages)
		})
	}
}

func BenchmarkEstimateTokens(b *testing.B) {
	runSizes(b, func(b *testing.B, messages []contract.Message) {
		for b.Loop() {
			WordEstimator{}.EstimateTokens(messages)
		}
	})
}

func benchCompact(b *testing.B, strategy string) {
	threshold := 1
	opts := Options{Strategy: strategy, Model: "bench-model", Hints: contract.BudgetHints{AdvisoryCompactionThresholdTokens: &threshold}}
	runSizes(b, func(b *testing.B, messages []contract.Message) {
		for b.Loop() {
			res, err := Compact(context.Background(), messages, opts)
			if err != nil || !res.Compacted {
				b.Fatalf("Compact: compacted=%v err=%v", res.Compacted, err)
			}
		}
	})
}

func BenchmarkCompactSandwich(b *testing.B) { benchCompact(b, StrategySandwich) }

func BenchmarkCompactSummary(b *testing.B) { benchCompact(b, StrategySummary) }
