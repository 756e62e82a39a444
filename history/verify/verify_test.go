package verify

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/history/runhistory"
)

// corpus is the replay-test corpus: histories recorded by every version of
// the workflows, regular and local-activity stages alike.
const corpus = "../../workflows/testdata"

func readEvents(t *testing.T, path string) []*historypb.HistoryEvent {
	t.Helper()
	events, err := runhistory.ReadJSONFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func check(t *testing.T, name string, events []*historypb.HistoryEvent) Report {
	t.Helper()
	run, err := runhistory.Parse("wf-"+name, "run-1", events, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(run)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rep
}

// TestCorpusRunsNoToolWithoutAnAllow: every recorded history of every
// workflow version passes, and the check has something to check.
func TestCorpusRunsNoToolWithoutAnAllow(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus, "*.json"))
	if err != nil || len(files) < 40 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	executions, ungoverned := 0, 0
	for _, f := range files {
		rep := check(t, filepath.Base(f), readEvents(t, f))
		for _, v := range rep.Violations {
			t.Errorf("%s: %s", filepath.Base(f), v)
		}
		executions += rep.Executions
		if rep.Ungoverned && rep.Executions > 0 {
			ungoverned++
		}
	}
	t.Logf("%d histories, %d executions checked (%d of the runs with executions predate lifecycle hooks)", len(files), executions, ungoverned)
	if executions < 30 {
		t.Fatalf("only %d executions checked in %d histories: the check is not finding ExecuteTool stages", executions, len(files))
	}
}

// TestExecutionsAreFoundInEveryShape pins what is counted, so a parser
// that stopped seeing a shape would fail here rather than pass vacuously.
func TestExecutionsAreFoundInEveryShape(t *testing.T) {
	for _, tc := range []struct {
		file       string
		executions int
		ungoverned bool
	}{
		{"fast_path_calculator.json", 1, false},          // local ExecuteTool
		{"governed_calculator.json", 1, false},           // regular, with updatedInput
		{"fast_path_exec_command.json", 1, false},        // local stages, regular tool
		{"fast_path_permission_allowed.json", 1, false},  // decide_permission
		{"claude_hooks_deferred.json", 1, false},         // defer, then decide_permission
		{"fast_path_agent_turn_subagent.json", 1, false}, // a child AgentTurn
		{"agent_turn_subagent.json", 1, false},
		{"execute_assignment_calculator.json", 1, true}, // before lifecycle hooks
		{"fast_path_blocked.json", 0, false},
		{"lean_calculator.json", 1, false},   // fenix-shape 5: no PreToolUse hook, stage left out
		{"lean_exec_command.json", 1, false}, // the same, regular tool: arguments not recorded by the review
		{"lean_agent_turn_tool.json", 1, false},
	} {
		rep := check(t, tc.file, readEvents(t, filepath.Join(corpus, tc.file)))
		if rep.Executions != tc.executions || rep.Ungoverned != tc.ungoverned || len(rep.Violations) != 0 {
			t.Errorf("%s: %+v, want %d executions, ungoverned %v, no violations", tc.file, rep, tc.executions, tc.ungoverned)
		}
	}
}

// TestMalformedInputIsNotAnError: a run whose input is not an assignment
// fails before any stage; the check reads it without an error.
func TestMalformedInputIsNotAnError(t *testing.T) {
	events := readEvents(t, filepath.Join(corpus, "execute_assignment_invalid.json"))
	rep := check(t, "invalid", events)
	if rep.Executions != 0 || len(rep.Violations) != 0 {
		t.Fatalf("%+v", rep)
	}
	dc := converter.GetDefaultDataConverter()
	events = readEvents(t, filepath.Join(corpus, "fast_path_calculator.json"))
	p, err := dc.ToPayloads(map[string]any{"attempt_no": "one"})
	if err != nil {
		t.Fatal(err)
	}
	events[0].GetWorkflowExecutionStartedEventAttributes().Input = p
	if rep := check(t, "bad-input", events); rep.Executions != 1 || len(rep.Violations) != 0 {
		t.Fatalf("%+v", rep)
	}
}

// TestHandEditedHistoryIsReported: testdata/execute_after_block.json is
// fast_path_calculator.json with its PreToolUse verdict edited into a
// block; the ExecuteTool after it must be named.
func TestHandEditedHistoryIsReported(t *testing.T) {
	rep := check(t, "execute_after_block", readEvents(t, filepath.Join("testdata", "execute_after_block.json")))
	if len(rep.Violations) != 1 {
		t.Fatalf("violations = %v, want 1", rep.Violations)
	}
	v := rep.Violations[0]
	if v.EventID != 13 || v.CallID != "call-1" || v.Tool != "calculator" || !strings.Contains(v.Problem, "blocked") {
		t.Fatalf("violation = %+v", v)
	}
	for _, want := range []string{"wf-execute_after_block", "run-1", "event 13", "call-1", "calculator", "PreToolUse (event 12) blocked it"} {
		if !strings.Contains(v.String(), want) {
			t.Errorf("%q does not name %q", v.String(), want)
		}
	}
}

// edit is a change to a recorded history.
type edit func(t *testing.T, events []*historypb.HistoryEvent) []*historypb.HistoryEvent

// without drops the events of one stage (a marker, or a scheduled activity
// with its started and closing events).
func without(activityType string) edit {
	return func(t *testing.T, events []*historypb.HistoryEvent) []*historypb.HistoryEvent {
		var drop []int64
		for _, e := range events {
			if stageType(t, e) == activityType {
				drop = append(drop, e.GetEventId())
			}
		}
		if len(drop) == 0 {
			t.Fatalf("no %s stage to drop", activityType)
		}
		return slices.DeleteFunc(events, func(e *historypb.HistoryEvent) bool {
			return slices.Contains(drop, e.GetEventId()) || slices.Contains(drop, scheduledID(e))
		})
	}
}

func withoutUpdates(t *testing.T, events []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	return slices.DeleteFunc(events, func(e *historypb.HistoryEvent) bool {
		return e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
	})
}

// executedArgs rewrites the arguments a regular ExecuteTool ran with.
func executedArgs(args map[string]any) edit {
	return func(t *testing.T, events []*historypb.HistoryEvent) []*historypb.HistoryEvent {
		dc := converter.GetDefaultDataConverter()
		for _, e := range events {
			if a := e.GetActivityTaskScheduledEventAttributes(); a.GetActivityType().GetName() == runhistory.TypeExecuteTool {
				var in activities.ExecuteToolInput
				if err := dc.FromPayloads(a.GetInput(), &in); err != nil {
					t.Fatal(err)
				}
				in.ToolCall.Arguments = args
				p, err := dc.ToPayloads(in)
				if err != nil {
					t.Fatal(err)
				}
				a.Input = p
			}
		}
		return events
	}
}

// executedTwice repeats the ExecuteTool marker after itself.
func executedTwice(t *testing.T, events []*historypb.HistoryEvent) []*historypb.HistoryEvent {
	for i, e := range events {
		if stageType(t, e) == runhistory.TypeExecuteTool && e.GetMarkerRecordedEventAttributes() != nil {
			dup := proto.Clone(e).(*historypb.HistoryEvent)
			dup.EventId = e.GetEventId() + 1000
			return slices.Insert(events, i+1, dup)
		}
	}
	t.Fatal("no ExecuteTool marker")
	return nil
}

func stageType(t *testing.T, e *historypb.HistoryEvent) string {
	if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
		return a.GetActivityType().GetName()
	}
	if a := e.GetMarkerRecordedEventAttributes(); a != nil && a.GetMarkerName() == "LocalActivity" {
		var data struct{ ActivityType string }
		if err := converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["data"], &data); err != nil {
			t.Fatal(err)
		}
		return data.ActivityType
	}
	return ""
}

func scheduledID(e *historypb.HistoryEvent) int64 {
	switch {
	case e.GetActivityTaskStartedEventAttributes() != nil:
		return e.GetActivityTaskStartedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskCompletedEventAttributes() != nil:
		return e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
	}
	return 0
}

// TestEditedHistoriesAreReported: each way an allow can be missing is
// found, in local and regular stages, naming the event and the call.
func TestEditedHistoriesAreReported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		edit    edit
		event   int64
		call    string
		problem string
	}{
		{"no review, local", "fast_path_calculator.json", without(runhistory.TypeReviewToolCall), 13, "call-1", "ran without a review"},
		{"no PreToolUse, local", "fast_path_calculator.json", without(runhistory.TypePreToolUse), 13, "call-1", "without a PreToolUse verdict of allow"},
		{"no PreToolUse, regular", "governed_exec_command.json", without(runhistory.TypePreToolUse), 37, "exec-1", "without a PreToolUse verdict of allow"},
		{"no grant, local", "fast_path_permission_allowed.json", withoutUpdates, 21, "ask-1", "without the permission PreToolUse (event 12) asked for"},
		{"no grant, regular", "governed_permission_allowed.json", withoutUpdates, 49, "ask-1", "without the permission"},
		{"no grant after defer", "claude_hooks_deferred.json", withoutUpdates, 21, "defer-1", "without the permission"},
		{"other arguments than updatedInput", "governed_calculator.json", executedArgs(map[string]any{"expression": "1 + 1"}), 37, "rewrite-1",
			`ran with arguments {"expression":"1 + 1"}, not the allowed {"expression":"6 * 7"}`},
		{"two executions, one allow", "fast_path_calculator.json", executedTwice, 1013, "call-1", "ran again under the allow already used by event 13"},
		{"subagent without PreToolUse", "fast_path_agent_turn_subagent.json", without(runhistory.TypePreToolUse), 20, "call-0-0", "without a PreToolUse verdict of allow"},
		// A lean review (fenix-shape 5) that recorded a PreToolUse hook vouches
		// for nothing: the stage must still be there.
		{"lean review with a PreToolUse hook, stage dropped", "lean_policy_calculator.json", without(runhistory.TypePreToolUse), 13, "call-1", "without a PreToolUse verdict of allow"},
		// A lean review records the hash of the arguments it reviewed, not
		// the arguments: a regular tool that ran with others is caught.
		{"lean review, other arguments than reviewed", "lean_exec_command.json", executedArgs(map[string]any{"command_line": "rm -rf ."}), 12, "exec-1",
			`ran with arguments {"command_line":"rm -rf ."}, not the ones reviewed (hash sha256:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := check(t, tc.file, tc.edit(t, readEvents(t, filepath.Join(corpus, tc.file))))
			if len(rep.Violations) != 1 {
				t.Fatalf("violations = %v, want 1", rep.Violations)
			}
			v := rep.Violations[0]
			if v.EventID != tc.event || v.CallID != tc.call || !strings.Contains(v.Problem, tc.problem) {
				t.Fatalf("violation = %s, want event %d, call %s, %q", v, tc.event, tc.call, tc.problem)
			}
		})
	}
}
