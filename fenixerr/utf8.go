package fenixerr

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
)

// ValidUTF8 returns err with every message of its chain valid UTF-8, or
// err itself when they already are.
//
// An activity's error becomes a Temporal Failure whose message (and each
// cause's) is a protobuf string, which must be valid UTF-8: one that is
// not cannot be marshalled, so the worker can report neither the activity
// nor, for a local activity, the workflow task that recorded it. The
// workflow task then times out and is retried forever, and the run never
// ends. Error text often quotes bytes from outside (a server's stderr, an
// HTTP body, a file name), so every error leaving an activity goes through
// here; each run of invalid bytes becomes one U+FFFD.
func ValidUTF8(err error) error {
	if err == nil || chainValid(err) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return errors.New(validText(err.Error()))
	}
	opts := temporal.ApplicationErrorOptions{
		NonRetryable:   appErr.NonRetryable(),
		Cause:          flatCause(appErr.Unwrap()),
		NextRetryDelay: appErr.NextRetryDelay(),
		Category:       appErr.Category(),
	}
	var d Details
	if appErr.HasDetails() && appErr.Details(&d) == nil {
		opts.Details = []any{d}
	}
	return temporal.NewApplicationErrorWithOptions(validText(appErr.Message()), appErr.Type(), opts)
}

func chainValid(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if !utf8.ValidString(e.Error()) {
			return false
		}
	}
	return true
}

// flatCause keeps a valid cause chain as it is and replaces an invalid one
// by its text, made valid.
func flatCause(err error) error {
	if err == nil || chainValid(err) {
		return err
	}
	return errors.New(validText(err.Error()))
}

func validText(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
