package fenixerr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/fenixrt/fenix/fenixerr"
)

// reportable is whether the SDK can send err as an activity failure: the
// Failure's messages are protobuf strings, which must be valid UTF-8.
func reportable(t *testing.T, err error) error {
	t.Helper()
	f := temporal.GetDefaultFailureConverter().ErrorToFailure(err)
	_, merr := proto.Marshal(f)
	return merr
}

// Error text quoting outside bytes (an MCP server's stderr, a provider's
// plain-text error body) used to reach the failure as it was; with one
// invalid UTF-8 byte the worker could not report the stage and the run's
// workflow task timed out forever.
func TestActivityErrorsAreValidUTF8(t *testing.T) {
	cause := fmt.Errorf("initialize: EOF; stderr: bad\xff\xfe")
	err := fenixerr.ToTemporal(fenixerr.New(fenixerr.TypeToolUnavailable, "MCP server %q is not connected: %v", "broken", cause).WithTool("mcp__broken__t").WithCause(cause))
	require.NoError(t, reportable(t, err))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	assert.Equal(t, fenixerr.TypeToolUnavailable, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), "stderr: bad\uFFFD")
	var d fenixerr.Details
	require.NoError(t, appErr.Details(&d))
	assert.Equal(t, "mcp__broken__t", d.Tool)
	assert.Equal(t, fenixerr.ClassRuntime, d.Class)

	// An application error made elsewhere keeps its type, retry
	// behaviour and delay.
	other := temporal.NewApplicationErrorWithOptions("503: \xc3(", fenixerr.TypeTransient, temporal.ApplicationErrorOptions{
		Cause: errors.New("body \x80"), NextRetryDelay: 3e9})
	require.Error(t, reportable(t, other), "the SDK does not clean the text itself")
	fixed := fenixerr.ValidUTF8(other)
	require.NoError(t, reportable(t, fixed))
	require.True(t, errors.As(fixed, &appErr))
	assert.Equal(t, fenixerr.TypeTransient, appErr.Type())
	assert.False(t, appErr.NonRetryable())
	assert.EqualValues(t, 3e9, appErr.NextRetryDelay())

	// Valid errors, cancellation and plain errors.
	valid := fenixerr.ToTemporal(fenixerr.New(fenixerr.TypeValidation, "fine"))
	assert.Same(t, valid, fenixerr.ValidUTF8(valid))
	assert.ErrorIs(t, fenixerr.ValidUTF8(fmt.Errorf("stopped \xff: %w", context.Canceled)), context.Canceled)
	require.NoError(t, reportable(t, fenixerr.ValidUTF8(fmt.Errorf("plain \xff: %w", errors.New("inner \xfe")))))
	assert.Nil(t, fenixerr.ValidUTF8(nil))
}
