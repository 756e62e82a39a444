package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	fenixworker "github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// BenchmarkAgentTurnTranscript is the bench's two-step agent turn (one
// calculator call) after a conversation of the given size: how the
// history a turn records grows with the transcript it carries. Besides
// ns/op (one turn, start to result, on the dev server with the shipped
// dynamic config) it reports history-B/op and events/op:
//
//	go test -run '^$' -bench AgentTurnTranscript -benchtime 20x ./internal/harness/bench
func BenchmarkAgentTurnTranscript(b *testing.B) {
	ctx := context.Background()
	cli, err := devserver.CLIPath(ctx, true, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	opts, _, err := serverOptions(ServerFenix)
	if err != nil {
		b.Fatal(err)
	}
	opts.CLIPath = cli
	srv, err := devserver.Start(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	model, err := scriptedModel()
	if err != nil {
		b.Fatal(err)
	}
	w, err := fenixworker.New(srv.Client(), fenixworker.Config{TaskQueue: workflows.DefaultTaskQueue, DataDir: b.TempDir(),
		DefaultWorkspaceRoot: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Model: &llm.Router{Scripted: model}})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	cases := []struct {
		size int
		// byRef sends the conversation as a context_ref into the worker's
		// store, as a kernel does with a large one (`starter run` does it
		// over 2 MB); otherwise it is inline in the assignment.
		byRef bool
	}{{1 << 10, false}, {10 << 10, false}, {50 << 10, false}, {200 << 10, false}, {1 << 20, true}, {10 << 20, true}}
	for _, c := range cases {
		name := fmt.Sprintf("%dKB", c.size>>10)
		if c.byRef {
			name += "-ref"
		}
		b.Run(name, func(b *testing.B) {
			conversation := conversationOf(c.size)
			var ref string
			if c.byRef {
				set, err := contextstore.Put(ctx, w.ContextStore(), messagesOf(conversation))
				if err != nil {
					b.Fatal(err)
				}
				ref = set.Ref
			}
			var bytes, events int
			for b.Loop() {
				id := nextID("bench-transcript")
				a := baseAssignment(id, "calculator")
				a["context_messages"] = conversation
				if ref != "" {
					delete(a, "context_messages")
					a["context_ref"] = ref
				}
				a["model_context"] = map[string]any{"likely_model": "scripted:" + agentScript}
				a["max_steps"] = 4
				run, err := runFenix(ctx, srv.Client(), workflows.AgentTurnWorkflow, id, a, agentAnswer)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				st, err := historyOf(ctx, srv.Client(), run)
				if err != nil {
					b.Fatal(err)
				}
				bytes, events = bytes+st.bytes, events+st.events
				b.StartTimer()
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "history-B/op")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}

// conversationOf is about size bytes of earlier user messages of 1 KB
// each, then the bench's question. (User messages only: the scripted
// model picks its answer by the number of assistant messages.)
func conversationOf(size int) []map[string]any {
	var msgs []map[string]any
	line := strings.Repeat("Earlier we discussed the migration plan in detail. ", 20)[:1000]
	for i := 0; i*1000 < size-100; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": line})
	}
	return append(msgs, map[string]any{"role": "user", "content": "What is 2 + 2?"})
}

func messagesOf(conversation []map[string]any) []contract.Message {
	out := make([]contract.Message, len(conversation))
	for i, m := range conversation {
		out[i] = contract.Message{Role: m["role"].(string), Content: m["content"].(string)}
	}
	return out
}
