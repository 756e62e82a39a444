package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/history/rewind"
)

// A rewind plan names calls the model chose; an escape sequence or a line
// break in a call ID must reach the operator's terminal escaped.
func TestRewindPlanShowsHostileCallIDsEscaped(t *testing.T) {
	var out bytes.Buffer
	hostile := "call\x1b]0;pwned\x07\nReset point: WorkflowTaskCompleted event 1"
	printPlan(&cli{stdout: &out}, rewind.Plan{
		WorkflowID: "wf", RunID: "run", ActivityType: "ExecuteTool", CallID: hostile, StageEventID: 9, ResetEventID: 8,
		Reruns:             []rewind.Rerun{{Kind: "tool", Name: "exec_command", CallID: hostile, EventID: 12}},
		AwaitingPermission: []string{hostile},
	})
	text := out.String()
	if strings.ContainsAny(text, "\x1b\x07") || strings.Count(text, "\nReset point") != 1 {
		t.Fatalf("control characters reached the terminal:\n%q", text)
	}
	if !strings.Contains(text, `call\u001b]0;pwned\u0007\u000aReset point`) {
		t.Fatalf("the call ID is not shown escaped:\n%s", text)
	}
	msg := (&rewind.RerunError{Plan: rewind.Plan{Reruns: []rewind.Rerun{{Kind: "tool", Name: "t", CallID: hostile}}}}).Error()
	if strings.ContainsAny(msg, "\x1b\x07") {
		t.Fatalf("the refusal carries control characters: %q", msg)
	}
}
