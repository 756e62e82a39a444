// Package openai is the model provider for any OpenAI-compatible Chat
// Completions endpoint: OpenAI itself, vLLM, Ollama, the llama.cpp server.
// It sends only standard Chat Completions fields (model, messages, tools,
// max_tokens or max_completion_tokens, temperature) and never the
// Responses API, so every compatible server understands it.
//
// One Complete is one HTTP request: the SDK's own retries are off because
// the Temporal activity retries, with backoff and heartbeats, using the
// classification of llm.IsRetryable.
package openai

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fenixrt/fenix/agent/llm"
)

// Defaults.
const (
	DefaultName           = "openai"
	DefaultBaseURL        = "https://api.openai.com/v1"
	DefaultRequestTimeout = 120 * time.Second
)

// Environment variables read by ConfigFromEnv.
const (
	EnvBaseURL        = "FENIX_OPENAI_BASE_URL"
	EnvAPIKey         = "FENIX_OPENAI_API_KEY"
	EnvAPIKeyFallback = "OPENAI_API_KEY"
	EnvModel          = "FENIX_MODEL"
	EnvTimeout        = "FENIX_OPENAI_TIMEOUT"
	EnvMaxTokensField = "FENIX_OPENAI_MAX_TOKENS_FIELD"
	EnvImages         = "FENIX_OPENAI_IMAGES"
)

// Names of the request field that caps the completion length.
const (
	// MaxTokensField is understood by every compatible server but
	// rejected by OpenAI's reasoning models.
	MaxTokensField = "max_tokens"
	// MaxCompletionTokensField is OpenAI's current name.
	MaxCompletionTokensField = "max_completion_tokens"
)

// Config configures a Provider. The zero value plus an APIKey talks to
// OpenAI.
type Config struct {
	// Name identifies the provider in errors and traces; default "openai".
	Name string
	// BaseURL is the API root, ending in /v1 for most servers: OpenAI
	// https://api.openai.com/v1, vLLM http://host:8000/v1, Ollama
	// http://host:11434/v1, llama.cpp http://host:8080/v1.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// DefaultModel is used when a request names no model.
	DefaultModel string
	// RequestTimeout bounds one HTTP attempt; a timeout is retryable.
	RequestTimeout time.Duration
	// MaxTokensFieldName is MaxTokensField or MaxCompletionTokensField.
	// Empty picks max_completion_tokens for api.openai.com and max_tokens
	// elsewhere, which is what each accepts.
	MaxTokensFieldName string
	// NoImages keeps the images tools return from the model (an endpoint
	// whose models take no image input refuses a request with one); the
	// model reads the line naming each instead.
	NoImages bool
	// HTTPClient replaces the default client (tests, proxies, custom TLS).
	HTTPClient *http.Client
}

// ConfigFromEnv reads FENIX_OPENAI_BASE_URL, FENIX_OPENAI_API_KEY (falling
// back to OPENAI_API_KEY), FENIX_MODEL (unless it names a scripted model),
// FENIX_OPENAI_TIMEOUT (a Go duration such as "90s"),
// FENIX_OPENAI_MAX_TOKENS_FIELD and FENIX_OPENAI_IMAGES (on, off). getenv is os.Getenv outside tests.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{
		BaseURL:            strings.TrimSpace(getenv(EnvBaseURL)),
		APIKey:             strings.TrimSpace(getenv(EnvAPIKey)),
		MaxTokensFieldName: strings.TrimSpace(getenv(EnvMaxTokensField)),
	}
	if cfg.APIKey == "" {
		cfg.APIKey = strings.TrimSpace(getenv(EnvAPIKeyFallback))
	}
	if model := strings.TrimSpace(getenv(EnvModel)); !llm.IsScriptedModel(model) {
		cfg.DefaultModel = model
	}
	switch raw := strings.TrimSpace(getenv(EnvImages)); raw {
	case "", "on":
	case "off":
		cfg.NoImages = true
	default:
		return cfg, fmt.Errorf("%s=%q is not on or off: off keeps the images tools return from a model that takes no image input", EnvImages, raw)
	}
	if raw := strings.TrimSpace(getenv(EnvTimeout)); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("%s=%q is not a positive duration: use a value such as 90s or 2m", EnvTimeout, raw)
		}
		cfg.RequestTimeout = d
	}
	return cfg, nil
}

// Configured reports whether the config points at an endpoint Fenix can
// use: an API key is set, or a base URL other than OpenAI's (local
// servers usually need no key).
func (c Config) Configured() bool {
	return c.APIKey != "" || (c.BaseURL != "" && strings.TrimRight(c.BaseURL, "/") != DefaultBaseURL)
}

// LogValue describes the config without the API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", c.name()),
		slog.String("base_url", redactURL(c.baseURL())),
		slog.String("default_model", c.DefaultModel),
		slog.Duration("request_timeout", c.requestTimeout()),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Bool("images", !c.NoImages),
	)
}

// String describes the config without the API key, so printing it is safe.
func (c Config) String() string {
	return fmt.Sprintf("openai-compatible provider %s at %s (default model %q, timeout %s, api key set: %t)",
		c.name(), redactURL(c.baseURL()), c.DefaultModel, c.requestTimeout(), c.APIKey != "")
}

func (c Config) name() string {
	if c.Name != "" {
		return c.Name
	}
	return DefaultName
}

func (c Config) baseURL() string {
	if c.BaseURL != "" {
		return c.BaseURL
	}
	return DefaultBaseURL
}

func (c Config) requestTimeout() time.Duration {
	if c.RequestTimeout > 0 {
		return c.RequestTimeout
	}
	return DefaultRequestTimeout
}

func (c Config) maxTokensField(base *url.URL) (string, error) {
	switch c.MaxTokensFieldName {
	case MaxTokensField, MaxCompletionTokensField:
		return c.MaxTokensFieldName, nil
	case "":
		if base.Hostname() == "api.openai.com" {
			return MaxCompletionTokensField, nil
		}
		return MaxTokensField, nil
	default:
		return "", fmt.Errorf("max tokens field %q is not %q or %q (%s)", c.MaxTokensFieldName, MaxTokensField, MaxCompletionTokensField, EnvMaxTokensField)
	}
}

// redactURL drops credentials and the query from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}
