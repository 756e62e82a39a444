package fenixerr

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"
)

func TestHierarchy(t *testing.T) {
	notVisible := ToolNotVisible("workspace_read", "researcher")
	tests := []struct {
		err    error
		target *Error
		want   bool
	}{
		{notVisible, ErrToolNotVisible, true},
		{notVisible, ErrUnsupportedTool, true},
		{UnsupportedTool("x"), ErrToolNotVisible, false},
		{WorkspaceEscape("p"), ErrValidation, true},
		{New(TypePermissionDenied, "no"), ErrToolBlocked, true},
		{fmt.Errorf("wrapped: %w", notVisible), ErrUnsupportedTool, true},
		{Runtime("x"), ErrValidation, false},
	}
	for _, tc := range tests {
		if got := errors.Is(tc.err, tc.target); got != tc.want {
			t.Errorf("errors.Is(%v, %s) = %t, want %t", tc.err, tc.target.Type, got, tc.want)
		}
	}
}

func TestClassification(t *testing.T) {
	tests := []struct {
		err       *Error
		wantClass Class
		wantCode  string
	}{
		{ToolNotVisible("t", "p"), ClassAuthorization, "tool_not_allowed"},
		{UnsupportedTool("t"), ClassSemantic, "unsupported_tool"},
		{Validation("bad"), ClassSemantic, "validation_error"},
		{WorkspaceEscape("p"), ClassAuthorization, "path_outside_workspace"},
		{Runtime("boom"), ClassRuntime, "runtime_error"},
		{New("NoSuchType", "x"), ClassRuntime, "runtime_error"},
	}
	for _, tc := range tests {
		if tc.err.Class != tc.wantClass || tc.err.Code != tc.wantCode {
			t.Errorf("%s: got %s/%s, want %s/%s", tc.err.Type, tc.err.Class, tc.err.Code, tc.wantClass, tc.wantCode)
		}
	}
}

func TestTemporalRoundTrip(t *testing.T) {
	orig := ToolNotVisible("workspace_read", "researcher").WithPolicyFingerprint("0123456789abcdef")
	converted := ToTemporal(orig)
	var appErr *temporal.ApplicationError
	if !errors.As(converted, &appErr) {
		t.Fatalf("ToTemporal returned %T", converted)
	}
	if !appErr.NonRetryable() || appErr.Type() != TypeToolNotVisible {
		t.Errorf("non-retryable %t type %q", appErr.NonRetryable(), appErr.Type())
	}
	back := FromTemporal(converted)
	if back.Type != TypeToolNotVisible || back.Class != ClassAuthorization || back.Code != "tool_not_allowed" || back.Tool != "workspace_read" ||
		back.PolicyFingerprint != "0123456789abcdef" {
		t.Errorf("round trip lost data: %+v", back)
	}

	if transient := ToTemporal(Transient(errors.New("db down"))); errors.As(transient, &appErr) && appErr.NonRetryable() {
		t.Error("transient errors must stay retryable")
	}
	if err := ToTemporal(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Error("cancellation must pass through so the SDK reports the activity canceled")
	}
	if got := FromTemporal(errors.New("plain")); got.Type != TypeRuntime {
		t.Errorf("unknown errors classify as runtime, got %s", got.Type)
	}
	if got := FromTemporal(temporal.NewTimeoutError(0, nil)); got.Type != TypeWorkerLost {
		t.Errorf("timeouts classify as worker_lost, got %s", got.Type)
	}
}

// Expected refusals reach Temporal as benign failures (the SDK logs them
// at debug, not error); runtime errors do not.
func TestExpectedRefusalsAreBenign(t *testing.T) {
	for _, tc := range []struct {
		err    *Error
		benign bool
	}{
		{WorkspaceEscape("path %q is protected", ".claude/x").WithCode("protected_path"), true},
		{New(TypeToolBlocked, "blocked by hook"), true},
		{New(TypePermissionDenied, "denied"), true},
		{Runtime("disk full"), false},
	} {
		var appErr *temporal.ApplicationError
		if !errors.As(ToTemporal(tc.err), &appErr) {
			t.Fatalf("%v: not an ApplicationError", tc.err)
		}
		if benign := appErr.Category() == temporal.ApplicationErrorCategoryBenign; benign != tc.benign || appErr.Type() != tc.err.Type || !appErr.NonRetryable() {
			t.Errorf("%s: category benign=%v type=%s non-retryable=%v", tc.err.Type, benign, appErr.Type(), appErr.NonRetryable())
		}
		var d Details
		if err := appErr.Details(&d); err != nil || d.Class != tc.err.Class || d.Code != tc.err.Code {
			t.Errorf("%s: details %+v, %v", tc.err.Type, d, err)
		}
	}
}
