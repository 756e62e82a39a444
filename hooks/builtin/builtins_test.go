package builtin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

func TestCancellationHookBlocksWhenCancelled(t *testing.T) {
	var log []string
	r := hooks.NewRegistry()
	r.Add(NewCancellationHook())
	r.Add(&recorder{name: "after", log: &log})
	ev := toolCall()
	ev.Cancelled, ev.CancelReason = true, "user pressed stop"

	res := r.RunPreToolUse(context.Background(), ev)

	if !res.Blocked() || res.DecidedBy != "cancellation" {
		t.Fatalf("result = %+v, want a block by the cancellation hook", res)
	}
	if !strings.Contains(res.Action.Reason, "user pressed stop") || !strings.Contains(res.Action.Reason, "wf-1") {
		t.Errorf("reason = %q, want the cancel reason and session", res.Action.Reason)
	}
	if len(log) != 0 {
		t.Errorf("calls = %v, want no hook after the block", log)
	}
}

// recorder is a Go hook that logs the PreToolUse calls it gets.
type recorder struct {
	hooks.Base
	name string
	log  *[]string
}

func (h *recorder) Name() string { return h.name }

func (h *recorder) PreToolUse(context.Context, hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	if h.log != nil {
		*h.log = append(*h.log, h.name+":pre_tool_use")
	}
	return hooks.Continue(), nil
}

// toolCall is a PreToolUse event of session wf-1.
func toolCall() hooks.PreToolUseEvent {
	return hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "wf-1"}, ToolName: "exec_command", CallID: "call-1"}
}

func TestCancellationHookAllowsWhenNotCancelled(t *testing.T) {
	r := hooks.NewRegistry()
	r.Add(NewCancellationHook())
	if res := r.RunPreToolUse(context.Background(), toolCall()); res.Blocked() || res.Action.Kind != hooks.KindContinue {
		t.Errorf("result = %+v, want continue", res)
	}
}

func TestMetricsHookAccumulatesCounts(t *testing.T) {
	var lines []string
	logf := func(msg string, kv ...any) { lines = append(lines, msg+" "+fmt.Sprintf("%v", kv)) }
	m := NewMetricsHook(contract.Metrics{}, logf)
	r := hooks.NewRegistry()
	r.Add(m)
	ctx := context.Background()
	s := hooks.Session{SessionID: "wf-metrics"}

	r.RunSessionStart(ctx, hooks.SessionStartEvent{Session: s, Source: hooks.SourceStartup})
	r.RunPostToolUse(ctx, hooks.PostToolUseEvent{Session: s, ToolName: "calculator", Status: contract.StatusCompleted})
	r.RunPostToolUse(ctx, hooks.PostToolUseEvent{Session: s, ToolName: "exec_command", Status: contract.StatusFailed})
	r.RunPostToolUseFailure(ctx, hooks.PostToolUseFailureEvent{Session: s, ToolName: "exec_command"})
	r.RunError(ctx, hooks.ErrorEvent{Session: s, Stage: "execute_tool"})
	for step := 1; step <= 4; step++ {
		r.RunStepComplete(ctx, hooks.StepCompleteEvent{Session: s, Step: step, Usage: hooks.TokenUsage{PromptTokens: 100, CompletionTokens: 20}})
	}
	r.RunSessionStop(ctx, hooks.SessionStopEvent{Session: s, StopReason: hooks.StopCompleted})

	want := contract.Metrics{ToolCalls: 3, ToolErrors: 2, Steps: 4, Errors: 1, PromptTokens: 400, CompletionTokens: 80, TotalTokens: 480}
	if got := m.Metrics(); got != want {
		t.Errorf("metrics = %+v, want %+v", got, want)
	}
	if len(lines) != 2 {
		t.Fatalf("log lines = %q, want a summary at step 3 and one at session stop", lines)
	}
	if !strings.HasPrefix(lines[0], "agent metrics summary") || !strings.Contains(lines[0], "wf-metrics") || !strings.Contains(lines[0], "steps 3") {
		t.Errorf("step summary = %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "agent session metrics") || !strings.Contains(lines[1], "stop_reason completed") {
		t.Errorf("stop summary = %q", lines[1])
	}
}

func TestMetricsHookResumesFromInitialAndIsDeterministic(t *testing.T) {
	run := func() (contract.Metrics, []string) {
		var lines []string
		m := NewMetricsHook(contract.Metrics{Steps: 2, TotalTokens: 10}, func(msg string, kv ...any) {
			lines = append(lines, fmt.Sprint(append([]any{msg}, kv...)...))
		})
		ctx := context.Background()
		_ = m.OnStepComplete(ctx, hooks.StepCompleteEvent{Step: 3, Usage: hooks.TokenUsage{TotalTokens: 7}})
		_ = m.OnSessionStop(ctx, hooks.SessionStopEvent{StopReason: hooks.StopCanceled})
		return m.Metrics(), lines
	}
	m1, l1 := run()
	m2, l2 := run()
	if m1.Steps != 3 || m1.TotalTokens != 17 {
		t.Errorf("metrics = %+v, want counting to continue from the initial value", m1)
	}
	if m1 != m2 || strings.Join(l1, "|") != strings.Join(l2, "|") {
		t.Errorf("two identical runs differ: %v %q vs %v %q", m1, l1, m2, l2)
	}
	if len(l1) != 2 {
		t.Errorf("log lines = %q, want a summary at step 3 (resumed) and at stop", l1)
	}
}

func openTestStore(t *testing.T) *audit.SQLStore {
	t.Helper()
	store, err := audit.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func TestAuditLogHookWritesIdempotentRows(t *testing.T) {
	store := openTestStore(t)
	r := hooks.NewRegistry()
	r.Add(NewAuditLogHook(store, 0, nil))
	ctx := context.Background()
	s := hooks.Session{SessionID: "wf-audit", RunID: "run-1", ConversationID: "conv", TurnID: "turn"}
	calcArgs := map[string]any{"expression": "2 + 2"}
	execArgs := map[string]any{"command_line": "sleep 100"}

	// Twice, as a retried activity would.
	for range 2 {
		for _, sum := range []hooks.Summary{
			{Decisions: r.RunPostToolUse(ctx, hooks.PostToolUseEvent{Session: s, ToolName: "calculator", CallID: "c1", ToolInput: calcArgs, Content: "4", DurationMS: 3}).Decisions},
			r.RunPostToolUseFailure(ctx, hooks.PostToolUseFailureEvent{Session: s, ToolName: "exec_command", CallID: "c2", ToolInput: execArgs, ErrorType: "ToolTimeoutError", ErrorMessage: "took too long"}),
			r.RunSessionStop(ctx, hooks.SessionStopEvent{Session: s, StopReason: hooks.StopCanceled, ErrorMessage: "user cancel"}),
		} {
			if err := sum.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	rows, err := store.Query(ctx, audit.Filter{SessionID: "wf-audit"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("rows = %+v, want exactly 3 after recording everything twice", rows)
	}
	call, failure, stop := rows[0], rows[1], rows[2]
	if call.Event != audit.EventToolCall || call.CallID != "c1" || call.Status != contract.StatusCompleted || call.OutputPreview != "4" || call.DurationMS != 3 || call.TurnID != "turn" ||
		call.ArgsHash != contract.ArgumentsHash(calcArgs) {
		t.Errorf("tool call row = %+v", call)
	}
	if failure.Event != audit.EventToolFailure || failure.Status != contract.StatusFailed || failure.Error != "ToolTimeoutError: took too long" ||
		failure.ArgsHash != contract.ArgumentsHash(execArgs) {
		t.Errorf("failure row = %+v", failure)
	}
	if stop.Event != audit.EventSessionStop || stop.Status != hooks.StopCanceled || stop.CallID != "" || stop.Error != "user cancel" {
		t.Errorf("session stop row = %+v", stop)
	}
}

func TestAuditLogHookWritesEvenWhenCallerIsCancelled(t *testing.T) {
	store := openTestStore(t)
	h := NewAuditLogHook(store, time.Second, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.OnSessionStop(ctx, hooks.SessionStopEvent{Session: hooks.Session{SessionID: "wf-c"}, StopReason: hooks.StopCanceled}); err != nil {
		t.Fatalf("SESSION_STOP after cancel: %v", err)
	}
	if n, _ := store.Count(context.Background(), audit.Filter{SessionID: "wf-c"}); n != 1 {
		t.Errorf("rows = %d, want 1", n)
	}
}

type failingStore struct{ audit.Store }

func (failingStore) Record(context.Context, audit.Row) error {
	return errors.New("database is locked")
}

type slowStore struct{ audit.Store }

func (slowStore) Record(ctx context.Context, _ audit.Row) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestAuditLogHookFailureIsRecordedNotFatal(t *testing.T) {
	var logged []string
	r := hooks.NewRegistry()
	r.Add(NewAuditLogHook(failingStore{}, 0, func(msg string, kv ...any) { logged = append(logged, msg) }))
	res := r.RunPostToolUse(context.Background(), hooks.PostToolUseEvent{Session: hooks.Session{SessionID: "s"}, CallID: "c", Content: "out"})
	if res.FinalContent != "out" || !strings.Contains(res.Decisions[0].Error, "database is locked") {
		t.Errorf("result = %+v, want output untouched and the write error in the decision", res)
	}
	if len(logged) != 1 {
		t.Errorf("logged = %v, want the failure logged", logged)
	}
}

func TestAuditLogHookWriteIsBounded(t *testing.T) {
	h := NewAuditLogHook(slowStore{}, 50*time.Millisecond, nil)
	start := time.Now()
	err := h.OnSessionStop(context.Background(), hooks.SessionStopEvent{Session: hooks.Session{SessionID: "s"}, StopReason: hooks.StopCompleted})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the write timeout", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("write took %s despite a 50ms bound", elapsed)
	}
}

func TestRegistryNames(t *testing.T) {
	r := hooks.NewRegistry()
	r.Add(&recorder{name: "a"})
	r.Add(NewCancellationHook())
	if got := r.Names(); !reflect.DeepEqual(got, []string{"a", "cancellation"}) || r.Len() != 2 {
		t.Errorf("names = %v", got)
	}
}
