package fenixerr

// Codes of a failed model call (ModelProviderError, or TransientError once
// its retries ran out) more specific than "model_provider_error": what went
// wrong at the provider, for the kernel and for hooks (Claude Code's
// StopFailure matches on them).
const (
	// CodeContextLengthExceeded: the transcript does not fit the model's
	// context window. Retrying is useless; compacting first may help.
	CodeContextLengthExceeded = "context_length_exceeded"
	// CodeInsufficientQuota: the account is out of credit. OpenAI sends it
	// as HTTP 429, but waiting does not fix it, so it is not retryable.
	CodeInsufficientQuota = "insufficient_quota"
	// CodeRateLimited: a retryable 429.
	CodeRateLimited = "rate_limited"
	// CodeProviderUnavailable: another retryable failure (408, 5xx).
	CodeProviderUnavailable = "model_provider_unavailable"
	// CodeAuthenticationFailed: the provider refused the credentials
	// (401, 403).
	CodeAuthenticationFailed = "authentication_failed"
	// CodeInvalidRequest: the provider refused the request as it was
	// (another 4xx).
	CodeInvalidRequest = "invalid_request"
)
