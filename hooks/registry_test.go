package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeHook records every call into log and answers with the configured
// functions; nil functions fall back to Base.
type fakeHook struct {
	Base
	name       string
	log        *[]string
	failClosed bool
	pre        func(PreToolUseEvent) (PreToolUseAction, error)
	post       func(PostToolUseEvent) (PostToolUseAction, error)
	perm       func(PermissionRequestEvent) (PermissionDecision, error)
	notifyErr  error
}

func (h *fakeHook) Name() string     { return h.name }
func (h *fakeHook) FailClosed() bool { return h.failClosed }

func (h *fakeHook) record(what string) {
	if h.log != nil {
		*h.log = append(*h.log, h.name+":"+what)
	}
}

func (h *fakeHook) OnSessionStart(context.Context, SessionStartEvent) error {
	h.record("session_start")
	return h.notifyErr
}

func (h *fakeHook) PreToolUse(_ context.Context, ev PreToolUseEvent) (PreToolUseAction, error) {
	h.record("pre_tool_use")
	if h.pre != nil {
		return h.pre(ev)
	}
	return Continue(), nil
}

func (h *fakeHook) PostToolUse(_ context.Context, ev PostToolUseEvent) (PostToolUseAction, error) {
	h.record("post_tool_use")
	if h.post != nil {
		return h.post(ev)
	}
	return KeepOutput(), nil
}

func (h *fakeHook) PermissionRequest(_ context.Context, ev PermissionRequestEvent) (PermissionDecision, error) {
	h.record("permission_request")
	if h.perm != nil {
		return h.perm(ev)
	}
	return NoOpinion(), nil
}

func (h *fakeHook) PostToolUseFailure(context.Context, PostToolUseFailureEvent) error {
	h.record("post_tool_use_failure")
	return h.notifyErr
}

func (h *fakeHook) OnStepComplete(context.Context, StepCompleteEvent) error {
	h.record("step_complete")
	return h.notifyErr
}

func (h *fakeHook) OnSessionStop(context.Context, SessionStopEvent) error {
	h.record("session_stop")
	return h.notifyErr
}

func (h *fakeHook) OnSubagentStart(context.Context, SubagentStartEvent) error {
	h.record("subagent_start")
	return h.notifyErr
}

func (h *fakeHook) OnSubagentStop(context.Context, SubagentStopEvent) error {
	h.record("subagent_stop")
	return h.notifyErr
}

func (h *fakeHook) OnPreCompact(context.Context, PreCompactEvent) error {
	h.record("pre_compact")
	return h.notifyErr
}

func (h *fakeHook) OnPostCompact(context.Context, PostCompactEvent) error {
	h.record("post_compact")
	return h.notifyErr
}

func (h *fakeHook) OnError(context.Context, ErrorEvent) error {
	h.record("error")
	return h.notifyErr
}

func preEvent() PreToolUseEvent {
	return PreToolUseEvent{
		Session:   Session{SessionID: "wf-1", RunID: "run-1"},
		ToolName:  "exec_command",
		CallID:    "call-1",
		ToolInput: map[string]any{"command": "ls"},
	}
}

func decisionKinds(ds []HookDecision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Hook + "=" + string(d.Kind)
	}
	return out
}

func TestRegistryRunsAllHooks(t *testing.T) {
	var log []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "a", log: &log})
	r.Add(&fakeHook{name: "b", log: &log})
	r.Add(&fakeHook{name: "c", log: &log})

	res := r.RunPreToolUse(context.Background(), preEvent())

	want := []string{"a:pre_tool_use", "b:pre_tool_use", "c:pre_tool_use"}
	if !reflect.DeepEqual(log, want) {
		t.Fatalf("calls = %v, want %v", log, want)
	}
	if res.Action.Kind != KindContinue {
		t.Errorf("action = %q, want continue", res.Action.Kind)
	}
	if got := decisionKinds(res.Decisions); !reflect.DeepEqual(got, []string{"a=continue", "b=continue", "c=continue"}) {
		t.Errorf("decisions = %v", got)
	}
	if !reflect.DeepEqual(res.FinalArgs, map[string]any{"command": "ls"}) {
		t.Errorf("final args = %v, want the input unchanged", res.FinalArgs)
	}
}

func TestBlockingHookStopsChain(t *testing.T) {
	var log []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "first", log: &log})
	r.Add(&fakeHook{name: "guard", log: &log, pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return Block("dangerous"), nil
	}})
	r.Add(&fakeHook{name: "never", log: &log})

	res := r.RunPreToolUse(context.Background(), preEvent())

	if want := []string{"first:pre_tool_use", "guard:pre_tool_use"}; !reflect.DeepEqual(log, want) {
		t.Fatalf("calls = %v, want %v (hooks after a Block must not run)", log, want)
	}
	if !res.Blocked() || res.Action.Reason != "dangerous" || res.DecidedBy != "guard" {
		t.Errorf("result = %+v, want block by guard with reason \"dangerous\"", res)
	}
}

func TestBlockWithoutReasonNamesHook(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "guard", pre: func(PreToolUseEvent) (PreToolUseAction, error) { return Block(""), nil }})
	res := r.RunPreToolUse(context.Background(), preEvent())
	if !strings.Contains(res.Action.Reason, `"guard"`) || !strings.Contains(res.Action.Reason, `"exec_command"`) {
		t.Errorf("reason = %q, want it to name the hook and the tool", res.Action.Reason)
	}
}

func TestMutateInputAccumulatesContext(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "one", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return MutateInput(map[string]any{"command": "ls -la"}, "context one"), nil
	}})
	r.Add(&fakeHook{name: "two", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return AddContext("context two"), nil
	}})

	res := r.RunPreToolUse(context.Background(), preEvent())

	if res.AdditionalContext != "context one\ncontext two" {
		t.Errorf("additional context = %q, want both joined with \\n", res.AdditionalContext)
	}
	if !reflect.DeepEqual(res.FinalArgs, map[string]any{"command": "ls -la"}) {
		t.Errorf("final args = %v; a context-only MutateInput must not reset them", res.FinalArgs)
	}
	if res.Action.Kind != KindMutateInput || !res.ArgsMutated {
		t.Errorf("action = %+v, args mutated = %v", res.Action, res.ArgsMutated)
	}
	if !reflect.DeepEqual(res.Action.UpdatedArgs, res.FinalArgs) || res.Action.AdditionalContext != res.AdditionalContext {
		t.Errorf("action %+v does not carry the final args and context", res.Action)
	}
}

func TestLastMutateInputWins(t *testing.T) {
	var seenBySecond map[string]any
	r := NewRegistry()
	r.Add(&fakeHook{name: "one", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return MutateInput(map[string]any{"command": "one"}, ""), nil
	}})
	r.Add(&fakeHook{name: "two", pre: func(ev PreToolUseEvent) (PreToolUseAction, error) {
		seenBySecond = ev.ToolInput
		return MutateInput(map[string]any{"command": "two"}, ""), nil
	}})

	res := r.RunPreToolUse(context.Background(), preEvent())

	if got := res.FinalArgs["command"]; got != "two" {
		t.Errorf("final command = %v, want the last mutation \"two\"", got)
	}
	if seenBySecond["command"] != "one" {
		t.Errorf("second hook saw %v, want the first hook's rewrite", seenBySecond)
	}
}

func TestHooksCannotMutateCallerArgs(t *testing.T) {
	ev := preEvent()
	ev.ToolInput = map[string]any{"nested": map[string]any{"k": "v"}}
	r := NewRegistry()
	r.Add(&fakeHook{name: "vandal", pre: func(ev PreToolUseEvent) (PreToolUseAction, error) {
		ev.ToolInput["nested"].(map[string]any)["k"] = "changed"
		return Continue(), nil
	}})
	res := r.RunPreToolUse(context.Background(), ev)
	if ev.ToolInput["nested"].(map[string]any)["k"] != "v" || res.FinalArgs["nested"].(map[string]any)["k"] != "v" {
		t.Errorf("an in-place change by a hook leaked: caller %v, final %v", ev.ToolInput, res.FinalArgs)
	}
}

func TestFirstBlockWinsOverEarlierPermissionRequired(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "asker", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return RequirePermission("exec", "exec_command"), nil
	}})
	r.Add(&fakeHook{name: "guard", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return Block("no exec on fridays"), nil
	}})

	res := r.RunPreToolUse(context.Background(), preEvent())

	if !res.Blocked() || res.NeedsPermission() {
		t.Fatalf("result = %+v, want a block that overrides the permission request", res)
	}
	if res.DecidedBy != "guard" {
		t.Errorf("decided by %q, want guard", res.DecidedBy)
	}
	if got := decisionKinds(res.Decisions); !reflect.DeepEqual(got, []string{"asker=permission_required", "guard=block"}) {
		t.Errorf("decisions = %v", got)
	}
}

func TestPermissionRequiredIsRecordedFirstWins(t *testing.T) {
	var log []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "first", log: &log, pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return RequirePermission("write files", ""), nil
	}})
	r.Add(&fakeHook{name: "second", log: &log, pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return RequirePermission("network", "exec_command"), nil
	}})
	r.Add(&fakeHook{name: "ctx", log: &log, pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return AddContext("note"), nil
	}})

	res := r.RunPreToolUse(context.Background(), preEvent())

	if len(log) != 3 {
		t.Errorf("calls = %v, want every hook to run after a permission request", log)
	}
	want := &PermissionRequirement{Permission: "write files", ToolName: "exec_command", Hook: "first"}
	if !reflect.DeepEqual(res.PermissionRequired, want) {
		t.Errorf("permission required = %+v, want %+v", res.PermissionRequired, want)
	}
	if !res.NeedsPermission() || res.Action.Kind != KindPermissionRequired {
		t.Errorf("action = %+v, want permission_required", res.Action)
	}
	if res.AdditionalContext != "note" {
		t.Errorf("additional context = %q; it must still accumulate", res.AdditionalContext)
	}
}

func TestPostToolUseMutateOutput(t *testing.T) {
	var seen []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "upper", post: func(ev PostToolUseEvent) (PostToolUseAction, error) {
		seen = append(seen, ev.Content)
		return MutateOutput(strings.ToUpper(ev.Content)), nil
	}})
	r.Add(&fakeHook{name: "observer", post: func(ev PostToolUseEvent) (PostToolUseAction, error) {
		seen = append(seen, ev.Content)
		return KeepOutput(), nil
	}})
	r.Add(&fakeHook{name: "redact", post: func(ev PostToolUseEvent) (PostToolUseAction, error) {
		seen = append(seen, ev.Content)
		return MutateOutput(strings.ReplaceAll(ev.Content, "SECRET", "[redacted]")), nil
	}})

	res := r.RunPostToolUse(context.Background(), PostToolUseEvent{ToolName: "exec_command", Content: "token secret"})

	if res.FinalContent != "TOKEN [redacted]" || !res.Mutated || res.MutatedBy != "redact" {
		t.Errorf("result = %+v, want the last mutation applied on top of the first", res)
	}
	if want := []string{"token secret", "TOKEN SECRET", "TOKEN SECRET"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("hooks saw %v, want %v", seen, want)
	}
}

func TestPostToolUseWithoutMutationKeepsContent(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "observer"})
	res := r.RunPostToolUse(context.Background(), PostToolUseEvent{Content: "unchanged"})
	if res.FinalContent != "unchanged" || res.Mutated {
		t.Errorf("result = %+v", res)
	}
}

func TestPanicRecoveryFailOpen(t *testing.T) {
	var logged []string
	var log []string
	r := NewRegistry(WithLogger(func(msg string, kv ...any) { logged = append(logged, msg) }))
	r.Add(&fakeHook{name: "buggy", log: &log, pre: func(PreToolUseEvent) (PreToolUseAction, error) { panic("boom") }})
	r.Add(&fakeHook{name: "after", log: &log})

	res := r.RunPreToolUse(context.Background(), preEvent())

	if res.Blocked() {
		t.Fatalf("a fail-open hook's panic blocked the call: %+v", res)
	}
	if len(log) != 2 {
		t.Errorf("calls = %v, want the chain to go on after the panic", log)
	}
	d := res.Decisions[0]
	if !d.Panicked || !strings.Contains(d.Error, "boom") || d.Kind != KindContinue {
		t.Errorf("decision = %+v, want a recorded panic treated as continue", d)
	}
	if len(logged) != 1 {
		t.Errorf("logged %v, want the panic logged once", logged)
	}
}

func TestPanicRecoveryFailClosed(t *testing.T) {
	var log []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "guard", log: &log, failClosed: true, pre: func(PreToolUseEvent) (PreToolUseAction, error) { panic("nil map") }})
	r.Add(&fakeHook{name: "after", log: &log})

	res := r.RunPreToolUse(context.Background(), preEvent())

	if !res.Blocked() || !strings.Contains(res.Action.Reason, `"guard"`) || !strings.Contains(res.Action.Reason, "nil map") {
		t.Fatalf("result = %+v, want a block naming the hook and the panic", res)
	}
	if len(log) != 1 {
		t.Errorf("calls = %v, want the chain stopped by the fail-closed block", log)
	}
	if !res.Decisions[0].Panicked {
		t.Errorf("decision = %+v, want panicked", res.Decisions[0])
	}
}

func TestPanicInPostToolUseAndNotifications(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "buggy", failClosed: true, post: func(PostToolUseEvent) (PostToolUseAction, error) { panic("post") }})
	r.Add(&fakeHook{name: "upper", post: func(ev PostToolUseEvent) (PostToolUseAction, error) {
		return MutateOutput("X"), nil
	}})
	res := r.RunPostToolUse(context.Background(), PostToolUseEvent{Content: "x"})
	if res.FinalContent != "X" || !res.Decisions[0].Panicked {
		t.Errorf("result = %+v, want the panic recorded and later hooks applied", res)
	}

	r2 := NewRegistry()
	r2.Add(panickingNotifier{})
	s := r2.RunSessionStop(context.Background(), SessionStopEvent{StopReason: StopCompleted})
	if s.Err() == nil || !s.Decisions[0].Panicked {
		t.Errorf("summary = %+v, want the panic recorded as an error", s)
	}
}

type panickingNotifier struct{ Base }

func (panickingNotifier) Name() string { return "panicky" }
func (panickingNotifier) OnSessionStop(context.Context, SessionStopEvent) error {
	panic("stop")
}

func TestHookErrorIsRecordedAndActionApplied(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "flaky", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return AddContext("partial"), errors.New("backend slow")
	}})
	res := r.RunPreToolUse(context.Background(), preEvent())
	if res.Decisions[0].Error != "backend slow" || res.AdditionalContext != "partial" {
		t.Errorf("result = %+v, want the error recorded and the action kept", res)
	}
}

func TestUnknownActionKind(t *testing.T) {
	open := NewRegistry()
	open.Add(&fakeHook{name: "odd", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return PreToolUseAction{Kind: "explode"}, nil
	}})
	if res := open.RunPreToolUse(context.Background(), preEvent()); res.Blocked() || res.Decisions[0].Error == "" {
		t.Errorf("fail-open: %+v, want continue with an error recorded", res)
	}
	closed := NewRegistry()
	closed.Add(&fakeHook{name: "odd", failClosed: true, pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return PreToolUseAction{Kind: "explode"}, nil
	}})
	if res := closed.RunPreToolUse(context.Background(), preEvent()); !res.Blocked() {
		t.Errorf("fail-closed: %+v, want a block", res)
	}
}

func TestZeroValueActionsAreContinue(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "zero", pre: func(PreToolUseEvent) (PreToolUseAction, error) { return PreToolUseAction{}, nil }})
	if res := r.RunPreToolUse(context.Background(), preEvent()); res.Action.Kind != KindContinue || res.Decisions[0].Kind != KindContinue {
		t.Errorf("result = %+v", res)
	}
}

func TestPermissionRequestAggregation(t *testing.T) {
	allow := func(PermissionRequestEvent) (PermissionDecision, error) { return Allow("trusted path"), nil }
	deny := func(PermissionRequestEvent) (PermissionDecision, error) { return Deny("outside workspace"), nil }
	none := func(PermissionRequestEvent) (PermissionDecision, error) { return NoOpinion(), nil }
	ev := PermissionRequestEvent{ToolName: "workspace_write", Permission: "write"}

	tests := []struct {
		name      string
		hooks     []func(PermissionRequestEvent) (PermissionDecision, error)
		wantKind  Kind
		wantBy    string
		wantCalls int
	}{
		{"no hooks, no opinion", nil, KindNoOpinion, "", 0},
		{"silence is no opinion", []func(PermissionRequestEvent) (PermissionDecision, error){none, none}, KindNoOpinion, "", 2},
		{"first allow wins", []func(PermissionRequestEvent) (PermissionDecision, error){none, allow, allow}, KindAllow, "h1", 3},
		{"deny beats an earlier allow", []func(PermissionRequestEvent) (PermissionDecision, error){allow, deny}, KindDeny, "h1", 2},
		{"first deny short-circuits", []func(PermissionRequestEvent) (PermissionDecision, error){deny, allow, allow}, KindDeny, "h0", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			r := NewRegistry()
			for i, fn := range tc.hooks {
				r.Add(&fakeHook{name: "h" + string(rune('0'+i)), log: &log, perm: fn})
			}
			res := r.RunPermissionRequest(context.Background(), ev)
			if res.Decision.Kind != tc.wantKind || res.DecidedBy != tc.wantBy {
				t.Errorf("decision = %+v by %q, want %s by %q", res.Decision, res.DecidedBy, tc.wantKind, tc.wantBy)
			}
			if len(log) != tc.wantCalls {
				t.Errorf("calls = %v, want %d", log, tc.wantCalls)
			}
			if res.Settled() != (tc.wantKind != KindNoOpinion) {
				t.Errorf("Settled() = %v", res.Settled())
			}
		})
	}
}

func TestPermissionRequestPanicFailClosedDenies(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "allower", perm: func(PermissionRequestEvent) (PermissionDecision, error) { return Allow(""), nil }})
	r.Add(&fakeHook{name: "guard", failClosed: true, perm: func(PermissionRequestEvent) (PermissionDecision, error) { panic("oops") }})
	res := r.RunPermissionRequest(context.Background(), PermissionRequestEvent{ToolName: "t"})
	if res.Decision.Kind != KindDeny || res.DecidedBy != "guard" {
		t.Errorf("result = %+v, want deny by the failed guard", res)
	}
}

func TestSessionStartHookCalled(t *testing.T) {
	var log []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "a", log: &log})
	s := r.RunSessionStart(context.Background(), SessionStartEvent{Session: Session{SessionID: "wf"}, Source: SourceStartup})
	if !reflect.DeepEqual(log, []string{"a:session_start"}) {
		t.Errorf("calls = %v", log)
	}
	if s.Event != EventSessionStart || len(s.Decisions) != 1 || s.Decisions[0].Kind != KindRan || s.Err() != nil {
		t.Errorf("summary = %+v", s)
	}
}

func TestNewLifecycleEventsCalled(t *testing.T) {
	var log []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "a", log: &log})
	ctx := context.Background()
	r.RunSubagentStart(ctx, SubagentStartEvent{SubagentID: "sub-1"})
	r.RunSubagentStop(ctx, SubagentStopEvent{SubagentID: "sub-1", StopReason: StopCompleted})
	r.RunPreCompact(ctx, PreCompactEvent{Trigger: CompactAuto, MessageCount: 40})
	r.RunPostCompact(ctx, PostCompactEvent{Trigger: CompactAuto, MessagesBefore: 40, MessagesAfter: 12})
	r.RunStepComplete(ctx, StepCompleteEvent{Step: 1})
	r.RunSessionStop(ctx, SessionStopEvent{StopReason: StopCompleted})
	want := []string{"a:subagent_start", "a:subagent_stop", "a:pre_compact", "a:post_compact", "a:step_complete", "a:session_stop"}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("calls = %v, want %v", log, want)
	}
}

func TestOnErrorAndPostToolUseFailureCalled(t *testing.T) {
	var log []string
	r := NewRegistry()
	r.Add(&fakeHook{name: "ok", log: &log})
	r.Add(&fakeHook{name: "broken", log: &log, notifyErr: errors.New("disk full")})

	failure := r.RunPostToolUseFailure(context.Background(), PostToolUseFailureEvent{ToolName: "exec_command", CallID: "c", ErrorType: "ToolTimeoutError"})
	errSummary := r.RunError(context.Background(), ErrorEvent{Stage: "execute_tool", ErrorType: "RuntimeError"})

	want := []string{"ok:post_tool_use_failure", "broken:post_tool_use_failure", "ok:error", "broken:error"}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("calls = %v, want %v", log, want)
	}
	for _, s := range []Summary{failure, errSummary} {
		err := s.Err()
		if err == nil || !strings.Contains(err.Error(), `hook "broken"`) || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%s summary error = %v, want it to name the failing hook", s.Event, err)
		}
		if s.Decisions[0].Error != "" {
			t.Errorf("%s: the healthy hook has an error: %+v", s.Event, s.Decisions[0])
		}
	}
}

type preOnly struct{ Base }

func (preOnly) Name() string               { return "pre-only" }
func (preOnly) HandlesEvent(ev Event) bool { return ev == EventPreToolUse }
func (preOnly) OnStepComplete(context.Context, StepCompleteEvent) error {
	panic("must not be called: HandlesEvent said no")
}

func TestEventFilterSkipsHooks(t *testing.T) {
	r := NewRegistry()
	r.Add(preOnly{})
	s := r.RunStepComplete(context.Background(), StepCompleteEvent{Step: 1})
	if len(s.Decisions) != 0 {
		t.Errorf("decisions = %+v, want the filtered hook skipped", s.Decisions)
	}
	if res := r.RunPreToolUse(context.Background(), preEvent()); len(res.Decisions) != 1 {
		t.Errorf("decisions = %+v, want the hook run for its event", res.Decisions)
	}
}

func TestDecisionsAreTimedWithInjectedClock(t *testing.T) {
	now := time.Unix(0, 0)
	r := NewRegistry(WithClock(func() time.Time { now = now.Add(5 * time.Millisecond); return now }))
	r.Add(&fakeHook{name: "a"})
	res := r.RunPreToolUse(context.Background(), preEvent())
	if res.Decisions[0].DurationMS != 5 {
		t.Errorf("duration = %d ms, want 5 from the injected clock", res.Decisions[0].DurationMS)
	}
}

func TestActionJSONShapes(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"continue", Continue(), `{"kind":"continue"}`},
		{"block", Block("no"), `{"kind":"block","reason":"no"}`},
		{"mutate", MutateInput(map[string]any{"a": 1}, "ctx"), `{"kind":"mutate_input","updated_args":{"a":1},"additional_context":"ctx"}`},
		{"mutate to no args", MutateInput(map[string]any{}, ""), `{"kind":"mutate_input","updated_args":{}}`},
		{"context only", AddContext("ctx"), `{"kind":"mutate_input","additional_context":"ctx"}`},
		{"permission", RequirePermission("exec", "exec_command"), `{"kind":"permission_required","permission":"exec","tool_name":"exec_command"}`},
		{"keep output", KeepOutput(), `{"kind":"continue"}`},
		{"mutate output", MutateOutput("x"), `{"kind":"mutate_output","updated_content":"x"}`},
		{"allow", Allow("ok"), `{"kind":"allow","reason":"ok"}`},
		{"deny", Deny("no"), `{"kind":"deny","reason":"no"}`},
		{"no opinion", NoOpinion(), `{"kind":"no_opinion"}`},
	}
	for _, tc := range tests {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestResultsRoundTripThroughJSON(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeHook{name: "asker", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return RequirePermission("exec", ""), nil
	}})
	r.Add(&fakeHook{name: "rewriter", pre: func(PreToolUseEvent) (PreToolUseAction, error) {
		return MutateInput(map[string]any{"command": "ls -l"}, "use long listing"), nil
	}})
	res := r.RunPreToolUse(context.Background(), preEvent())
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back PreToolUseResult
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, res) {
		t.Errorf("round trip changed the result:\n got %+v\nwant %+v", back, res)
	}
	var generic map[string]any
	_ = json.Unmarshal(raw, &generic)
	for _, key := range []string{"action", "final_args", "additional_context", "permission_required", "decisions"} {
		if _, ok := generic[key]; !ok {
			t.Errorf("JSON %s lacks %q", raw, key)
		}
	}
}

func TestEventJSONIsFlatSnakeCase(t *testing.T) {
	ev := preEvent()
	ev.Cancelled = true
	raw, _ := json.Marshal(ev)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	for _, key := range []string{"session_id", "run_id", "tool_name", "call_id", "tool_input", "cancelled"} {
		if _, ok := m[key]; !ok {
			t.Errorf("event JSON %s lacks %q", raw, key)
		}
	}
}

type essentialHook struct{ fakeHook }

func (essentialHook) Essential() bool { return true }

// An EssentialHook's error is marked on its decision so the stage can fail;
// other hooks' errors stay non-blocking.
func TestEssentialHookErrorFailsTheStage(t *testing.T) {
	broken := func(PostToolUseEvent) (PostToolUseAction, error) { return KeepOutput(), errors.New("disk full") }
	r := NewRegistry()
	r.Add(&fakeHook{name: "observer", post: broken})
	res := r.RunPostToolUse(context.Background(), PostToolUseEvent{ToolName: "calculator", Content: "4"})
	if err := EssentialErr(EventPostToolUse, res.Decisions); err != nil {
		t.Fatalf("a non-essential hook's error failed the stage: %v", err)
	}

	r.Add(&essentialHook{fakeHook{name: "audit"}})
	res = r.RunPostToolUse(context.Background(), PostToolUseEvent{ToolName: "calculator", Content: "4"})
	if err := EssentialErr(EventPostToolUse, res.Decisions); err != nil {
		t.Fatalf("an essential hook that succeeded failed the stage: %v", err)
	}

	r = NewRegistry()
	r.Add(&essentialHook{fakeHook{name: "audit", post: broken}})
	res = r.RunPostToolUse(context.Background(), PostToolUseEvent{ToolName: "calculator", Content: "4"})
	err := EssentialErr(EventPostToolUse, res.Decisions)
	if err == nil || !strings.Contains(err.Error(), `"audit": disk full`) {
		t.Fatalf("EssentialErr = %v, want the audit hook's error", err)
	}
	if !res.Decisions[0].Essential {
		t.Fatalf("decision not marked essential: %+v", res.Decisions[0])
	}
}
