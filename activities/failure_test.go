package activities

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

func TestBuildFailure(t *testing.T) {
	inv := &contract.ToolInvocation{CallID: "c1", ToolName: "calculator", Status: "running"}
	tests := []struct {
		name     string
		in       HandleErrorInput
		wantKind string
		wantInv  int
	}{
		{"runtime error with a tool", HandleErrorInput{Error: ErrorInfoOf("execute_tool", fenixerr.Runtime("boom")), LogicalWorkID: "w", AttemptNo: 2, ToolInvocation: inv},
			contract.FailureRuntimeError, 1},
		{"cancellation", HandleErrorInput{Error: ErrorInfoOf("execute_tool", fenixerr.New(fenixerr.TypeCanceled, "stop")), LogicalWorkID: "w", AttemptNo: 1},
			contract.FailureCanceled, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := BuildFailure(tc.in)
			if f.FailureKind != tc.wantKind || f.Retryable || f.LogicalWorkID != "w" || f.AttemptNo != tc.in.AttemptNo {
				t.Errorf("payload: %+v", f)
			}
			if len(f.ToolInvocations) != tc.wantInv {
				t.Fatalf("tool invocations: %+v", f.ToolInvocations)
			}
			if tc.wantInv == 1 && (f.ToolInvocations[0].Status != "failed" || inv.Status != "running") {
				t.Errorf("the failed invocation is marked failed without touching the caller's copy: %+v / %+v", f.ToolInvocations[0], inv)
			}
			if e := FailureTrace(f); e.Hook != StageHandleError || e.Get("error") != f.LastErrorSummary {
				t.Errorf("trace: %+v", e)
			}
		})
	}
}

func TestPreviewCutsOnRuneBoundary(t *testing.T) {
	s := ""
	for len(s) < 4*tracePreviewBytes {
		s += "é"
	}
	p := preview(s)
	if len(p) >= len(s) || !utf8.ValidString(p) || !strings.HasSuffix(p, fmt.Sprintf("… [%d bytes]", len(s))) {
		t.Errorf("preview of %d bytes is not a valid shortened string: %q", len(s), p)
	}
}
