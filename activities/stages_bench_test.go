package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/agent/prompt"
	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/redact"
	"github.com/fenixrt/fenix/tools"
)

// What each stage of a calculator call costs inside its activity, with
// the hooks a worker without settings files loads (the cancellation
// guard, the SQLite audit log, redaction) and its workspace snapshotter,
// for the main agent's call, called directly: no Temporal,
// no payload conversion. Beside `starter bench`, which measures a whole
// call against its floors, this says which stage's own work is worth
// making cheaper.
//
//	go test -run '^$' -bench 'CalculatorStages' -benchtime 2000x ./activities
func BenchmarkCalculatorStages(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	store, err := audit.Open(ctx, filepath.Join(dir, "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	contexts, err := contextstore.NewFS(filepath.Join(dir, "contexts"))
	if err != nil {
		b.Fatal(err)
	}
	r := hooks.NewRegistry()
	r.Add(builtin.NewCancellationHook())
	r.Add(builtin.NewAuditLogHook(store, 0, nil))
	r.Add(builtin.NewRedactionHook(redact.Default()))
	ws := b.TempDir()
	a := &Activities{Tools: tools.Builtin(), Contexts: contexts, Hooks: r, DefaultWorkspaceRoot: ws,
		Redactor: redact.Default(), InlineLimit: contextstore.DefaultInlineLimit,
		Assembler: &prompt.Assembler{DefaultWorkspaceRoot: ws, Operator: &operator.Snapshotter{}}}
	call := contract.ToolCall{CallID: "call-1", ToolName: "calculator", Arguments: map[string]any{"expression": "2 + 2"}}
	assignment := contract.Assignment{LogicalWorkID: "w", AttemptNo: 1, ConversationID: "conv-1", TurnID: "turn-1",
		ContextMessages: []contract.Message{{Role: contract.RoleUser, Content: "What is 2 + 2?"}},
		AgentContext:    contract.AgentContext{Profile: "main", AllowedToolNames: []string{"calculator", "workspace_read"}},
		ToolCall:        &call, WorkspaceRoot: ws}
	session := hooks.Session{SessionID: "w-1", WorkspaceRoot: ws}
	executed, err := a.ExecuteTool(ctx, ExecuteToolInput{ToolCall: call, ConversationID: "conv-1", TurnID: "turn-1", AgentProfile: "main"})
	if err != nil {
		b.Fatal(err)
	}
	projected, err := a.ProjectToolResult(ctx, ProjectToolResultInput{ToolCall: call, Raw: executed.Raw})
	if err != nil {
		b.Fatal(err)
	}
	for _, stage := range []struct {
		name string
		run  func() error
	}{
		{"ReviewToolCall", func() error {
			_, err := a.ReviewToolCall(ctx, ReviewToolCallInput{ToolCall: call, AgentContext: assignment.AgentContext, Lean: true})
			return err
		}},
		{"PrepareTurn", func() error {
			_, err := a.PrepareTurn(ctx, PrepareTurnInput{Assignment: assignment, DecideCompaction: true, ContextUnused: true})
			return err
		}},
		{"ExecuteTool", func() error {
			_, err := a.ExecuteTool(ctx, ExecuteToolInput{ToolCall: call, ConversationID: "conv-1", TurnID: "turn-1", AgentProfile: "main"})
			return err
		}},
		{"ProjectToolResult", func() error {
			_, err := a.ProjectToolResult(ctx, ProjectToolResultInput{ToolCall: call, Raw: executed.Raw})
			return err
		}},
		{"RunPostToolUseHooks", func() error {
			_, err := a.RunPostToolUseHooks(ctx, hooks.PostToolUseEvent{Session: session, ToolName: call.ToolName, CallID: call.CallID,
				ToolInput: call.Arguments, Content: projected.Projection.Content, RawResult: executed.Raw})
			return err
		}},
		{"FinalizeOutput", func() error {
			_, err := a.FinalizeOutput(ctx, FinalizeOutputInput{Content: projected.Projection.Content, ConversationID: "conv-1", TurnID: "turn-1"})
			return err
		}},
		{"RunLifecycleHooks:session_stop", func() error {
			_, err := a.RunLifecycleHooks(ctx, LifecycleHooksInput{SessionStop: &hooks.SessionStopEvent{Session: session, StopReason: contract.StatusCompleted},
				SessionScope: hooks.ScopeRun})
			return err
		}},
	} {
		b.Run(stage.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := stage.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A main agent's tool call's PrepareTurn by workspace size (files in one
// directory, the snapshot's worst case) and by the size of the transcript
// the assignment carries: the call's context goes to no model, so what
// grows with them should not be there.
//
//	go test -run '^$' -bench 'ToolCallPrepareTurn' -benchtime 200x ./activities
func BenchmarkToolCallPrepareTurn(b *testing.B) {
	for _, size := range []int{10 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("transcript=%dKB", size>>10), func(b *testing.B) {
			ws := b.TempDir()
			a := &Activities{DefaultWorkspaceRoot: ws, Redactor: redact.Default(),
				Assembler: &prompt.Assembler{DefaultWorkspaceRoot: ws, Operator: &operator.Snapshotter{}}}
			call := contract.Assignment{ConversationID: "conv-1", WorkspaceRoot: ws, AgentContext: contract.AgentContext{Profile: "main"}}
			line := strings.Repeat("Earlier we discussed the migration plan in detail. ", 20)[:1000]
			for i := 0; i*1000 < size; i++ {
				call.ContextMessages = append(call.ContextMessages, contract.Message{Role: contract.RoleUser, Content: line})
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: call, DecideCompaction: true, ContextUnused: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, files := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			ws := b.TempDir()
			for i := range files {
				if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%06d.txt", i)), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			a := &Activities{DefaultWorkspaceRoot: ws, Redactor: redact.Default(),
				Assembler: &prompt.Assembler{DefaultWorkspaceRoot: ws, Operator: &operator.Snapshotter{}}}
			call := contract.Assignment{ConversationID: "conv-1", WorkspaceRoot: ws, AgentContext: contract.AgentContext{Profile: "main"},
				ContextMessages: []contract.Message{{Role: contract.RoleUser, Content: "What is 2 + 2?"}}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: call, DecideCompaction: true, ContextUnused: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
