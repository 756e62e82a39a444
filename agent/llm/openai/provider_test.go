package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// chatServer is an httptest server speaking the Chat Completions API. It
// records every request so tests can count attempts and inspect bodies.
type chatServer struct {
	*httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	bodies   []map[string]any
	headers  []http.Header
	paths    []string
}

func newChatServer(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *chatServer {
	t.Helper()
	s := &chatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) lastBody(t *testing.T) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		t.Fatal("the server received no request")
	}
	return s.bodies[len(s.bodies)-1]
}

func (s *chatServer) header(t *testing.T, i int) http.Header {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.headers) {
		t.Fatalf("the server received %d requests, want request %d", len(s.headers), i+1)
	}
	return s.headers[i]
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func answer(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, body) }
}

func failWith(status int, header http.Header, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		writeJSON(w, status, body)
	}
}

func newTestProvider(t *testing.T, s *chatServer, mutate ...func(*Config)) *Provider {
	t.Helper()
	cfg := Config{BaseURL: s.URL + "/v1", APIKey: "sk-test-secret", DefaultModel: "gpt-4o", RequestTimeout: 5 * time.Second}
	for _, m := range mutate {
		m(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

const plainAnswer = `{
  "id": "chatcmpl-abc",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4o-2024-08-06",
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": "Hello! How can I help?", "refusal": null, "annotations": []},
    "logprobs": null,
    "finish_reason": "stop"
  }],
  "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}},
  "service_tier": "default",
  "system_fingerprint": "fp_1"
}`

func TestCompletePlainAnswer(t *testing.T) {
	s := newChatServer(t, answer(plainAnswer))
	p := newTestProvider(t, s)

	resp, err := p.Complete(context.Background(), llm.Request{Messages: []contract.Message{{Role: "user", Content: "Hi"}}})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := llm.Response{
		Message:      contract.Message{Role: "assistant", Content: "Hello! How can I help?"},
		FinishReason: "stop",
		Usage:        llm.Usage{PromptTokens: 19, CompletionTokens: 10, TotalTokens: 29},
		Model:        "gpt-4o-2024-08-06",
		Provider:     "openai",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("Complete =\n%+v\nwant\n%+v", resp, want)
	}
	s.mu.Lock()
	path := s.paths[0]
	s.mu.Unlock()
	if path != "/v1/chat/completions" {
		t.Errorf("path = %s, want /v1/chat/completions", path)
	}
	if got := s.header(t, 0).Get("Authorization"); got != "Bearer sk-test-secret" {
		t.Errorf("Authorization = %q", got)
	}
	if got := s.lastBody(t)["model"]; got != "gpt-4o" {
		t.Errorf("model = %v, want the default model gpt-4o", got)
	}
}

const toolCallAnswer = `{
  "id": "chatcmpl-tools",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4o-2024-08-06",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "refusal": null,
      "tool_calls": [
        {"id": "call_A1", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\": \"365*24\"}"}},
        {"id": "call_B2", "type": "function", "function": {"name": "workspace_read", "arguments": "{\"path\": \"notes/todo.md\", \"max_bytes\": 4096}"}}
      ]
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 82, "completion_tokens": 40, "total_tokens": 122}
}`

func TestCompleteToolCallsAndRequestShape(t *testing.T) {
	s := newChatServer(t, answer(toolCallAnswer))
	p := newTestProvider(t, s)
	temperature := 0.0
	req := llm.Request{
		Model: "gpt-4o-mini",
		Messages: []contract.Message{
			{Role: "system", Content: "You are Fenix."},
			{Role: "user", Content: "What is 2+2?", Name: "alice"},
			{Role: "assistant", Content: "Let me compute.", ToolCalls: []contract.ToolCall{
				{CallID: "call-0-0", ToolName: "calculator", Arguments: map[string]any{"expression": "2+2"}},
			}},
			{Role: "tool", ToolCallID: "call-0-0", Content: "4", Name: "calculator"},
			{Role: "assistant", ToolCalls: []contract.ToolCall{{CallID: "call-1-0", ToolName: "clock"}}},
			{Role: "tool", ToolCallID: "call-1-0", Content: "noon"},
		},
		Tools: []llm.ToolSpec{
			{Name: "calculator", Description: "Evaluate an expression.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"expression":{"type":"string","minLength":1}},"required":["expression"],"additionalProperties":false}`)},
			{Name: "clock"},
		},
		MaxTokens:   256,
		Temperature: &temperature,
	}

	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}

	wantBody := `{
	  "model": "gpt-4o-mini",
	  "messages": [
	    {"role": "system", "content": "You are Fenix."},
	    {"role": "user", "content": "What is 2+2?"},
	    {"role": "assistant", "content": "Let me compute.", "tool_calls": [
	      {"id": "call-0-0", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"2+2\"}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call-0-0", "content": "4"},
	    {"role": "assistant", "tool_calls": [
	      {"id": "call-1-0", "type": "function", "function": {"name": "clock", "arguments": "{}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call-1-0", "content": "noon"}
	  ],
	  "tools": [
	    {"type": "function", "function": {"name": "calculator", "description": "Evaluate an expression.", "parameters":
	      {"type": "object", "properties": {"expression": {"type": "string", "minLength": 1}}, "required": ["expression"], "additionalProperties": false}}},
	    {"type": "function", "function": {"name": "clock", "parameters": {"type": "object", "properties": {}}}}
	  ],
	  "max_tokens": 256,
	  "temperature": 0
	}`
	var want map[string]any
	if err := json.Unmarshal([]byte(wantBody), &want); err != nil {
		t.Fatal(err)
	}
	if got := s.lastBody(t); !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("request body =\n%s\nwant only the standard fields of\n%s", gotJSON, wantBody)
	}

	wantCalls := []contract.ToolCall{
		{CallID: "call_A1", ToolName: "calculator", Arguments: map[string]any{"expression": "365*24"}},
		{CallID: "call_B2", ToolName: "workspace_read", Arguments: map[string]any{"path": "notes/todo.md", "max_bytes": 4096.0}},
	}
	if !reflect.DeepEqual(resp.Message.ToolCalls, wantCalls) {
		t.Fatalf("tool calls = %+v, want %+v", resp.Message.ToolCalls, wantCalls)
	}
	if resp.Message.Role != "assistant" || resp.Message.Content != "" || resp.FinishReason != "tool_calls" || len(resp.MalformedToolCalls) != 0 {
		t.Fatalf("response = %+v", resp)
	}
	if resp.Usage != (llm.Usage{PromptTokens: 82, CompletionTokens: 40, TotalTokens: 122}) {
		t.Fatalf("usage = %+v", resp.Usage)
	}
}

func TestCompleteMaxCompletionTokensField(t *testing.T) {
	s := newChatServer(t, answer(plainAnswer))
	p := newTestProvider(t, s, func(c *Config) { c.MaxTokensFieldName = MaxCompletionTokensField })
	if _, err := p.Complete(context.Background(), llm.Request{MaxTokens: 99}); err != nil {
		t.Fatal(err)
	}
	body := s.lastBody(t)
	if body["max_completion_tokens"] != 99.0 || body["max_tokens"] != nil {
		t.Fatalf("body = %v, want max_completion_tokens only", body)
	}
	if _, ok := body["temperature"]; ok {
		t.Fatalf("temperature sent although the request left it unset: %v", body)
	}
}

func TestMaxTokensFieldDefaultsByHost(t *testing.T) {
	tests := []struct{ base, want string }{
		{"https://api.openai.com/v1", MaxCompletionTokensField},
		{"http://localhost:11434/v1", MaxTokensField},
		{"http://vllm:8000/v1", MaxTokensField},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.base)
		if got, err := (Config{}).maxTokensField(u); err != nil || got != tt.want {
			t.Errorf("maxTokensField(%s) = %q, %v; want %q", tt.base, got, err, tt.want)
		}
	}
	if _, err := New(Config{MaxTokensFieldName: "max_new_tokens"}); err == nil || !strings.Contains(err.Error(), EnvMaxTokensField) {
		t.Fatalf("bad max tokens field error = %v", err)
	}
}

func TestCompleteMalformedArguments(t *testing.T) {
	s := newChatServer(t, answer(`{
	  "id": "x", "object": "chat.completion", "created": 1, "model": "llama3.1:8b",
	  "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "",
	    "tool_calls": [
	      {"id": "", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\": \"2+"}},
	      {"id": "", "type": "function", "function": {"name": "clock", "arguments": ""}}
	    ]}}]
	}`))
	p := newTestProvider(t, s)
	history := []contract.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}, {Role: "user", Content: "q2"}}
	resp, err := p.Complete(context.Background(), llm.Request{Model: "llama3.1:8b", Messages: history})
	if err != nil {
		t.Fatalf("malformed arguments must not fail the call: %v", err)
	}
	wantCalls := []contract.ToolCall{
		{CallID: "call-1-0", ToolName: "calculator", Arguments: map[string]any{llm.RawArgumentsKey: `{"expression": "2+`}},
		{CallID: "call-1-1", ToolName: "clock", Arguments: map[string]any{}},
	}
	if !reflect.DeepEqual(resp.Message.ToolCalls, wantCalls) {
		t.Fatalf("tool calls = %+v, want %+v (deterministic IDs for missing ones)", resp.Message.ToolCalls, wantCalls)
	}
	if len(resp.MalformedToolCalls) != 1 || resp.MalformedToolCalls[0].CallID != "call-1-0" || resp.MalformedToolCalls[0].Problem == "" {
		t.Fatalf("MalformedToolCalls = %+v", resp.MalformedToolCalls)
	}
	if resp.Usage != (llm.Usage{}) {
		t.Fatalf("usage = %+v, want zero when the server sends none", resp.Usage)
	}
}

func TestCompleteRateLimited(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter string
		want       time.Duration
	}{
		{"seconds", "7", 7 * time.Second},
		{"http date", time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat), 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newChatServer(t, failWith(http.StatusTooManyRequests, http.Header{"Retry-After": {tt.retryAfter}},
				`{"error": {"message": "Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`))
			p := newTestProvider(t, s)
			_, err := p.Complete(context.Background(), llm.Request{})
			var re *llm.RetryableError
			if !errors.As(err, &re) {
				t.Fatalf("error = %v (%T), want *llm.RetryableError", err, err)
			}
			if re.StatusCode != 429 || re.RetryAfter < tt.want-2*time.Second || re.RetryAfter > tt.want {
				t.Fatalf("RetryableError status %d after %s, want 429 after ~%s", re.StatusCode, re.RetryAfter, tt.want)
			}
			if ok, delay := llm.IsRetryable(err); !ok || delay != re.RetryAfter {
				t.Fatalf("IsRetryable = %v, %s", ok, delay)
			}
			if !strings.Contains(err.Error(), "Rate limit reached") || !strings.Contains(err.Error(), "429") {
				t.Fatalf("error %q lacks the API message or status", err)
			}
			if n := s.requests.Load(); n != 1 {
				t.Fatalf("server saw %d requests, want exactly 1 (SDK retries must be off)", n)
			}
		})
	}
}

func TestCompleteServerErrorIsRetryableAndNotRetriedBySDK(t *testing.T) {
	for _, status := range []int{500, 502, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			s := newChatServer(t, failWith(status, http.Header{"X-Should-Retry": {"true"}},
				`{"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}`))
			p := newTestProvider(t, s)
			_, err := p.Complete(context.Background(), llm.Request{})
			if ok, delay := llm.IsRetryable(err); !ok || delay != 0 {
				t.Fatalf("IsRetryable(%v) = %v, %s; want true, 0", err, ok, delay)
			}
			if n := s.requests.Load(); n != 1 {
				t.Fatalf("server saw %d requests, want exactly 1", n)
			}
		})
	}
}

func TestCompleteClientErrorsAreNotRetryable(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		wantMessage string
		wantCode    string
		wantHint    string
	}{
		{"openai bad request", 400,
			`{"error": {"message": "Invalid value for 'messages[2].role'.", "type": "invalid_request_error", "param": "messages", "code": null}}`,
			"Invalid value for 'messages[2].role'.", llm.CodeInvalidRequest, ""},
		{"openai bad key", 401,
			`{"error": {"message": "Incorrect API key provided: sk-test-****cret.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`,
			"Incorrect API key provided", llm.CodeAuthenticationFailed, EnvAPIKey},
		{"openai unknown model", 404,
			`{"error": {"message": "The model 'gpt-5-nano-x' does not exist", "type": "invalid_request_error", "code": "model_not_found"}}`,
			"does not exist", llm.CodeInvalidRequest, EnvBaseURL},
		{"openai context length", 400,
			`{"error": {"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}`,
			"maximum context length", llm.CodeContextLengthExceeded, ""},
		{"vllm shape", 400,
			`{"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", "type": "BadRequestError", "param": null, "code": 400}`,
			"However, you requested 5000 tokens", llm.CodeContextLengthExceeded, ""},
		{"llama.cpp shape", 400,
			`{"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}}`,
			"exceeds the available context size", llm.CodeContextLengthExceeded, ""},
		{"fastapi detail", 422, `{"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}`,
			"field required", llm.CodeInvalidRequest, ""},
		{"plain text", 400, `model is required`, "model is required", llm.CodeInvalidRequest, ""},
		{"quota", 429,
			`{"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}`,
			"exceeded your current quota", llm.CodeInsufficientQuota, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newChatServer(t, failWith(tt.status, http.Header{"Retry-After": {"1"}}, tt.body))
			p := newTestProvider(t, s)
			_, err := p.Complete(context.Background(), llm.Request{Model: "gpt-4o"})
			if ok, _ := llm.IsRetryable(err); ok {
				t.Fatalf("HTTP %d is retryable: %v", tt.status, err)
			}
			var fe *fenixerr.Error
			if !errors.As(err, &fe) || fe.Type != fenixerr.TypeModelProvider || fe.Class != fenixerr.ClassRuntime || fe.Code != tt.wantCode {
				t.Fatalf("error = %#v, want ModelProviderError (runtime, code %s)", err, tt.wantCode)
			}
			msg := err.Error()
			for _, part := range []string{"openai", `"gpt-4o"`, fmt.Sprintf("HTTP %d", tt.status), tt.wantMessage, tt.wantHint} {
				if !strings.Contains(msg, part) {
					t.Errorf("error %q does not contain %q", msg, part)
				}
			}
			if strings.Contains(msg, "sk-test-secret") {
				t.Errorf("error leaks the API key: %q", msg)
			}
			if n := s.requests.Load(); n != 1 {
				t.Fatalf("server saw %d requests, want 1", n)
			}
		})
	}
}

func TestCompleteTimeoutIsRetryable(t *testing.T) {
	release := make(chan struct{})
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	p := newTestProvider(t, s, func(c *Config) { c.RequestTimeout = 50 * time.Millisecond })

	_, err := p.Complete(context.Background(), llm.Request{})
	var re *llm.RetryableError
	if !errors.As(err, &re) || re.StatusCode != 0 {
		t.Fatalf("error = %v (%T), want a RetryableError without status", err, err)
	}
	if !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("error %q should say the provider did not answer within 50ms", err)
	}
	if n := s.requests.Load(); n != 1 {
		t.Fatalf("server saw %d requests, want 1", n)
	}
}

func TestCompleteCallerCancellationIsNotRetryable(t *testing.T) {
	started := make(chan struct{})
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	p := newTestProvider(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()

	_, err := p.Complete(ctx, llm.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if ok, _ := llm.IsRetryable(err); ok {
		t.Fatal("a canceled call is retryable")
	}
}

func TestCompleteConnectionRefusedIsRetryable(t *testing.T) {
	s := newChatServer(t, answer(plainAnswer))
	p := newTestProvider(t, s)
	s.Close()
	_, err := p.Complete(context.Background(), llm.Request{})
	if ok, _ := llm.IsRetryable(err); !ok {
		t.Fatalf("connection failure is not retryable: %v", err)
	}
	if !strings.Contains(err.Error(), "could not be reached") {
		t.Fatalf("error %q should say the provider could not be reached", err)
	}
}

func TestCompleteUnusableAnswers(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"no choices", `{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}`, "no choices"},
		{"not json", `<html>proxy</html>`, "unusable answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newChatServer(t, answer(tt.body))
			p := newTestProvider(t, s)
			_, err := p.Complete(context.Background(), llm.Request{})
			if ok, _ := llm.IsRetryable(err); ok || !errors.Is(err, fenixerr.ErrModelProvider) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want a non-retryable ModelProviderError containing %q", err, tt.want)
			}
		})
	}
}

func TestCompleteRefusalBecomesContent(t *testing.T) {
	s := newChatServer(t, answer(`{"id": "x", "object": "chat.completion", "created": 1, "model": "m",
	  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]}`))
	resp, err := newTestProvider(t, s).Complete(context.Background(), llm.Request{})
	if err != nil || resp.Message.Content != "I can't help with that." {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
}

func TestCompleteRejectsBadRequestsLocally(t *testing.T) {
	s := newChatServer(t, answer(plainAnswer))
	p := newTestProvider(t, s)
	tests := []struct {
		name string
		req  llm.Request
		want string
	}{
		{"unknown role", llm.Request{Messages: []contract.Message{{Role: "developer", Content: "x"}}}, `messages[0] has role "developer"`},
		{"tool result without id", llm.Request{Messages: []contract.Message{{Role: "tool", Content: "4"}}}, "no tool_call_id"},
		{"call without id", llm.Request{Messages: []contract.Message{{Role: "assistant", ToolCalls: []contract.ToolCall{{ToolName: "calculator"}}}}}, "has no call_id"},
		{"bad schema", llm.Request{Tools: []llm.ToolSpec{{Name: "calculator", Parameters: json.RawMessage(`[1]`)}}}, `tool "calculator": parameters must be a JSON schema object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Complete(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, fenixerr.ErrValidation) {
				t.Fatalf("error = %v, want a ValidationError containing %q", err, tt.want)
			}
		})
	}
	noModel := newTestProvider(t, s, func(c *Config) { c.DefaultModel = "" })
	if _, err := noModel.Complete(context.Background(), llm.Request{}); err == nil || !strings.Contains(err.Error(), EnvModel) {
		t.Fatalf("no model error = %v, want it to name %s", err, EnvModel)
	}
	if n := s.requests.Load(); n != 0 {
		t.Fatalf("invalid requests reached the server %d times", n)
	}
}

func TestNoAPIKeySendsNoAuthorization(t *testing.T) {
	s := newChatServer(t, answer(plainAnswer))
	p := newTestProvider(t, s, func(c *Config) { c.APIKey = "" })
	if _, err := p.Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := s.header(t, 0).Get("Authorization"); got != "" {
		t.Fatalf("Authorization = %q, want none without an API key", got)
	}
}

// The SDK reads OPENAI_BASE_URL and friends on its own; Fenix's config
// must be the only source.
func TestSDKEnvironmentIsIgnored(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/should-not-be-used")
	t.Setenv("OPENAI_API_KEY", "sk-from-sdk-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Injected: yes")
	s := newChatServer(t, answer(plainAnswer))
	if _, err := newTestProvider(t, s).Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := s.header(t, 0); got.Get("Authorization") != "Bearer sk-test-secret" || got.Get("X-Injected") != "" {
		t.Fatalf("headers = %v, want only the configured key", got)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		EnvBaseURL:        "http://localhost:11434/v1",
		EnvAPIKeyFallback: "sk-fallback",
		EnvModel:          "llama3.1:8b",
		EnvTimeout:        "90s",
	}
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Config{BaseURL: "http://localhost:11434/v1", APIKey: "sk-fallback", DefaultModel: "llama3.1:8b", RequestTimeout: 90 * time.Second}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("ConfigFromEnv = %+v, want %+v", cfg, want)
	}

	env[EnvAPIKey] = "sk-fenix"
	env[EnvModel] = "scripted:main"
	cfg, _ = ConfigFromEnv(func(k string) string { return env[k] })
	if cfg.APIKey != "sk-fenix" || cfg.DefaultModel != "" {
		t.Fatalf("ConfigFromEnv = %+v, want FENIX_OPENAI_API_KEY first and no scripted default model", cfg)
	}

	env[EnvImages] = "off"
	if cfg, _ = ConfigFromEnv(func(k string) string { return env[k] }); !cfg.NoImages {
		t.Fatalf("ConfigFromEnv = %+v, want images off", cfg)
	}
	env[EnvImages] = "maybe"
	if _, err := ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), EnvImages) {
		t.Fatalf("bad images setting error = %v", err)
	}
	delete(env, EnvImages)

	env[EnvTimeout] = "soon"
	if _, err := ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), EnvTimeout) {
		t.Fatalf("bad timeout error = %v", err)
	}
}

func TestConfigured(t *testing.T) {
	tests := []struct {
		cfg  Config
		want bool
	}{
		{Config{}, false},
		{Config{BaseURL: DefaultBaseURL + "/"}, false},
		{Config{APIKey: "sk"}, true},
		{Config{BaseURL: "http://localhost:8000/v1"}, true},
	}
	for _, tt := range tests {
		if got := tt.cfg.Configured(); got != tt.want {
			t.Errorf("%+v.Configured() = %v, want %v", tt.cfg, got, tt.want)
		}
	}
}

func TestConfigNeverShowsTheKey(t *testing.T) {
	cfg := Config{BaseURL: "https://user:pass@llm.example/v1?token=x", APIKey: "sk-very-secret", DefaultModel: "m"}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("provider", "config", cfg)
	for _, out := range []string{cfg.String(), fmt.Sprint(cfg), fmt.Sprintf("%v", cfg), logged.String()} {
		for _, secret := range []string{"sk-very-secret", "pass", "token=x"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q shows %q", out, secret)
			}
		}
	}
	if !strings.Contains(logged.String(), "api_key_set=true") {
		t.Errorf("log %q should say a key is set", logged.String())
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, base := range []string{"localhost:8000", "ftp://x/v1", "http://"} {
		if _, err := New(Config{BaseURL: base}); err == nil || !strings.Contains(err.Error(), EnvBaseURL) {
			t.Errorf("New(base %q) error = %v, want one naming %s", base, err, EnvBaseURL)
		}
	}
}
