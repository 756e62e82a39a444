package rewind

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/history/runhistory"
	"github.com/fenixrt/fenix/tools"
)

func load(t *testing.T, name string) *runhistory.Run {
	t.Helper()
	events, err := runhistory.ReadJSONFile(filepath.Join("../../workflows/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	run, err := runhistory.Parse(name, "run-1", events, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// builtin resolves tools whose review is not in history.
func builtin(name string) (bool, bool) {
	d, ok := tools.Builtin().Lookup(name)
	return d.Local, ok
}

func TestLocateMapsStagesToTheirWorkflowTask(t *testing.T) {
	tests := []struct {
		file      string
		target    Target
		activity  string
		stage     int64
		reset     int64
		local     bool
		alsoRerun []string
	}{
		// Review ran as a local activity in the task that scheduled
		// PreToolUse: rewinding to either re-runs both.
		{"local_pure_stages_calculator.json", Target{Stage: StagePreToolUse}, "RunPreToolUseHooks", 33, 30, false, []string{"ReviewToolCall call-1 (local)"}},
		{"local_pure_stages_calculator.json", Target{Stage: StageReview, CallID: "call-1"}, "ReviewToolCall", 32, 30, true, []string{"RunPreToolUseHooks call-1"}},
		{"local_pure_stages_calculator.json", Target{Stage: StageCompact}, "CompactContext", 25, 24, false, nil},
		{"governed_permission_allowed.json", Target{Stage: StagePermission, CallID: "ask-1"}, "RunPermissionRequestHooks", 37, 36, false, nil},
		{"agent_turn_parallel.json", Target{Stage: StagePreToolUse, CallID: "call-0-1"}, "RunPreToolUseHooks", 41, 39, false, []string{"RunPreToolUseHooks call-0-0"}},
		{"agent_turn_tool.json", Target{Stage: StageStep, Step: 2}, "PrepareTurn", 68, 67, false, nil},
		{"agent_turn_tool.json", Target{Stage: StageCompact, Step: 2}, "CompactContext", 74, 73, false, nil},
		// The fast path runs a calculator call's whole pipeline in the
		// first workflow task.
		{"fast_path_calculator.json", Target{Stage: StagePreToolUse}, "RunPreToolUseHooks", 12, 4, true,
			[]string{"RunLifecycleHooks (local) ×2", "PrepareTurn (local)", "CompactContext (local)", "ReviewToolCall call-1 (local)",
				"ExecuteTool call-1 (local)", "ProjectToolResult (local)", "RunPostToolUseHooks call-1 (local)", "FinalizeOutput (local)"}},
		// A continued run: steps carry on from the continuation.
		{"agent_turn_continue_as_new_last_run.json", Target{Stage: StageStep, Step: 5}, "PrepareTurn", 13, 12, false, nil},
	}
	for _, tc := range tests {
		p, err := Locate(load(t, tc.file), tc.target, builtin)
		if err != nil {
			t.Errorf("%s %+v: %v", tc.file, tc.target, err)
			continue
		}
		if p.ActivityType != tc.activity || p.StageEventID != tc.stage || p.ResetEventID != tc.reset || p.Local != tc.local ||
			strings.Join(p.AlsoRerun, ";") != strings.Join(tc.alsoRerun, ";") {
			t.Errorf("%s %+v: %s at %d (local %t), reset to %d, also %v; want %s at %d (local %t), reset to %d, also %v", tc.file, tc.target,
				p.ActivityType, p.StageEventID, p.Local, p.ResetEventID, p.AlsoRerun, tc.activity, tc.stage, tc.local, tc.reset, tc.alsoRerun)
		}
		if len(p.Reruns) != 0 || p.Check(false) != nil {
			t.Errorf("%s %+v: reruns %v, want none (only tools free of side effects ran after the reset point)", tc.file, tc.target, p.Reruns)
		}
	}
}

func TestRewindPastASideEffectIsRefused(t *testing.T) {
	for _, shape := range []struct {
		file    string
		eventID int64
	}{{"governed_exec_command.json", 37}, {"fast_path_exec_command.json", 14}} {
		for _, target := range []Target{{Stage: StagePreToolUse}, {Stage: StageReview}, {Stage: StageCompact}} {
			p, err := Locate(load(t, shape.file), target, builtin)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Reruns) != 1 || p.Reruns[0].Name != "exec_command" || p.Reruns[0].CallID != "exec-1" || p.Reruns[0].EventID != shape.eventID {
				t.Fatalf("%s %s: reruns = %+v, want exec_command exec-1 at event %d", shape.file, target.Stage, p.Reruns, shape.eventID)
			}
			err = p.Check(false)
			var refused *RerunError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), fmt.Sprintf("exec_command exec-1 (event %d) ran and has side effects", shape.eventID)) ||
				!strings.Contains(err.Error(), "-allow-rerun") {
				t.Errorf("%s %s: Check = %v, want a refusal naming exec_command and -allow-rerun", shape.file, target.Stage, err)
			}
			if err := p.Check(true); err != nil {
				t.Errorf("%s %s: -allow-rerun still refused: %v", shape.file, target.Stage, err)
			}
		}
	}
	// The subagent of step 1 ran after the reset point.
	p, err := Locate(load(t, "agent_turn_subagent.json"), Target{Stage: StageStep, Step: 1}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Reruns) != 1 || p.Reruns[0].Kind != "subagent" {
		t.Errorf("reruns = %+v, want the subagent", p.Reruns)
	}
	// A tool nobody knows counts as side-effecting.
	p, err = Locate(load(t, "execute_assignment_canceled.json"), Target{Stage: StageReview}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Reruns) != 1 || p.Reruns[0].Name != "test_sleep" {
		t.Errorf("reruns = %+v, want test_sleep (not free of side effects per its review)", p.Reruns)
	}
}

func TestLocateErrorsSayWhatExists(t *testing.T) {
	tests := []struct {
		file   string
		target Target
		want   string
	}{
		{"agent_turn_parallel.json", Target{Stage: StagePreToolUse}, "2 pre_tool_use stages (call call-0-0 in step 1, call call-0-1 in step 1): pass -call"},
		{"agent_turn_parallel.json", Target{Stage: StageReview, CallID: "nope"}, "no review of call nope; its review stages: call call-0-0 in step 1, call call-0-1 in step 1"},
		{"agent_turn_tool.json", Target{Stage: StageCompact}, "2 compact stages (step 1, step 2): pass -step N"},
		{"execute_assignment_calculator.json", Target{Stage: StageStep, Step: 1}, "only AgentTurn runs have steps"},
		{"agent_turn_tool.json", Target{Stage: StageStep}, "needs -step N"},
		{"governed_calculator.json", Target{Stage: StagePermission}, "has no permission stage (RunPermissionRequestHooks)"},
		{"governed_calculator.json", Target{Stage: "execute"}, `unknown stage "execute": use one of step, compact, review, pre_tool_use, permission`},
		{"governed_calculator.json", Target{Stage: StageCompact, CallID: "rewrite-1"}, "-call applies to review, pre_tool_use and permission"},
	}
	for _, tc := range tests {
		_, err := Locate(load(t, tc.file), tc.target, builtin)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: err = %v, want it to contain %q", tc.file, tc.target, err, tc.want)
		}
	}
}

// On the fast path the next step starts in the workflow task that ran the
// previous step's local tools: rewinding to the step re-runs them (safe:
// a local tool is idempotent) and the model call.
func TestFastPathStepSharesItsTask(t *testing.T) {
	p, err := Locate(load(t, "fast_path_agent_turn_parallel.json"), Target{Stage: StageStep, Step: 2}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	also := strings.Join(p.AlsoRerun, ", ")
	if p.StageEventID != 30 || p.ResetEventID != 17 || !strings.Contains(also, "ExecuteTool call-0-0 (local)") || !strings.Contains(also, "CallModel") {
		t.Errorf("step 2: stage %d, reset %d, also %s; want PrepareTurn 30 reset to 17 with step 1's local tools and the model call", p.StageEventID, p.ResetEventID, also)
	}
	if len(p.Reruns) != 0 {
		t.Errorf("reruns %v: local tools are idempotent", p.Reruns)
	}
}

// asTool turns governed_exec_command.json's exec_command call into a call
// of another regular tool, with the descriptor its review records today.
func asTool(t *testing.T, d tools.Descriptor) *runhistory.Run {
	t.Helper()
	events, err := runhistory.ReadJSONFile(filepath.Join("../../workflows/testdata", "governed_exec_command.json"))
	if err != nil {
		t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	recode := func(payloads **commonPayloads, v any, edit func()) {
		if err := dc.FromPayloads(*payloads, v); err != nil {
			t.Fatal(err)
		}
		edit()
		p, err := dc.ToPayloads(v)
		if err != nil {
			t.Fatal(err)
		}
		*payloads = p
	}
	args := map[string]any{"path": "notes.txt", "content": "v1"}
	for _, e := range events {
		switch a := e.GetActivityTaskScheduledEventAttributes(); a.GetActivityType().GetName() {
		case runhistory.TypeExecuteTool:
			var in activities.ExecuteToolInput
			recode(&a.Input, &in, func() { in.ToolCall.ToolName, in.ToolCall.Arguments = d.Name, args })
		}
		if c := e.GetActivityTaskCompletedEventAttributes(); c != nil && scheduledType(events, c.GetScheduledEventId()) == runhistory.TypeReviewToolCall {
			var res activities.ReviewToolCallResult
			recode(&c.Result, &res, func() { res.ToolCall.ToolName, res.ToolCall.Arguments, res.Tool = d.Name, args, d })
		}
	}
	run, err := runhistory.Parse("edited-"+d.Name, "run-1", events, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

type commonPayloads = commonpb.Payloads

func scheduledType(events []*historypb.HistoryEvent, id int64) string {
	for _, e := range events {
		if e.GetEventId() == id {
			return e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		}
	}
	return ""
}

// TestIdempotentWritesAreSideEffects: workspace_write, workspace_edit,
// memory_write and process_stop are idempotent (safe to retry at once)
// but a rewind past them overwrites what changed since: each is listed
// and needs -allow-rerun; a read is not.
func TestIdempotentWritesAreSideEffects(t *testing.T) {
	reg := tools.Builtin()
	for _, name := range []string{"workspace_write", "workspace_edit", "memory_write", "process_stop"} {
		d, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("no built-in %s", name)
		}
		if name != "workspace_edit" && !d.Idempotent {
			t.Fatalf("%s is no longer idempotent: this test no longer covers the case", name)
		}
		p, err := Locate(asTool(t, d.Descriptor), Target{Stage: StagePreToolUse}, builtin)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Reruns) != 1 || p.Reruns[0].Name != name || p.Reruns[0].EventID != 37 {
			t.Errorf("%s: reruns = %+v, want %s at event 37", name, p.Reruns, name)
		}
		var refused *RerunError
		if err := p.Check(false); !errors.As(err, &refused) || !strings.Contains(err.Error(), name+" exec-1 (event 37) ran and has side effects") {
			t.Errorf("%s: Check = %v, want a refusal naming it", name, err)
		}
	}
	read, _ := reg.Lookup("workspace_read")
	if p, err := Locate(asTool(t, read.Descriptor), Target{Stage: StagePreToolUse}, builtin); err != nil || len(p.Reruns) != 0 {
		t.Errorf("workspace_read: reruns %v (%v), want none: it only reads", p.Reruns, err)
	}
}

// truncated is a recorded history cut before an event: the run as a
// reader saw it while it was still open.
func truncated(t *testing.T, name string, before int64) *runhistory.Run {
	t.Helper()
	events, err := runhistory.ReadJSONFile(filepath.Join("../../workflows/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var kept []*historypb.HistoryEvent
	for _, e := range events {
		if e.GetEventId() < before {
			kept = append(kept, e)
		}
	}
	run, err := runhistory.Parse(name, "run-1", kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestRewindingARunningRun: a plan for an open run says it is running;
// one waiting for a permission decision is refused without
// -discard-pending; a decided or closed one is not waiting.
func TestRewindingARunningRun(t *testing.T) {
	for _, tc := range []struct {
		file   string
		before int64
		target Target
	}{
		{"fast_path_permission_allowed.json", 19, Target{Stage: StagePreToolUse}},
		{"governed_permission_allowed.json", 47, Target{Stage: StagePermission}},
		{"claude_hooks_agent_turn_permission.json", 27, Target{Stage: StagePreToolUse}},
	} {
		p, err := Locate(truncated(t, tc.file, tc.before), tc.target, builtin)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Running || strings.Join(p.AwaitingPermission, ",") != "ask-1" {
			t.Fatalf("%s: running %v, awaiting %v; want running, awaiting ask-1", tc.file, p.Running, p.AwaitingPermission)
		}
		var pending *PendingError
		if err := p.CheckRunning(false); !errors.As(err, &pending) || !strings.Contains(err.Error(), "waiting for a permission decision on ask-1") ||
			!strings.Contains(err.Error(), "-discard-pending") {
			t.Errorf("%s: CheckRunning = %v", tc.file, err)
		}
		if err := p.CheckRunning(true); err != nil {
			t.Errorf("%s: -discard-pending still refused: %v", tc.file, err)
		}
		// Once decided (the update is in history), nothing waits.
		decided, err := Locate(truncated(t, tc.file, tc.before+2), tc.target, builtin)
		if err != nil {
			t.Fatal(err)
		}
		if !decided.Running || len(decided.AwaitingPermission) != 0 || decided.CheckRunning(false) != nil {
			t.Errorf("%s after the decision: running %v, awaiting %v", tc.file, decided.Running, decided.AwaitingPermission)
		}
	}
	closed, err := Locate(load(t, "fast_path_permission_allowed.json"), Target{Stage: StagePreToolUse}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	if closed.Running || len(closed.AwaitingPermission) != 0 {
		t.Errorf("closed run: running %v, awaiting %v", closed.Running, closed.AwaitingPermission)
	}

}

// A lean review (fenix-shape 5) that found no PreToolUse hook left the
// stage out: rewinding to pre_tool_use resets to the review, which
// decides again whether the stage runs.
func TestPreToolUseLeftOutRewindsToTheReview(t *testing.T) {
	p, err := Locate(load(t, "lean_calculator.json"), Target{Stage: StagePreToolUse}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	if p.ActivityType != runhistory.TypeReviewToolCall || p.ResetEventID == 0 {
		t.Errorf("plan = %+v, want the ReviewToolCall stage", p)
	}
	p, err = Locate(load(t, "lean_policy_calculator.json"), Target{Stage: StagePreToolUse}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	if p.ActivityType != runhistory.TypePreToolUse {
		t.Errorf("with a PreToolUse hook the plan is %+v, want its PreToolUse stage", p)
	}
}

// A PrepareTurn that found nothing to compact (fenix-shape 7) answered for
// CompactContext: rewinding to compact resets to it.
func TestCompactionLeftOutRewindsToPrepareTurn(t *testing.T) {
	p, err := Locate(load(t, "idle_compaction_calculator.json"), Target{Stage: StageCompact}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	if p.ActivityType != runhistory.TypePrepareTurn {
		t.Errorf("plan = %+v, want the PrepareTurn stage", p)
	}
	p, err = Locate(load(t, "idle_compaction_agent_turn_tool.json"), Target{Stage: StageCompact, Step: 2}, builtin)
	if err != nil {
		t.Fatal(err)
	}
	if p.ActivityType != runhistory.TypePrepareTurn || p.Step != 2 {
		t.Errorf("step 2: plan = %+v, want step 2's PrepareTurn", p)
	}
}
