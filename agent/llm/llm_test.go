package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/fenixrt/fenix/agent/compaction"
	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

var _ compaction.Summarizer = llm.Summarizer{}

func TestDecodeArguments(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    map[string]any
		wantErr string
	}{
		{"object", `{"expression": "2+2"}`, map[string]any{"expression": "2+2"}, ""},
		{"nested", `{"a": {"b": [1, 2]}}`, map[string]any{"a": map[string]any{"b": []any{1.0, 2.0}}}, ""},
		{"empty text means no arguments", "  ", map[string]any{}, ""},
		{"null means no arguments", "null", map[string]any{}, ""},
		{"empty object", "{}", map[string]any{}, ""},
		{"truncated", `{"expression": "2+2"`, nil, "not valid JSON"},
		{"trailing comma", `{"a": 1,}`, nil, "not valid JSON"},
		{"array", `[1, 2]`, nil, "must be a JSON object, got JSON array"},
		{"string", `"2+2"`, nil, "must be a JSON object, got JSON string"},
		{"two objects", `{"a": 1} {"b": 2}`, nil, "text after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := llm.DecodeArguments(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeArguments(%q) error = %v, want it to contain %q", tt.raw, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DecodeArguments(%q) = %v, %v; want %v", tt.raw, got, err, tt.want)
			}
		})
	}
}

func TestToolCallFromRawKeepsMalformedText(t *testing.T) {
	raw := `{"expression": "2+2"`
	call, malformed := llm.ToolCallFromRaw("call-1", "calculator", raw)
	want := contract.ToolCall{CallID: "call-1", ToolName: "calculator", Arguments: map[string]any{llm.RawArgumentsKey: raw}}
	if !reflect.DeepEqual(call, want) {
		t.Fatalf("call = %+v, want %+v", call, want)
	}
	if malformed == nil || malformed.Raw != raw || malformed.CallID != "call-1" || malformed.Problem == "" {
		t.Fatalf("malformed = %+v, want the raw text, call ID and a problem", malformed)
	}
	if got, ok := llm.MalformedArguments(call); !ok || got != raw {
		t.Fatalf("MalformedArguments = %q, %v; want %q, true", got, ok, raw)
	}

	good, malformed := llm.ToolCallFromRaw("call-2", "calculator", `{"expression": "1"}`)
	if malformed != nil {
		t.Fatalf("valid arguments reported malformed: %+v", malformed)
	}
	if _, ok := llm.MalformedArguments(good); ok {
		t.Fatal("MalformedArguments flagged a well-formed call")
	}
}

func TestEncodeArguments(t *testing.T) {
	got, err := llm.EncodeArguments(map[string]any{"expression": "1<2 && 3>2"})
	if err != nil || got != `{"expression":"1<2 && 3>2"}` {
		t.Fatalf("EncodeArguments = %s, %v; want HTML characters unescaped", got, err)
	}
	if got, _ := llm.EncodeArguments(nil); got != "{}" {
		t.Fatalf("EncodeArguments(nil) = %s, want {}", got)
	}
	if _, err := llm.EncodeArguments(map[string]any{"f": func() {}}); err == nil {
		t.Fatal("EncodeArguments accepted a function value")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := llm.ParseRetryAfter(tt.header, now); got != tt.want {
				t.Fatalf("ParseRetryAfter(%v) = %s, want %s", tt.header, got, tt.want)
			}
		})
	}
}

func TestHTTPFailureClassification(t *testing.T) {
	tests := []struct {
		status    int
		code      string
		message   string
		retryable bool
		fenixCode string
	}{
		{429, "rate_limit_exceeded", "Rate limit reached", true, ""},
		{429, "insufficient_quota", "You exceeded your current quota", false, llm.CodeInsufficientQuota},
		{408, "", "", true, ""},
		{500, "", "boom", true, ""},
		{503, "", "overloaded", true, ""},
		{400, "invalid_request_error", "Invalid 'messages'", false, llm.CodeInvalidRequest},
		{400, "context_length_exceeded", "too long", false, llm.CodeContextLengthExceeded},
		{400, "BadRequestError", "This model's maximum context length is 4096 tokens", false, llm.CodeContextLengthExceeded},
		{400, "exceed_context_size_error", "the request exceeds the available context size", false, llm.CodeContextLengthExceeded},
		{401, "invalid_api_key", "Incorrect API key provided", false, llm.CodeAuthenticationFailed},
		{403, "", "Project does not have access", false, llm.CodeAuthenticationFailed},
		{404, "model_not_found", "The model does not exist", false, llm.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.code), func(t *testing.T) {
			cause := errors.New("cause")
			err := llm.HTTPFailure{Provider: "openai", Model: "gpt-4o", Endpoint: "https://api.example/v1", StatusCode: tt.status,
				Message: tt.message, Code: tt.code, RetryAfter: 2 * time.Second, Hint: "check the key", Cause: cause}.Err()
			retryable, delay := llm.IsRetryable(err)
			if retryable != tt.retryable {
				t.Fatalf("IsRetryable(%v) = %v, want %v", err, retryable, tt.retryable)
			}
			for _, part := range []string{"openai", "gpt-4o", fmt.Sprint(tt.status), tt.message} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not mention %q", err, part)
				}
			}
			if !errors.Is(err, cause) {
				t.Errorf("error does not wrap its cause")
			}
			if tt.retryable {
				if delay != 2*time.Second {
					t.Errorf("retry delay = %s, want 2s", delay)
				}
				return
			}
			var fe *fenixerr.Error
			if !errors.As(err, &fe) || fe.Type != fenixerr.TypeModelProvider || fe.Class != fenixerr.ClassRuntime || fe.Code != tt.fenixCode {
				t.Fatalf("error = %#v, want ModelProviderError (runtime) with code %q", fe, tt.fenixCode)
			}
			if !strings.Contains(err.Error(), "check the key") {
				t.Errorf("non-retryable error %q lacks the hint", err)
			}
			if got := llm.IsContextLengthExceeded(err); got != (tt.fenixCode == llm.CodeContextLengthExceeded) {
				t.Errorf("IsContextLengthExceeded = %v", got)
			}
		})
	}
}

func TestRetryableErrorIsTransient(t *testing.T) {
	cause := context.DeadlineExceeded
	err := fmt.Errorf("model step 3: %w", llm.NewRetryableError("openai", "gpt-4o", 0, 0, cause, "model provider openai timed out"))
	if ok, _ := llm.IsRetryable(err); !ok {
		t.Fatal("wrapped RetryableError is not retryable")
	}
	if !errors.Is(err, fenixerr.ErrTransient) || !errors.Is(err, cause) {
		t.Fatal("RetryableError does not unwrap to fenixerr Transient and its cause")
	}
	// Even callers that only know fenixerr keep it retryable.
	var appErr *temporal.ApplicationError
	if !errors.As(fenixerr.ToTemporal(err), &appErr) || appErr.NonRetryable() || appErr.Type() != fenixerr.TypeTransient {
		t.Fatalf("fenixerr.ToTemporal = %v, want a retryable TransientError", appErr)
	}
	if ok, _ := llm.IsRetryable(fenixerr.Transient(errors.New("x"))); !ok {
		t.Fatal("fenixerr.Transient is not retryable")
	}
	if ok, _ := llm.IsRetryable(fenixerr.New(fenixerr.TypeModelProvider, "bad request")); ok {
		t.Fatal("ModelProviderError is retryable")
	}
	if ok, _ := llm.IsRetryable(nil); ok {
		t.Fatal("nil is retryable")
	}
}

func TestToTemporal(t *testing.T) {
	rateLimited := llm.HTTPFailure{Provider: "openai", Model: "m", StatusCode: 429, Message: "slow down", RetryAfter: 3 * time.Second}.Err()
	var appErr *temporal.ApplicationError
	if !errors.As(llm.ToTemporal(rateLimited), &appErr) {
		t.Fatal("ToTemporal did not return an ApplicationError")
	}
	var details fenixerr.Details
	if appErr.NonRetryable() || appErr.Type() != fenixerr.TypeTransient || appErr.NextRetryDelay() != 3*time.Second ||
		appErr.Details(&details) != nil || details.Code != llm.CodeRateLimited {
		t.Fatalf("ToTemporal(429) = type %s, non-retryable %v, delay %s, details %+v; want retryable TransientError after 3s, code rate_limited",
			appErr.Type(), appErr.NonRetryable(), appErr.NextRetryDelay(), details)
	}

	badRequest := llm.HTTPFailure{Provider: "openai", Model: "m", StatusCode: 400, Message: "bad"}.Err()
	if !errors.As(llm.ToTemporal(badRequest), &appErr) || !appErr.NonRetryable() || appErr.Type() != fenixerr.TypeModelProvider {
		t.Fatalf("ToTemporal(400) = %v, want non-retryable ModelProviderError", appErr)
	}
	canceled := fmt.Errorf("stopped: %w", context.Canceled)
	if got := llm.ToTemporal(canceled); !errors.Is(got, context.Canceled) {
		t.Fatalf("ToTemporal(canceled) = %v, want the cancellation passed through", got)
	}
}

func TestAttempt(t *testing.T) {
	ctx := context.Background()
	if got := llm.Attempt(ctx); got != 1 {
		t.Fatalf("Attempt without WithAttempt = %d, want 1", got)
	}
	if got := llm.Attempt(llm.WithAttempt(ctx, 3)); got != 3 {
		t.Fatalf("Attempt = %d, want 3", got)
	}
}

func TestAssistantTurnsAndUsage(t *testing.T) {
	msgs := []contract.Message{{Role: "system"}, {Role: "user"}, {Role: "assistant"}, {Role: "tool"}, {Role: "assistant"}}
	if got := llm.AssistantTurns(msgs); got != 2 {
		t.Fatalf("AssistantTurns = %d, want 2", got)
	}
	var m contract.Metrics
	llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}.AddTo(&m)
	llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}.AddTo(&m)
	if m.PromptTokens != 11 || m.CompletionTokens != 7 || m.TotalTokens != 18 {
		t.Fatalf("metrics = %+v", m)
	}
}

// fakeProvider records requests and answers from a function.
type fakeProvider struct {
	name     string
	requests []llm.Request
	answer   func(llm.Request) (llm.Response, error)
}

func (f *fakeProvider) Name() string { return f.name }

func (f *fakeProvider) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	f.requests = append(f.requests, req)
	if f.answer != nil {
		return f.answer(req)
	}
	return llm.Response{Message: contract.Message{Role: "assistant", Content: "from " + f.name}, Provider: f.name, Model: req.Model}, nil
}

func TestRouter(t *testing.T) {
	openai := &fakeProvider{name: "openai"}
	scripted := &fakeProvider{name: "scripted"}
	r := &llm.Router{DefaultModel: "gpt-4o-mini", OpenAI: openai, Scripted: scripted}
	tests := []struct {
		model, wantProvider, wantModel string
	}{
		{"scripted:researcher", "scripted", "scripted:researcher"},
		{"scripted", "scripted", "scripted"},
		{"gpt-4o", "openai", "gpt-4o"},
		{"llama3.1:8b", "openai", "llama3.1:8b"},
		{"", "openai", "gpt-4o-mini"},
	}
	for _, tt := range tests {
		resp, err := r.Complete(context.Background(), llm.Request{Model: tt.model})
		if err != nil || resp.Provider != tt.wantProvider || resp.Model != tt.wantModel {
			t.Errorf("Complete(model %q) = provider %q model %q, %v; want %q %q", tt.model, resp.Provider, resp.Model, err, tt.wantProvider, tt.wantModel)
		}
	}

	unconfigured := &llm.Router{}
	_, err := unconfigured.Complete(context.Background(), llm.Request{Model: "gpt-4o"})
	want := `model "gpt-4o" needs an OpenAI-compatible endpoint: set FENIX_OPENAI_API_KEY (and FENIX_OPENAI_BASE_URL for vLLM/Ollama)`
	if err == nil || err.Error() != want {
		t.Fatalf("unconfigured OpenAI error = %v, want %q", err, want)
	}
	if !errors.Is(err, fenixerr.ErrModelProvider) {
		t.Fatalf("unconfigured OpenAI error is not a ModelProviderError")
	}
	if _, err := unconfigured.Complete(context.Background(), llm.Request{Model: "scripted:main"}); err == nil || !strings.Contains(err.Error(), "FENIX_SCRIPT_FILE") {
		t.Fatalf("unconfigured scripted error = %v, want it to name FENIX_SCRIPT_FILE", err)
	}
	if _, err := unconfigured.Complete(context.Background(), llm.Request{}); err == nil || !strings.Contains(err.Error(), "FENIX_MODEL") {
		t.Fatalf("no model error = %v, want it to name FENIX_MODEL", err)
	}
}

func TestSummarizer(t *testing.T) {
	provider := &fakeProvider{name: "fake", answer: func(req llm.Request) (llm.Response, error) {
		return llm.Response{Message: contract.Message{Role: "assistant", Content: "  - user wants 2+2\n- result 4 \n"}, Provider: "fake", Model: req.Model}, nil
	}}
	s := llm.Summarizer{Provider: provider, Model: "small", MaxMessageChars: 10}
	msgs := []contract.Message{
		{Role: "user", Content: "What is 2+2? Please show your work in great detail."},
		{Role: "assistant", ToolCalls: []contract.ToolCall{{CallID: "call-0-0", ToolName: "calculator", Arguments: map[string]any{"expression": "2+2"}}}},
		{Role: "tool", ToolCallID: "call-0-0", Content: "4"},
	}
	got, err := s.Summarize(context.Background(), msgs)
	if err != nil || got != "- user wants 2+2\n- result 4" {
		t.Fatalf("Summarize = %q, %v", got, err)
	}
	req := provider.requests[0]
	if req.Model != "small" || req.MaxTokens != llm.DefaultSummaryMaxTokens || req.Temperature == nil || *req.Temperature != 0 {
		t.Fatalf("request = model %q max %d temperature %v", req.Model, req.MaxTokens, req.Temperature)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != llm.SummaryPrompt || req.Messages[1].Role != "user" {
		t.Fatalf("messages = %+v, want the fixed system prompt and one user message", req.Messages)
	}
	wantTranscript := "[user]\nWhat is 2+\n[... 41 bytes omitted ...]\n\n" +
		"[assistant]\ncalls calculator (call-0-0) with {\"expressi\n[... 10 bytes omitted ...]\n\n" +
		"[tool result for call-0-0]\n4"
	if req.Messages[1].Content != wantTranscript {
		t.Fatalf("transcript =\n%s\nwant\n%s", req.Messages[1].Content, wantTranscript)
	}
	if s.Name() != "llm:small" {
		t.Fatalf("Name = %q", s.Name())
	}

	if got, err := s.Summarize(context.Background(), nil); got != "" || err != nil {
		t.Fatalf("Summarize(nil) = %q, %v", got, err)
	}

	empty := llm.Summarizer{Provider: &fakeProvider{name: "fake", answer: func(llm.Request) (llm.Response, error) {
		return llm.Response{Message: contract.Message{Role: "assistant"}, FinishReason: "length"}, nil
	}}}
	if _, err := empty.Summarize(context.Background(), msgs); err == nil || !strings.Contains(err.Error(), "empty summary") {
		t.Fatalf("empty summary error = %v", err)
	}

	failing := llm.Summarizer{Provider: &fakeProvider{name: "fake", answer: func(llm.Request) (llm.Response, error) {
		return llm.Response{}, llm.HTTPFailure{Provider: "fake", StatusCode: 503}.Err()
	}}}
	if _, err := failing.Summarize(context.Background(), msgs); err == nil {
		t.Fatal("provider failure was swallowed")
	} else if ok, _ := llm.IsRetryable(err); !ok {
		t.Fatalf("a 503 from the summarizer's provider lost its retryability: %v", err)
	}
}

// A model-call activity returns a Response through Temporal's JSON
// payloads; it must survive the trip unchanged.
func TestResponseJSONRoundTrip(t *testing.T) {
	call, malformed := llm.ToolCallFromRaw("call-0-1", "calculator", `{"expression": `)
	in := llm.Response{
		Message: contract.Message{Role: "assistant", Content: "thinking", ToolCalls: []contract.ToolCall{
			{CallID: "call-0-0", ToolName: "workspace_read", Arguments: map[string]any{"path": "a.txt", "max_bytes": 10.0}},
			call,
		}},
		FinishReason:       "tool_calls",
		Usage:              llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
		Model:              "gpt-4o",
		Provider:           "openai",
		MalformedToolCalls: []llm.MalformedToolCall{*malformed},
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out llm.Response
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip =\n%+v\nwant\n%+v", out, in)
	}
	if !strings.Contains(string(data), `"finish_reason":"tool_calls"`) || !strings.Contains(string(data), `"malformed_tool_calls"`) {
		t.Fatalf("JSON %s lacks snake_case names", data)
	}
}
