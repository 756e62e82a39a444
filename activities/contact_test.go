package activities

import (
	"context"
	"fmt"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

func TestContactLost(t *testing.T) {
	tests := []struct {
		name  string
		cause error
		want  bool
	}{
		{"requested cancellation", temporal.NewCanceledError(), false},
		{"worker shutdown", context.Canceled, false},
		{"deadline", context.DeadlineExceeded, false},
		{"paused by an operator", activity.ErrActivityPaused, false},
		{"no cause", nil, false},
		{"attempt timed out on the server", serviceerror.NewNotFound("invalid activityID or activity already timed out or invoking workflow is completed"), true},
		{"server unreachable", serviceerror.NewUnavailable("connection refused"), true},
		{"heartbeat RPC timed out", fmt.Errorf("heartbeat: %w", serviceerror.NewDeadlineExceeded("context deadline exceeded")), true},
	}
	for _, tt := range tests {
		if got := contactLost(tt.cause); got != tt.want {
			t.Errorf("%s: contactLost(%v) = %v, want %v", tt.name, tt.cause, got, tt.want)
		}
	}
}
