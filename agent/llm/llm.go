// Package llm is the model-provider layer of the AgentTurn workflow: one
// Provider interface, the request and response types the agent loop speaks,
// and the error classification a Temporal activity needs to decide whether
// a failed model call is worth retrying.
//
// Implementations live in sub-packages:
//
//   - llm/openai: any OpenAI-compatible Chat Completions endpoint (OpenAI,
//     vLLM, Ollama, llama.cpp server);
//   - llm/scripted: deterministic canned turns from a JSON file, for offline
//     demos and tests;
//   - llm/providers: builds a Router over both from the environment.
//
// One Complete is one attempt. Providers never retry on their own: the
// calling activity retries, so every attempt is visible in Temporal with its
// backoff and heartbeats. Errors come back in three shapes:
//
//   - *RetryableError (HTTP 408, 429, 5xx, timeouts, connection failures):
//     retry, after RetryAfter when the provider said so. It unwraps to a
//     fenixerr Transient error, so fenixerr.ToTemporal already keeps it
//     retryable; ToTemporal in this package also sets NextRetryDelay.
//   - *fenixerr.Error of type ModelProviderError (other 4xx, unusable
//     answers) or ValidationError (a transcript the API cannot accept):
//     retrying cannot help.
//   - the context's error when the caller's context ended.
package llm

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/fenixrt/fenix/contract"
)

// Provider answers one model turn.
type Provider interface {
	// Name identifies the provider in errors and traces.
	Name() string
	// Complete makes exactly one attempt at the model call.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Request is one model call.
type Request struct {
	// Model is the model to call; empty means the provider's default.
	Model    string             `json:"model,omitempty"`
	Messages []contract.Message `json:"messages"`
	Tools    []ToolSpec         `json:"tools,omitempty"`
	// MaxTokens caps the completion; 0 leaves it to the provider.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature is nil to leave it to the provider; a pointer so an
	// explicit 0 (greedy decoding) is sent.
	Temperature *float64 `json:"temperature,omitempty"`
	// Blobs reads the images the messages name (contract.ImageRef) from
	// the context store; nil when the worker has none, and the model sees
	// the content's line for each image instead.
	Blobs BlobReader `json:"-"`
}

// BlobReader reads a context-store blob by reference.
type BlobReader interface {
	Get(ctx context.Context, ref string) ([]byte, error)
}

// ToolSpec offers one function tool to the model.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments object; empty means
	// the tool takes no arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Response is the model's turn. The JSON names are snake_case because a
// model-call activity's result is shown in the Temporal Web UI.
type Response struct {
	// Message has role assistant and Content and/or ToolCalls.
	Message contract.Message `json:"message"`
	// FinishReason is the provider's reason: "stop", "tool_calls",
	// "length", "content_filter", ...
	FinishReason string `json:"finish_reason"`
	Usage        Usage  `json:"usage"`
	// Model is the model that answered, as the provider reports it.
	Model string `json:"model"`
	// Provider is the Name of the provider that answered.
	Provider string `json:"provider"`
	// MalformedToolCalls lists the tool calls whose arguments were not a
	// JSON object; see RawArgumentsKey.
	MalformedToolCalls []MalformedToolCall `json:"malformed_tool_calls,omitempty"`
}

// Usage is the token accounting of one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// AddTo adds the usage to the workflow's live metrics.
func (u Usage) AddTo(m *contract.Metrics) {
	m.PromptTokens += u.PromptTokens
	m.CompletionTokens += u.CompletionTokens
	m.TotalTokens += u.TotalTokens
}

// AssistantTurns counts the assistant messages in a transcript: the number
// of model turns already taken. It is a pure function of the request, so
// anything derived from it survives activity retries and workflow replay.
func AssistantTurns(messages []contract.Message) int {
	n := 0
	for _, m := range messages {
		if m.Role == contract.RoleAssistant {
			n++
		}
	}
	return n
}

// ScriptedModelPrefix selects the scripted provider: "scripted:<script>".
const ScriptedModelPrefix = "scripted:"

// IsScriptedModel reports whether model names a scripted script
// ("scripted" alone selects the default script).
func IsScriptedModel(model string) bool {
	return model == "scripted" || strings.HasPrefix(model, ScriptedModelPrefix)
}
