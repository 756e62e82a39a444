package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/fenixrt/fenix/fenixerr"
)

// Error codes set on ModelProviderError beyond fenixerr's default
// "model_provider_error" (see fenixerr's model codes).
const (
	CodeContextLengthExceeded = fenixerr.CodeContextLengthExceeded
	CodeInsufficientQuota     = fenixerr.CodeInsufficientQuota
	CodeRateLimited           = fenixerr.CodeRateLimited
	CodeProviderUnavailable   = fenixerr.CodeProviderUnavailable
	CodeAuthenticationFailed  = fenixerr.CodeAuthenticationFailed
	CodeInvalidRequest        = fenixerr.CodeInvalidRequest
)

// RetryableError is a failed attempt that a later attempt may fix: the
// provider was rate limited, overloaded, unreachable or too slow.
type RetryableError struct {
	Provider string
	Model    string
	// StatusCode is the HTTP status, 0 when no response arrived.
	StatusCode int
	// RetryAfter is the provider's requested delay (Retry-After), 0 when
	// it gave none.
	RetryAfter time.Duration
	Cause      error
	message    string
}

// NewRetryableError builds a RetryableError; message says what failed.
func NewRetryableError(provider, model string, statusCode int, retryAfter time.Duration, cause error, message string) *RetryableError {
	if retryAfter > 0 {
		message += fmt.Sprintf(" (provider asked to retry after %s)", retryAfter)
	}
	return &RetryableError{Provider: provider, Model: model, StatusCode: statusCode, RetryAfter: retryAfter, Cause: cause, message: message}
}

func (e *RetryableError) Error() string { return e.message }

// Unwrap exposes the failure as a fenixerr Transient error (so
// fenixerr.ToTemporal keeps it retryable and errors.Is(err,
// fenixerr.ErrTransient) holds), which in turn wraps Cause.
func (e *RetryableError) Unwrap() error {
	return fenixerr.New(fenixerr.TypeTransient, "%s", e.message).WithCause(e.Cause)
}

// IsRetryable reports whether another attempt may succeed, and the delay
// the provider asked for (0: use the retry policy's backoff).
func IsRetryable(err error) (bool, time.Duration) {
	var re *RetryableError
	if errors.As(err, &re) {
		return true, re.RetryAfter
	}
	if errors.Is(err, fenixerr.ErrTransient) {
		return true, 0
	}
	return false, 0
}

// IsContextLengthExceeded reports whether the model rejected the request
// because the transcript is too long for its context window.
func IsContextLengthExceeded(err error) bool {
	var fe *fenixerr.Error
	return errors.As(err, &fe) && fe.Code == CodeContextLengthExceeded
}

// ToTemporal converts a model-call error for the activity boundary: a
// RetryableError becomes a retryable TransientError whose NextRetryDelay
// honours the provider's Retry-After; everything else goes through
// fenixerr.ToTemporal (non-retryable, or passed through when canceled).
func ToTemporal(err error) error {
	var re *RetryableError
	if !errors.As(err, &re) {
		return fenixerr.ToTemporal(err)
	}
	code := CodeProviderUnavailable
	if re.StatusCode == http.StatusTooManyRequests {
		code = CodeRateLimited
	}
	return fenixerr.ValidUTF8(temporal.NewApplicationErrorWithOptions(err.Error(), fenixerr.TypeTransient, temporal.ApplicationErrorOptions{
		Cause:          re.Cause,
		NextRetryDelay: re.RetryAfter,
		Details:        []any{fenixerr.Details{Class: fenixerr.ClassRuntime, Code: code}},
	}))
}

// HTTPFailure is a provider's error response, described in the terms every
// provider shares, so the scripted provider's simulated failures and real
// HTTP failures are classified by one rule.
type HTTPFailure struct {
	Provider string
	Model    string
	// Endpoint is where the request went, without credentials; optional.
	Endpoint   string
	StatusCode int
	// Message and Code are the API's error message and code, if any.
	Message    string
	Code       string
	RetryAfter time.Duration
	// Hint tells the operator what to check; optional.
	Hint  string
	Cause error
}

// Err classifies the failure: 408, 429 (except an exhausted quota) and 5xx
// are retryable; every other status is a non-retryable ModelProviderError.
func (f HTTPFailure) Err() error {
	msg := f.describe()
	if f.retryable() {
		return NewRetryableError(f.Provider, f.Model, f.StatusCode, f.RetryAfter, f.Cause, msg)
	}
	if f.Hint != "" {
		msg += "; " + f.Hint
	}
	err := fenixerr.New(fenixerr.TypeModelProvider, "%s", msg).WithCause(f.Cause)
	switch {
	case f.contextLengthExceeded():
		err.WithCode(CodeContextLengthExceeded)
	case f.quotaExhausted():
		err.WithCode(CodeInsufficientQuota)
	case f.StatusCode == http.StatusUnauthorized || f.StatusCode == http.StatusForbidden:
		err.WithCode(CodeAuthenticationFailed)
	case f.StatusCode >= 400 && f.StatusCode < 500:
		err.WithCode(CodeInvalidRequest)
	}
	return err
}

func (f HTTPFailure) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model provider %s", f.Provider)
	if f.Endpoint != "" {
		fmt.Fprintf(&b, " (%s)", f.Endpoint)
	}
	fmt.Fprintf(&b, " answered HTTP %d", f.StatusCode)
	if text := http.StatusText(f.StatusCode); text != "" {
		b.WriteString(" " + text)
	}
	fmt.Fprintf(&b, " for model %q", f.Model)
	if f.Message != "" {
		b.WriteString(": " + f.Message)
	}
	return b.String()
}

func (f HTTPFailure) retryable() bool {
	switch {
	case f.StatusCode == http.StatusTooManyRequests:
		return !f.quotaExhausted()
	case f.StatusCode == http.StatusRequestTimeout:
		return true
	default:
		return f.StatusCode >= 500
	}
}

func (f HTTPFailure) quotaExhausted() bool {
	return f.Code == CodeInsufficientQuota
}

// contextLengthExceeded recognizes the wordings of OpenAI
// ("context_length_exceeded"), vLLM ("maximum context length") and
// llama.cpp ("exceed_context_size_error", "exceeds the available context
// size").
func (f HTTPFailure) contextLengthExceeded() bool {
	if f.StatusCode < 400 || f.StatusCode >= 500 {
		return false
	}
	code := strings.ToLower(f.Code)
	if strings.Contains(code, "context_length") || strings.Contains(code, "context_size") {
		return true
	}
	msg := strings.ToLower(f.Message)
	return strings.Contains(msg, "context length") || strings.Contains(msg, "context size") || strings.Contains(msg, "context window")
}

// ParseRetryAfter reads the delay a provider asked for: OpenAI's
// retry-after-ms, else Retry-After as seconds or as an HTTP date (relative
// to now). It returns 0 when there is none or it cannot be read.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return 0
}

type attemptKey struct{}

// WithAttempt records the activity attempt (1-based, from
// activity.GetInfo(ctx).Attempt) for providers whose behaviour depends on
// it: the scripted provider's simulated failures stop after a given number
// of attempts, which keeps a stateless provider from failing forever.
func WithAttempt(ctx context.Context, attempt int) context.Context {
	return context.WithValue(ctx, attemptKey{}, attempt)
}

// Attempt returns the attempt recorded by WithAttempt, or 1.
func Attempt(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok && n > 0 {
		return n
	}
	return 1
}
