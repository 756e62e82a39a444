package openai

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/fenixerr"
)

// Provider calls one OpenAI-compatible endpoint.
type Provider struct {
	name           string
	endpoint       string // redacted base URL, for messages
	defaultModel   string
	timeout        time.Duration
	maxTokensField string
	// images says whether tools' images are shown to the model.
	images bool
	chat   sdk.ChatCompletionService
}

var _ llm.Provider = (*Provider)(nil)

// New validates cfg and builds a provider. The SDK client is built from
// cfg alone, not from the SDK's own environment variables
// (OPENAI_BASE_URL, OPENAI_ORG_ID, ...), so what Fenix logs is what it
// uses.
func New(cfg Config) (*Provider, error) {
	base, err := url.Parse(cfg.baseURL())
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("openai-compatible provider %s: base URL %q is not an http(s) URL such as %s or http://localhost:11434/v1 (%s)",
			cfg.name(), redactURL(cfg.baseURL()), DefaultBaseURL, EnvBaseURL)
	}
	field, err := cfg.maxTokensField(base)
	if err != nil {
		return nil, fmt.Errorf("openai-compatible provider %s: %w", cfg.name(), err)
	}
	client := cfg.HTTPClient
	if client == nil {
		// No client-wide timeout: Complete bounds each attempt with its
		// context, which also covers reading the body.
		client = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base.String()),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0),
		option.WithMiddleware(limitResponses),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Provider{
		name:           cfg.name(),
		endpoint:       redactURL(base.String()),
		defaultModel:   cfg.DefaultModel,
		timeout:        cfg.requestTimeout(),
		maxTokensField: field,
		images:         !cfg.NoImages,
		chat:           sdk.NewChatCompletionService(opts...),
	}, nil
}

// Name identifies the provider.
func (p *Provider) Name() string { return p.name }

// Complete sends one Chat Completions request.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = p.defaultModel
	}
	if model == "" {
		return llm.Response{}, fenixerr.New(fenixerr.TypeModelProvider,
			"model provider %s (%s): no model given and no default model configured (%s)", p.name, p.endpoint, EnvModel)
	}
	var shown map[string][]byte
	if p.images {
		shown = shownImages(ctx, req)
	}
	params, err := buildParams(model, req, p.maxTokensField, shown)
	if err != nil {
		return llm.Response{}, err
	}

	attemptCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	// The raw response is kept so error bodies the SDK cannot parse (vLLM
	// and FastAPI servers use other shapes) still yield a status and a
	// message.
	var httpResp *http.Response
	completion, err := p.chat.New(attemptCtx, params, option.WithResponseInto(&httpResp))
	if err != nil {
		return llm.Response{}, p.classify(ctx, attemptCtx, model, httpResp, err)
	}
	return p.toResponse(model, req, completion)
}

// classify turns a failed attempt into a canceled, retryable or
// non-retryable error. The order matters: the caller's context first (its
// end is not the provider's fault), then an HTTP status, then our own
// attempt timeout, then the transport.
func (p *Provider) classify(ctx, attemptCtx context.Context, model string, resp *http.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("model call to %s for model %q stopped: %w", p.name, model, ctxErr)
	}
	if errors.Is(err, errResponseTooLarge) {
		status := ""
		if resp != nil {
			status = fmt.Sprintf(" (HTTP status %d)", resp.StatusCode)
		}
		return fenixerr.PayloadTooLarge("model provider %s (%s) sent a response over %d bytes for model %q%s; it was not read further",
			p.name, p.endpoint, maxResponseBytes, model, status).WithCode("model_answer_too_large")
	}
	if resp != nil && resp.StatusCode >= 400 {
		message, code := apiError(resp, err)
		return llm.HTTPFailure{
			Provider:   p.name,
			Model:      model,
			Endpoint:   p.endpoint,
			StatusCode: resp.StatusCode,
			Message:    message,
			Code:       code,
			RetryAfter: llm.ParseRetryAfter(resp.Header, time.Now()),
			Hint:       hintFor(resp.StatusCode),
			Cause:      err,
		}.Err()
	}
	if attemptCtx.Err() != nil {
		return llm.NewRetryableError(p.name, model, 0, 0, err,
			fmt.Sprintf("model provider %s (%s) did not answer for model %q within %s (%s)", p.name, p.endpoint, model, p.timeout, EnvTimeout))
	}
	if isTLSVerificationError(err) {
		return fenixerr.New(fenixerr.TypeModelProvider,
			"model provider %s (%s): TLS verification failed: %v", p.name, p.endpoint, err).WithCause(err)
	}
	if isConnectionError(err) {
		return llm.NewRetryableError(p.name, model, 0, 0, err,
			fmt.Sprintf("model provider %s (%s) could not be reached for model %q: %v", p.name, p.endpoint, model, err))
	}
	return fenixerr.New(fenixerr.TypeModelProvider,
		"model provider %s (%s) sent an unusable answer for model %q: %v", p.name, p.endpoint, model, err).WithCause(err)
}

func hintFor(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("check %s (or %s)", EnvAPIKey, EnvAPIKeyFallback)
	case http.StatusNotFound:
		return fmt.Sprintf("check the model name and %s (most servers expect it to end in /v1)", EnvBaseURL)
	}
	return ""
}

func isConnectionError(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// isTLSVerificationError spots certificate problems, which a retry cannot
// fix.
func isTLSVerificationError(err error) bool {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verification *tls.CertificateVerificationError
	return errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &verification)
}

// maxAPIMessage bounds the API's error text in our messages.
const maxAPIMessage = 1000

// apiError extracts the error message and code from an error response.
// It understands OpenAI/Ollama/llama.cpp ({"error": {"message", "code",
// "type"}}), vLLM ({"message", "type", "code"}), FastAPI ({"detail"}) and
// plain text, and falls back to what the SDK parsed.
func apiError(resp *http.Response, sdkErr error) (message, code string) {
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	}
	message, code = parseErrorBody(body)
	if message == "" {
		var apiErr *sdk.Error
		if errors.As(sdkErr, &apiErr) {
			message, code = apiErr.Message, apiErr.Code
		}
	}
	if len(message) > maxAPIMessage {
		message = message[:maxAPIMessage] + "…"
	}
	return message, code
}

func parseErrorBody(body []byte) (message, code string) {
	var envelope struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Code    json.RawMessage `json:"code"`
		Type    json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return strings.TrimSpace(string(body)), ""
	}
	var inner struct {
		Message json.RawMessage `json:"message"`
		Code    json.RawMessage `json:"code"`
		Type    json.RawMessage `json:"type"`
	}
	if len(envelope.Error) > 0 && json.Unmarshal(envelope.Error, &inner) == nil && len(inner.Message) > 0 {
		return jsonText(inner.Message), firstNonEmpty(jsonText(inner.Code), jsonText(inner.Type))
	}
	if text := jsonText(envelope.Error); text != "" {
		return text, ""
	}
	if text := jsonText(envelope.Message); text != "" {
		return text, firstNonEmpty(jsonText(envelope.Code), jsonText(envelope.Type))
	}
	return jsonText(envelope.Detail), ""
}

// jsonText renders a JSON value as text: strings unquoted, null as "",
// anything else compact.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func (p *Provider) toResponse(model string, req llm.Request, completion *sdk.ChatCompletion) (llm.Response, error) {
	if completion == nil || len(completion.Choices) == 0 {
		return llm.Response{}, fenixerr.New(fenixerr.TypeModelProvider,
			"model provider %s (%s) returned no choices for model %q", p.name, p.endpoint, model)
	}
	choice := completion.Choices[0]
	msg := choice.Message
	out := llm.Response{
		FinishReason: choice.FinishReason,
		Model:        firstNonEmpty(completion.Model, model),
		Provider:     p.name,
		Usage: llm.Usage{
			PromptTokens:     int(completion.Usage.PromptTokens),
			CompletionTokens: int(completion.Usage.CompletionTokens),
			TotalTokens:      int(completion.Usage.TotalTokens),
		},
	}
	if out.Usage.TotalTokens == 0 {
		out.Usage.TotalTokens = out.Usage.PromptTokens + out.Usage.CompletionTokens
	}
	out.Message.Role = "assistant"
	out.Message.Content = msg.Content
	if out.Message.Content == "" && msg.Refusal != "" {
		// A refusal is the model's answer; surface it rather than an empty
		// message.
		out.Message.Content = msg.Refusal
	}
	// Some compatible servers send no or repeated call IDs; a tool result
	// must match exactly one call, so those get deterministic IDs.
	step := llm.AssistantTurns(req.Messages)
	seen := make(map[string]bool, len(msg.ToolCalls))
	for i, tc := range msg.ToolCalls {
		id := tc.ID
		if id == "" || seen[id] {
			id = fmt.Sprintf("call-%d-%d", step, i)
		}
		seen[id] = true
		name, raw := tc.Function.Name, tc.Function.Arguments
		if tc.Type == "custom" {
			name, raw = tc.Custom.Name, tc.Custom.Input
		}
		call, malformed := llm.ToolCallFromRaw(id, name, raw)
		out.Message.ToolCalls = append(out.Message.ToolCalls, call)
		if malformed != nil {
			out.MalformedToolCalls = append(out.MalformedToolCalls, *malformed)
		}
	}
	return out, nil
}
