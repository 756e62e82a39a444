package policydiff

import (
	"path/filepath"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/history/runhistory"
)

// A review that failed as a rejection is a block; one that failed for
// another reason (here: no host queue) decided nothing.
func TestOnlyRejectionsAreReviewVerdicts(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	history := func(reviewErr *fenixerr.Error) []*historypb.HistoryEvent {
		input, _ := dc.ToPayloads(map[string]any{"logical_work_id": "w", "agent_context": map[string]any{"profile": "main"},
			"tool_call": map[string]any{"call_id": "c1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "ls"}}})
		data, _ := dc.ToPayloads(map[string]any{"ActivityID": "1", "ActivityType": runhistory.TypeReviewToolCall})
		return []*historypb.HistoryEvent{
			{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
				WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
					WorkflowType: &commonpb.WorkflowType{Name: "ExecuteAssignment"}, Input: input}}},
			{EventId: 5, EventType: enumspb.EVENT_TYPE_MARKER_RECORDED, Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{
				MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{MarkerName: "LocalActivity", WorkflowTaskCompletedEventId: 4,
					Details: map[string]*commonpb.Payloads{"data": data},
					Failure: temporal.GetDefaultFailureConverter().ErrorToFailure(fenixerr.ToTemporal(reviewErr))}}},
		}
	}
	for _, tc := range []struct {
		err  *fenixerr.Error
		want Outcome
	}{
		{fenixerr.ToolNotVisible("exec_command", "main"), OutcomeBlock},
		{fenixerr.Validation("arguments of tool %q do not match its schema", "exec_command").WithTool("exec_command"), OutcomeBlock},
		{fenixerr.New(fenixerr.TypeToolUnavailable, "no host queue").WithTool("exec_command"), OutcomeUndecided},
	} {
		run, err := runhistory.Parse("wf", "run", history(tc.err), dc)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := Extract(run)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || calls[0].Recorded.Outcome != tc.want || calls[0].ToolCall.CallID != "c1" {
			t.Errorf("review failed with %s: calls %+v, want one call c1 recorded %s", tc.err.Type, calls, tc.want)
		}
	}
}

// A lean review (fenix-shape 5) does not repeat the call: Extract takes it
// from the run's request, and a review that left PreToolUse out (no hook
// or rule for the tool) recorded an allow.
func TestLeanReviewsAreAllowsWithTheRequestedCall(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Outcome
		tool string
	}{
		{"lean_calculator.json", OutcomeAllow, "calculator"},
		{"lean_exec_command.json", OutcomeAllow, "exec_command"},
		{"lean_policy_blocked.json", OutcomeBlock, ""},
	} {
		events, err := runhistory.ReadJSONFile(filepath.Join(corpus, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		run, err := runhistory.Parse(tc.file, "run", events, nil)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := Extract(run)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || calls[0].Recorded.Outcome != tc.want || calls[0].ToolCall.Arguments == nil ||
			(tc.tool != "" && calls[0].ToolCall.ToolName != tc.tool) {
			t.Errorf("%s: calls %+v, want one %s call with its arguments recorded %s", tc.file, calls, tc.tool, tc.want)
		}
	}
}
