package runhistory

import (
	"path/filepath"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// corpus is the replay-test corpus: histories recorded by every version of
// the workflows, regular and local-activity stages alike.
const corpus = "../../workflows/testdata"

func parseFile(t *testing.T, name string) *Run {
	t.Helper()
	events, err := ReadJSONFile(filepath.Join(corpus, name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse("wf-"+name, "", events, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Request(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

type stageWant struct {
	typ    string
	callID string
	step   int
	local  bool
	wft    int64
}

func stagesAbout(r *Run) []stageWant {
	var out []stageWant
	for _, s := range r.Stages {
		if s.CallID != "" || s.Type == TypePrepareTurn || s.Type == TypeCallModel {
			out = append(out, stageWant{s.Type, s.CallID, s.Step, s.Local, s.WorkflowTaskCompletedEventID})
		}
	}
	return out
}

func TestStagesOfBothShapes(t *testing.T) {
	tests := []struct {
		file string
		want []stageWant
	}{
		{"governed_permission_allowed.json", []stageWant{
			{TypePrepareTurn, "", 0, false, 12},
			{TypeReviewToolCall, "ask-1", 0, false, 24},
			{TypePreToolUse, "ask-1", 0, false, 30},
			{TypePermissionRequest, "ask-1", 0, false, 36},
			{TypeExecuteTool, "ask-1", 0, false, 46},
			{TypePostToolUse, "ask-1", 0, false, 60},
		}},
		// Review as a local activity: its marker shares the workflow task
		// that schedules PreToolUse.
		{"local_pure_stages_calculator.json", []stageWant{
			{TypePrepareTurn, "", 0, false, 18},
			{TypeReviewToolCall, "call-1", 0, true, 30},
			{TypePreToolUse, "call-1", 0, false, 30},
			{TypeExecuteTool, "call-1", 0, false, 38},
			{TypePostToolUse, "call-1", 0, false, 44},
		}},
		{"local_pure_stages_agent_turn.json", []stageWant{
			{TypePrepareTurn, "", 1, false, 18},
			{TypeCallModel, "", 1, false, 30},
			{TypeReviewToolCall, "call-0-0", 1, true, 36},
			{TypePreToolUse, "call-0-0", 1, false, 36},
			{TypeReviewToolCall, "call-0-1", 1, true, 36},
			{TypePreToolUse, "call-0-1", 1, false, 36},
			{TypeExecuteTool, "call-0-0", 1, false, 47},
			{TypeExecuteTool, "call-0-1", 1, false, 47},
			{TypePostToolUse, "call-0-1", 1, false, 56},
			{TypePostToolUse, "call-0-0", 1, false, 56},
			{TypePrepareTurn, "", 2, false, 74},
			{TypeCallModel, "", 2, false, 86},
		}},
		// The fast path: every repeatable stage is a local activity, so one
		// workflow task runs the whole pipeline of a calculator call…
		{"fast_path_calculator.json", []stageWant{
			{TypePrepareTurn, "", 0, true, 4},
			{TypeReviewToolCall, "call-1", 0, true, 4},
			{TypePreToolUse, "call-1", 0, true, 4},
			{TypeExecuteTool, "call-1", 0, true, 4},
			{TypePostToolUse, "call-1", 0, true, 4},
		}},
		// …while exec_command stays a regular activity.
		{"fast_path_exec_command.json", []stageWant{
			{TypePrepareTurn, "", 0, true, 4},
			{TypeReviewToolCall, "exec-1", 0, true, 4},
			{TypePreToolUse, "exec-1", 0, true, 4},
			{TypeExecuteTool, "exec-1", 0, false, 4},
			{TypePostToolUse, "exec-1", 0, true, 19},
		}},
		// Parallel reviews are recorded as they finish, not in call order.
		{"fast_path_agent_turn_parallel.json", []stageWant{
			{TypePrepareTurn, "", 1, true, 4},
			{TypeCallModel, "", 1, false, 4},
			{TypeReviewToolCall, "call-0-1", 1, true, 17},
			{TypeReviewToolCall, "call-0-0", 1, true, 17},
			{TypePreToolUse, "call-0-0", 1, true, 17},
			{TypePreToolUse, "call-0-1", 1, true, 17},
			{TypeExecuteTool, "call-0-1", 1, true, 17},
			{TypeExecuteTool, "call-0-0", 1, true, 17},
			{TypePostToolUse, "call-0-1", 1, true, 17},
			{TypePostToolUse, "call-0-0", 1, true, 17},
			{TypePrepareTurn, "", 2, true, 17},
			{TypeCallModel, "", 2, false, 17},
		}},
		// A continued run numbers its steps after the continuation's.
		{"agent_turn_continue_as_new_last_run.json", []stageWant{
			{TypePrepareTurn, "", 5, false, 12},
			{TypeCallModel, "", 5, false, 24},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got := stagesAbout(parseFile(t, tc.file))
			if len(got) != len(tc.want) {
				t.Fatalf("stages:\n got %v\nwant %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("stage %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// A review that failed as a local activity records neither input nor
// result; the call comes from the assignment.
func TestFailedLocalReviewIsMatchedToItsCall(t *testing.T) {
	r := parseFile(t, "local_pure_stages_not_visible.json")
	reviews := r.StagesOf(TypeReviewToolCall)
	if len(reviews) != 1 {
		t.Fatalf("reviews: %d", len(reviews))
	}
	rev := reviews[0]
	if !rev.Local || rev.Outcome != OutcomeFailed || rev.CallID != "c" {
		t.Fatalf("review = %+v, want a failed local review of call c", rev)
	}
	if ok, _ := rev.DecodeInput(&struct{}{}); ok {
		t.Error("a local activity has no recorded input")
	}
	if fe := rev.Failure(); fe == nil || fe.Type != fenixerr.TypeToolNotVisible {
		t.Errorf("failure = %v, want %s", fe, fenixerr.TypeToolNotVisible)
	}
}

func TestRequestedCallsChildrenAndUpdates(t *testing.T) {
	turn := parseFile(t, "agent_turn_parallel.json")
	calls := turn.RequestedCalls()
	if len(calls) != 2 || calls[0].Call.CallID != "call-0-0" || calls[1].Call.CallID != "call-0-1" || calls[0].Step != 1 {
		t.Errorf("requested calls = %+v", calls)
	}

	sub := parseFile(t, "agent_turn_subagent.json")
	if len(sub.Children) != 1 || !sub.Children[0].Started || sub.Children[0].WorkflowType != "AgentTurn" {
		t.Errorf("children = %+v, want one started AgentTurn", sub.Children)
	}

	perm := parseFile(t, "governed_permission_allowed.json")
	if len(perm.Updates) != 1 || perm.Updates[0].Name != "decide_permission" {
		t.Fatalf("updates = %+v", perm.Updates)
	}
	var d struct {
		CallID   string `json:"call_id"`
		Decision string `json:"decision"`
	}
	if err := perm.Updates[0].Decode(&d); err != nil || d.CallID != "ask-1" || d.Decision != "allow" {
		t.Errorf("decide_permission = %+v, %v", d, err)
	}
	var res contract.Result
	if ok, err := perm.DecodeResult(&res); !perm.Closed || !ok || err != nil || res.Status != "completed" {
		t.Errorf("closed %t, result %+v (%t, %v)", perm.Closed, res, ok, err)
	}
}

func TestEveryCorpusHistoryParses(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v, %d files", err, len(files))
	}
	for _, f := range files {
		r := parseFile(t, filepath.Base(f))
		for _, s := range r.Stages {
			if callStages[s.Type] && s.CallID == "" {
				t.Errorf("%s: %s stage at event %d has no call ID", filepath.Base(f), s.Type, s.EventID)
			}
			if s.WorkflowTaskCompletedEventID <= 0 || s.WorkflowTaskCompletedEventID >= s.EventID {
				t.Errorf("%s: %s stage at event %d has workflow task %d", filepath.Base(f), s.Type, s.EventID, s.WorkflowTaskCompletedEventID)
			}
		}
	}
}

// Parallel reviews record their markers as they finish: two failed local
// reviews are matched to their calls by the tool their failure names.
func TestFailedParallelReviewsMatchByTool(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	payload := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	failedReview := func(id int64, err *fenixerr.Error) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
			Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
				MarkerName: "LocalActivity", WorkflowTaskCompletedEventId: 8,
				Details: map[string]*commonpb.Payloads{"data": payload(map[string]any{"ActivityID": "1", "ActivityType": TypeReviewToolCall})},
				Failure: temporal.GetDefaultFailureConverter().ErrorToFailure(fenixerr.ToTemporal(err)),
			}}}
	}
	answer := contract.Message{Role: "assistant", ToolCalls: []contract.ToolCall{
		{CallID: "a", ToolName: "calculator", Arguments: map[string]any{"expression": "1 +"}},
		{CallID: "b", ToolName: "workspace_read", Arguments: map[string]any{"path": "x"}},
	}}
	events := []*historypb.HistoryEvent{
		{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
			WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				WorkflowType: &commonpb.WorkflowType{Name: "AgentTurn"}, Input: payload(map[string]any{"logical_work_id": "w"})}}},
		{EventId: 5, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
			ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{ActivityType: &commonpb.ActivityType{Name: TypePrepareTurn}, WorkflowTaskCompletedEventId: 4}}},
		{EventId: 6, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
			ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{ActivityType: &commonpb.ActivityType{Name: TypeCallModel}, WorkflowTaskCompletedEventId: 4}}},
		{EventId: 7, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: 6, Result: payload(map[string]any{"message": answer})}}},
		failedReview(9, fenixerr.ToolNotVisible("workspace_read", "main")),
		failedReview(10, fenixerr.Validation("arguments of tool %q are invalid", "calculator").WithTool("calculator")),
	}
	r, err := Parse("wf", "run", events, dc)
	if err != nil {
		t.Fatal(err)
	}
	reviews := r.StagesOf(TypeReviewToolCall)
	if len(reviews) != 2 || reviews[0].CallID != "b" || reviews[1].CallID != "a" || reviews[0].Step != 1 {
		t.Fatalf("reviews matched to %q and %q (step %d), want b (workspace_read) then a (calculator) in step 1",
			reviews[0].CallID, reviews[1].CallID, reviews[0].Step)
	}
}
