package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

func loadDemo(t *testing.T) *scripted.Provider {
	t.Helper()
	p, err := scripted.Load("testdata/demo.json")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

// transcript builds a request history with the given number of model
// turns already taken, each followed by its tool result.
func transcript(steps int) []contract.Message {
	msgs := []contract.Message{{Role: "system", Content: "You are Fenix."}, {Role: "user", Content: "What is (17 + 25) * 2?"}}
	for i := range steps {
		id := fmt.Sprintf("call-%d-0", i)
		msgs = append(msgs,
			contract.Message{Role: "assistant", ToolCalls: []contract.ToolCall{{CallID: id, ToolName: "calculator"}}},
			contract.Message{Role: "tool", ToolCallID: id, Content: "84"})
	}
	return msgs
}

func TestDemoFileLoads(t *testing.T) {
	p := loadDemo(t)
	want := []string{"broken_arguments", "delegating", "flaky", "main", "researcher", "summarizer"}
	if got := p.Scripts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Scripts = %v, want %v", got, want)
	}
}

func TestTurnSelectionByStep(t *testing.T) {
	p := loadDemo(t)
	ctx := context.Background()

	first, err := p.Complete(ctx, llm.Request{Model: "scripted:main", Messages: transcript(0)})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Message: contract.Message{Role: "assistant", Content: "I will use the calculator.", ToolCalls: []contract.ToolCall{
			{CallID: "call-0-0", ToolName: "calculator", Arguments: map[string]any{"expression": "(17 + 25) * 2"}},
		}},
		FinishReason: "tool_calls",
		Usage:        llm.Usage{PromptTokens: 120, CompletionTokens: 24, TotalTokens: 144},
		Model:        "scripted:main",
		Provider:     "scripted",
	}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("step 0 =\n%+v\nwant\n%+v", first, want)
	}

	second, err := p.Complete(ctx, llm.Request{Model: "scripted:main", Messages: transcript(1)})
	if err != nil {
		t.Fatal(err)
	}
	if second.Message.Content != "(17 + 25) * 2 = 84." || len(second.Message.ToolCalls) != 0 || second.FinishReason != "stop" {
		t.Fatalf("step 1 = %+v, want the final answer", second)
	}

	// Same request, same answer: retries and replays see identical turns.
	again, _ := p.Complete(ctx, llm.Request{Model: "scripted:main", Messages: transcript(0)})
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("repeated request answered differently:\n%+v\n%+v", again, first)
	}
}

func TestScriptSelectionByModel(t *testing.T) {
	p := loadDemo(t)
	resp, err := p.Complete(context.Background(), llm.Request{Model: "scripted:researcher", Messages: transcript(0)})
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []contract.ToolCall{
		{CallID: "call-0-0", ToolName: "calculator", Arguments: map[string]any{"expression": "365 * 24"}},
		{CallID: "call-0-1", ToolName: "calculator", Arguments: map[string]any{"expression": "366 * 24"}},
	}
	if !reflect.DeepEqual(resp.Message.ToolCalls, wantCalls) {
		t.Fatalf("researcher tool calls = %+v, want %+v", resp.Message.ToolCalls, wantCalls)
	}

	for _, model := range []string{"scripted", "scripted:"} {
		resp, err := p.Complete(context.Background(), llm.Request{Model: model, Messages: transcript(1)})
		if err != nil || resp.Message.Content != "(17 + 25) * 2 = 84." {
			t.Fatalf("model %q = %+v, %v; want the main script", model, resp, err)
		}
	}

	_, err = p.Complete(context.Background(), llm.Request{Model: "scripted:nope"})
	if err == nil || !strings.Contains(err.Error(), `script "nope" is not in testdata/demo.json`) || !strings.Contains(err.Error(), "main, researcher") {
		t.Fatalf("unknown script error = %v", err)
	}
	if _, err := p.Complete(context.Background(), llm.Request{Model: "gpt-4o"}); err == nil || !strings.Contains(err.Error(), `"scripted:<script>"`) {
		t.Fatalf("non-scripted model error = %v", err)
	}
}

func TestDeterministicCallIDsFollowTheStep(t *testing.T) {
	p, err := scripted.New(map[string]scripted.Script{"main": {Turns: []scripted.Turn{
		{Content: "first", ToolCalls: []scripted.ToolCall{{ToolName: "a"}}},
		{ToolCalls: []scripted.ToolCall{{ToolName: "a"}, {ToolName: "b", CallID: "fixed"}, {ToolName: "c"}}},
		{Content: "done"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Complete(context.Background(), llm.Request{Model: "scripted:main", Messages: transcript(1)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tc := range resp.Message.ToolCalls {
		ids = append(ids, tc.CallID)
		if tc.Arguments == nil {
			t.Errorf("call %s has nil arguments, want {}", tc.CallID)
		}
	}
	if want := []string{"call-1-0", "fixed", "call-1-2"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("call IDs = %v, want %v", ids, want)
	}
}

func TestOutOfTurns(t *testing.T) {
	p := loadDemo(t)
	_, err := p.Complete(context.Background(), llm.Request{Model: "scripted:main", Messages: transcript(2)})
	if err == nil {
		t.Fatal("a third call to a two-turn script succeeded")
	}
	for _, part := range []string{`script "main"`, "testdata/demo.json", "2 turn(s)", "step 2"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
	if ok, _ := llm.IsRetryable(err); ok || !errors.Is(err, fenixerr.ErrModelProvider) {
		t.Fatalf("out-of-turns error = %v, want a non-retryable ModelProviderError", err)
	}
}

func TestSimulatedFailureEndsWithTheAttempt(t *testing.T) {
	p := loadDemo(t)
	req := llm.Request{Model: "scripted:flaky", Messages: transcript(0)}

	_, err := p.Complete(llm.WithAttempt(context.Background(), 1), req)
	var re *llm.RetryableError
	if !errors.As(err, &re) || re.StatusCode != 429 || re.RetryAfter != time.Second {
		t.Fatalf("attempt 1 error = %v, want a retryable 429 after 1s", err)
	}
	if !strings.Contains(err.Error(), "Rate limit reached") || !strings.Contains(err.Error(), "attempt 1 of 1") {
		t.Fatalf("attempt 1 error %q should carry the scripted message and the attempt", err)
	}
	// Without WithAttempt every call is attempt 1.
	if _, err := p.Complete(context.Background(), req); !errors.As(err, &re) {
		t.Fatalf("call without attempt = %v, want the simulated failure", err)
	}

	resp, err := p.Complete(llm.WithAttempt(context.Background(), 2), req)
	if err != nil || resp.Message.Content != "Answered after one retry." {
		t.Fatalf("attempt 2 = %+v, %v; want the answer", resp, err)
	}
}

func TestSimulatedPermanentFailures(t *testing.T) {
	p, err := scripted.New(map[string]scripted.Script{
		"down":     {Turns: []scripted.Turn{{Error: &scripted.SimulatedError{Status: 503}}}},
		"rejected": {Turns: []scripted.Turn{{Content: "never", Error: &scripted.SimulatedError{Status: 400, Message: "Invalid 'tools'"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(llm.WithAttempt(context.Background(), 9), llm.Request{Model: "scripted:down"})
	if ok, _ := llm.IsRetryable(err); !ok || !strings.Contains(err.Error(), "fails on every attempt") {
		t.Fatalf("pure failure turn at attempt 9 = %v, want a retryable failure on every attempt", err)
	}
	_, err = p.Complete(context.Background(), llm.Request{Model: "scripted:rejected"})
	if ok, _ := llm.IsRetryable(err); ok || !errors.Is(err, fenixerr.ErrModelProvider) || !strings.Contains(err.Error(), "Invalid 'tools'") {
		t.Fatalf("simulated 400 = %v, want a non-retryable ModelProviderError", err)
	}
}

func TestBrokenArgumentsAreFlagged(t *testing.T) {
	p := loadDemo(t)
	resp, err := p.Complete(context.Background(), llm.Request{Model: "scripted:broken_arguments", Messages: transcript(0)})
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := llm.MalformedArguments(resp.Message.ToolCalls[0])
	if !ok || raw != `{"expression": "2+2"` || len(resp.MalformedToolCalls) != 1 || resp.MalformedToolCalls[0].CallID != "call-0-0" {
		t.Fatalf("response = %+v, want the raw arguments kept and flagged", resp)
	}
}

func TestEstimatedUsage(t *testing.T) {
	p, err := scripted.New(map[string]scripted.Script{"main": {Turns: []scripted.Turn{{Content: "two words"}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Complete(context.Background(), llm.Request{Model: "scripted", Messages: []contract.Message{{Role: "user", Content: "one two three"}}})
	if err != nil {
		t.Fatal(err)
	}
	// words + 4 per message, like compaction.WordEstimator.
	if want := (llm.Usage{PromptTokens: 7, CompletionTokens: 6, TotalTokens: 13}); resp.Usage != want {
		t.Fatalf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestResponsesDoNotShareScriptState(t *testing.T) {
	p := loadDemo(t)
	req := llm.Request{Model: "scripted:main", Messages: transcript(0)}
	first, _ := p.Complete(context.Background(), req)
	first.Message.ToolCalls[0].Arguments["expression"] = "tampered"
	second, _ := p.Complete(context.Background(), req)
	if got := second.Message.ToolCalls[0].Arguments["expression"]; got != "(17 + 25) * 2" {
		t.Fatalf("editing a response changed the script: %v", got)
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := loadDemo(t).Complete(ctx, llm.Request{Model: "scripted:main"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"syntax", "{\n  \"turns\": [\n    {\"content\": \"x\",}\n  ]\n}", "line 3"},
		{"typo", `{"turns": [{"content": "x", "tool_call": []}]}`, `unknown field "tool_call"`},
		{"empty", `{}`, "defines no scripts"},
		{"both forms", `{"turns": [{"content": "a"}], "scripts": {"x": {"turns": [{"content": "b"}]}}}`, `both "turns" and "scripts"`},
		{"empty turn", `{"scripts": {"main": {"turns": [{}]}}}`, `script "main" turn 0 has neither content nor tool_calls`},
		{"no turns", `{"scripts": {"sub": {"turns": []}}}`, `script "sub" has no turns`},
		{"no tool name", `{"turns": [{"tool_calls": [{"arguments": {}}]}]}`, "tool_calls[0] has no tool_name"},
		{"arguments not object", `{"turns": [{"tool_calls": [{"tool_name": "c", "arguments": "2+2"}]}]}`, "line 1"},
		{"both arguments", `{"turns": [{"tool_calls": [{"tool_name": "c", "arguments": {}, "raw_arguments": "{"}]}]}`, "both arguments and raw_arguments"},
		{"bad status", `{"turns": [{"content": "x", "error": {"status": 200}}]}`, "not an HTTP error status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scripted.Parse([]byte(tt.file), "inline.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "inline.json") {
				t.Fatalf("Parse error = %v, want one naming inline.json and containing %q", err, tt.want)
			}
		})
	}
	if _, err := scripted.Load("testdata/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("Load(missing) = %v", err)
	}
}

// A turn's expect makes the scripted model assert on what it is sent, such
// as context a hook added.
func TestExpectedRequestContent(t *testing.T) {
	p, err := scripted.Parse([]byte(`{"turns": [
	  {"expect": {"contains": ["VERIFIED", "2 + 2"]}, "content": "4"},
	  {"content": "4. VERIFIED"}
	]}`), "expect.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	with := []contract.Message{{Role: "user", Content: "What is 2 + 2?\n\nConvention: end with VERIFIED."}}
	if res, err := p.Complete(ctx, llm.Request{Model: "scripted", Messages: with}); err != nil || res.Message.Content != "4" {
		t.Fatalf("res %+v, err %v", res, err)
	}
	without := []contract.Message{{Role: "user", Content: "What is 2 + 2?"}}
	_, err = p.Complete(ctx, llm.Request{Model: "scripted", Messages: without})
	if !errors.Is(err, fenixerr.ErrModelProvider) || !strings.Contains(err.Error(), `contain "VERIFIED"`) {
		t.Errorf("err = %v, want a model provider error naming the missing text", err)
	}
	if _, err := scripted.Parse([]byte(`{"turns": [{"content": "x", "expect": {}}]}`), "bad.json"); err == nil || !strings.Contains(err.Error(), "empty expect") {
		t.Errorf("empty expect: %v", err)
	}
}
