package hooks

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// turnHook is a Go hook for the turn events.
type turnHook struct {
	Base
	name       string
	failClosed bool
	prompt     func(UserPromptSubmitEvent) PromptAction
	stop       func(StopEvent) StopAction
	batch      func(PostToolBatchEvent) BatchAction
	denied     func(PermissionDeniedEvent) DeniedAction
	notified   *[]NotificationEvent
}

func (h *turnHook) Name() string     { return h.name }
func (h *turnHook) FailClosed() bool { return h.failClosed }

func (h *turnHook) UserPromptSubmit(_ context.Context, ev UserPromptSubmitEvent) (PromptAction, error) {
	if h.prompt == nil {
		return PromptAction{}, nil
	}
	return h.prompt(ev), nil
}

func (h *turnHook) Stop(_ context.Context, ev StopEvent) (StopAction, error) {
	if h.stop == nil {
		return StopAction{}, nil
	}
	return h.stop(ev), nil
}

func (h *turnHook) PostToolBatch(_ context.Context, ev PostToolBatchEvent) (BatchAction, error) {
	if h.batch == nil {
		return BatchAction{}, nil
	}
	return h.batch(ev), nil
}

func (h *turnHook) PermissionDenied(_ context.Context, ev PermissionDeniedEvent) (DeniedAction, error) {
	if h.denied == nil {
		return DeniedAction{}, nil
	}
	return h.denied(ev), nil
}

func (h *turnHook) OnNotification(_ context.Context, ev NotificationEvent) error {
	if h.notified != nil {
		*h.notified = append(*h.notified, ev)
	}
	return nil
}

func TestRunUserPromptSubmit(t *testing.T) {
	ctx := context.Background()
	addCtx := &turnHook{name: "ctx", prompt: func(UserPromptSubmitEvent) PromptAction {
		return PromptAction{AdditionalContext: "repo: fenix"}
	}}
	ran := false
	block := &turnHook{name: "no-secrets", prompt: func(ev UserPromptSubmitEvent) PromptAction {
		if strings.Contains(ev.Prompt, "password") {
			return PromptAction{Kind: KindBlock, Reason: "prompts may not contain passwords"}
		}
		return PromptAction{Kind: KindContinue, AdditionalContext: "checked"}
	}}
	after := &turnHook{name: "after", prompt: func(UserPromptSubmitEvent) PromptAction { ran = true; return PromptAction{} }}
	r := registryOf(addCtx, block, after)
	res := r.RunUserPromptSubmit(ctx, UserPromptSubmitEvent{Prompt: "my password is hunter2"})
	if !res.Blocked || res.DecidedBy != "no-secrets" || res.Reason != "prompts may not contain passwords" || ran {
		t.Errorf("%+v (later hook ran: %v), want the first block to win and stop the chain", res, ran)
	}
	res = r.RunUserPromptSubmit(ctx, UserPromptSubmitEvent{Prompt: "hello"})
	if res.Blocked || res.AdditionalContext != "repo: fenix\nchecked" || len(res.Decisions) != 3 {
		t.Errorf("%+v, want contexts joined in order", res)
	}
	panicky := &turnHook{name: "panicky", failClosed: true, prompt: func(UserPromptSubmitEvent) PromptAction { panic("boom") }}
	if res := registryOf(panicky).RunUserPromptSubmit(ctx, UserPromptSubmitEvent{}); !res.Blocked || !strings.Contains(res.Reason, "failed closed") {
		t.Errorf("fail-closed panic: %+v", res)
	}
}

func TestRunStop(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		hooks    []AgentHook
		cont     bool
		reason   string
		halted   bool
		blocking string
	}{
		{"nobody objects", []AgentHook{&turnHook{name: "a"}}, false, "", false, ""},
		{"a block keeps going", []AgentHook{
			&turnHook{name: "a"},
			&turnHook{name: "tests", stop: func(StopEvent) StopAction { return StopAction{Kind: KindBlock, Reason: "run the tests"} }},
		}, true, "run the tests", false, "tests"},
		{"blocks and feedback join", []AgentHook{
			&turnHook{name: "tests", stop: func(StopEvent) StopAction { return StopAction{Kind: KindBlock, Reason: "run the tests"} }},
			&turnHook{name: "lint", stop: func(StopEvent) StopAction { return StopAction{AdditionalContext: "lint is clean"} }},
		}, true, "run the tests\nlint is clean", false, "tests"},
		{"halt wins", []AgentHook{
			&turnHook{name: "tests", stop: func(StopEvent) StopAction { return StopAction{Kind: KindBlock, Reason: "run the tests"} }},
			&turnHook{name: "budget", stop: func(StopEvent) StopAction { return StopAction{Halt: &Halt{Reason: "out of budget"}} }},
		}, false, "run the tests", true, "tests"},
	}
	for _, tc := range tests {
		res := registryOf(tc.hooks...).RunStop(ctx, StopEvent{LastAssistantMessage: "done"})
		if res.Continue != tc.cont || res.Reason != tc.reason || (res.Halt != nil) != tc.halted || res.BlockedBy != tc.blocking {
			t.Errorf("%s: %+v", tc.name, res)
		}
		if len(res.Decisions) != len(tc.hooks) {
			t.Errorf("%s: every Stop hook runs: %d decisions", tc.name, len(res.Decisions))
		}
	}
	var seen StopEvent
	registryOf(&turnHook{name: "spy", stop: func(ev StopEvent) StopAction { seen = ev; return StopAction{} }}).
		RunStop(ctx, StopEvent{StopHookActive: true, LastAssistantMessage: "4", Blocks: 1})
	if !seen.StopHookActive || seen.LastAssistantMessage != "4" {
		t.Errorf("hooks see %+v", seen)
	}
}

func TestRunPostToolBatch(t *testing.T) {
	ctx := context.Background()
	var got PostToolBatchEvent
	spy := &turnHook{name: "spy", batch: func(ev PostToolBatchEvent) BatchAction {
		got = ev
		ev.Calls[0].ToolInput["path"] = "mutated" // must not leak
		return BatchAction{AdditionalContext: "3 files read"}
	}}
	ran := false
	stopper := &turnHook{name: "stopper", batch: func(PostToolBatchEvent) BatchAction {
		return BatchAction{Kind: KindBlock, Reason: "too many writes in one step"}
	}}
	after := &turnHook{name: "after", batch: func(PostToolBatchEvent) BatchAction { ran = true; return BatchAction{} }}
	ev := PostToolBatchEvent{Step: 2, Calls: []BatchCall{{ToolName: "workspace_read", CallID: "a", ToolInput: map[string]any{"path": "x"}, Content: "x"}}}
	res := registryOf(spy, stopper, after).RunPostToolBatch(ctx, ev)
	if res.AdditionalContext != "3 files read" || res.Halt == nil || res.Halt.Reason != "too many writes in one step" || res.Halt.Hook != "stopper" || ran {
		t.Errorf("%+v (after ran: %v)", res, ran)
	}
	if ev.Calls[0].ToolInput["path"] != "x" || len(got.Calls) != 1 || got.Step != 2 {
		t.Errorf("event %+v, hooks saw %+v", ev, got)
	}
}

func TestRunPermissionDeniedAndNotification(t *testing.T) {
	ctx := context.Background()
	r := registryOf(
		&turnHook{name: "quiet"},
		&turnHook{name: "retry", denied: func(ev PermissionDeniedEvent) DeniedAction {
			return DeniedAction{Retry: ev.DeniedBy == "timeout", AdditionalContext: "ask again in the morning"}
		}},
	)
	res := r.RunPermissionDenied(ctx, PermissionDeniedEvent{ToolName: "exec_command", DeniedBy: "timeout", Reason: "no decision within 10m"})
	if !res.Retry || res.RetryBy != "retry" || res.AdditionalContext != "ask again in the morning" || len(res.Decisions) != 2 {
		t.Errorf("%+v", res)
	}
	if res := r.RunPermissionDenied(ctx, PermissionDeniedEvent{DeniedBy: "decide_permission"}); res.Retry {
		t.Errorf("%+v", res)
	}
	var notes []NotificationEvent
	sum := registryOf(&turnHook{name: "n", notified: &notes}).RunNotification(ctx, NotificationEvent{NotificationType: NotificationPermissionPrompt, Message: "approve exec_command?"})
	if len(notes) != 1 || sum.Event != EventNotification || sum.Err() != nil {
		t.Errorf("notes %+v, summary %+v", notes, sum)
	}
}

// feedbackHook answers fire-and-forget events with context and a halt.
type feedbackHook struct {
	Base
	context string
	halt    *Halt
	err     error
}

func (feedbackHook) Name() string { return "feedback" }

func (h feedbackHook) Feedback(context.Context, any) (Feedback, error) {
	return Feedback{AdditionalContext: h.context, Halt: h.halt}, h.err
}

func TestSummaryCollectsFeedback(t *testing.T) {
	r := registryOf(feedbackHook{context: "first"}, feedbackHook{context: "second", halt: &Halt{Reason: "stop now"}, err: errors.New("partial")})
	sum := r.RunSessionStart(context.Background(), SessionStartEvent{})
	if sum.AdditionalContext != "first\nsecond" || sum.Halt == nil || sum.Halt.Reason != "stop now" || sum.Err() == nil {
		t.Errorf("%+v", sum)
	}
}

func registryOf(hs ...AgentHook) *Registry {
	r := NewRegistry()
	for _, h := range hs {
		r.Add(h)
	}
	return r
}
