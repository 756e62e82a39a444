// Package rewind maps a stage of a recorded run — compact, review,
// pre_tool_use, permission, or an AgentTurn step — to the workflow task
// just before it, checks that resetting there re-runs no side-effecting
// tool that already ran, and resets the run with Temporal's reset API.
//
// Every stage is recorded either as an ActivityTaskScheduled event or as
// a LocalActivity marker; both name the WorkflowTaskCompleted event of the
// workflow task that produced them. Resetting to that event re-runs that
// workflow task under today's worker, so the stage — and every other
// stage that task produced — runs again. That event ID is also the one to
// pick in the Web UI's reset dialog or pass to `temporal workflow reset
// --event-id`.
package rewind

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/history/runhistory"
	"github.com/fenixrt/fenix/hooks"
)

// Stage names a rewind target.
type Stage string

// Stages.
const (
	StageCompact    Stage = "compact"
	StageReview     Stage = "review"
	StagePreToolUse Stage = "pre_tool_use"
	StagePermission Stage = "permission"
	// StageStep is an AgentTurn step: the reset re-runs it from its
	// PrepareTurn.
	StageStep Stage = "step"
)

// Stages lists the target names in pipeline order.
var Stages = []Stage{StageStep, StageCompact, StageReview, StagePreToolUse, StagePermission}

// activityOf is the stage activity each target rewinds to.
var activityOf = map[Stage]string{
	StageCompact:    runhistory.TypeCompactContext,
	StageReview:     runhistory.TypeReviewToolCall,
	StagePreToolUse: runhistory.TypePreToolUse,
	StagePermission: runhistory.TypePermissionRequest,
	StageStep:       runhistory.TypePrepareTurn,
}

// perCall marks the targets that are about one tool call.
var perCall = map[Stage]bool{StageReview: true, StagePreToolUse: true, StagePermission: true}

// Target is what to rewind to.
type Target struct {
	Stage Stage
	// CallID picks the tool call of review, pre_tool_use and permission.
	CallID string
	// Step picks the AgentTurn step: required for StageStep, and narrows
	// the other stages.
	Step int
}

// Rerun is a side effect that already happened after the reset point and
// would happen again.
type Rerun struct {
	// Kind is "tool" or "subagent".
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	CallID string `json:"call_id,omitempty"`
	// EventID is the ActivityTaskScheduled or StartChildWorkflow event.
	EventID int64 `json:"event_id"`
	// Pending is set when the tool had not finished when history was read.
	Pending bool `json:"pending,omitempty"`
}

func (r Rerun) String() string {
	if r.Kind == "subagent" {
		return fmt.Sprintf("subagent %s (event %d) would run again with all its tool calls", r.Name, r.EventID)
	}
	state := "ran"
	if r.Pending {
		state = "may be running"
	}
	return fmt.Sprintf("%s %s (event %d) %s and has side effects: it would run again, over whatever changed since", r.Name, r.CallID, r.EventID, state)
}

// Plan is a located rewind.
type Plan struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	Target     Target `json:"target"`
	// ActivityType and StageEventID locate the stage in history.
	ActivityType string `json:"activity_type"`
	StageEventID int64  `json:"stage_event_id"`
	Local        bool   `json:"local"`
	CallID       string `json:"call_id,omitempty"`
	Step         int    `json:"step,omitempty"`
	// ResetEventID is the WorkflowTaskCompleted event to reset to.
	ResetEventID int64 `json:"reset_event_id"`
	// AlsoRerun lists the other stages of the reset workflow task, which
	// run again too.
	AlsoRerun []string `json:"also_rerun,omitempty"`
	// Reruns are the side effects a reset would repeat.
	Reruns []Rerun `json:"reruns,omitempty"`
	// Running is set when the run had not closed: a reset terminates it.
	Running bool `json:"running,omitempty"`
	// AwaitingPermission lists the calls the running run waits on a
	// permission decision for; a reset drops those requests.
	AwaitingPermission []string `json:"awaiting_permission,omitempty"`
}

// SideEffects says whether a tool is free of side effects (it only reads
// or computes: tools.Descriptor.Local); ok is false for a tool it does not
// know (treated as side-effecting). Idempotent is not enough: a write that
// is safe to retry at once still overwrites, when rerun later, whatever
// changed in between.
type SideEffects func(tool string) (free, ok bool)

// RerunError refuses a rewind that would repeat side effects.
type RerunError struct {
	Plan Plan
}

func (e *RerunError) Error() string {
	lines := make([]string, len(e.Plan.Reruns))
	for i, r := range e.Plan.Reruns {
		// The model named these calls; the message reaches a terminal.
		lines[i] = "  - " + contract.Printable(r.String())
	}
	return fmt.Sprintf("rewinding %s to event %d would run again what already ran after it:\n%s\npass -allow-rerun to rewind anyway",
		e.Plan.WorkflowID, e.Plan.ResetEventID, strings.Join(lines, "\n"))
}

// Locate finds the target's stage in a run and plans the reset: the reset
// point and every side effect after it. known resolves tools whose review
// is not in history.
func Locate(run *runhistory.Run, t Target, known SideEffects) (Plan, error) {
	activityType, ok := activityOf[t.Stage]
	if !ok {
		return Plan{}, fmt.Errorf("unknown stage %q: use one of %s", t.Stage, stageList())
	}
	if t.Stage == StageStep {
		if run.WorkflowType != "AgentTurn" {
			return Plan{}, fmt.Errorf("%s is a %s run: only AgentTurn runs have steps", run.WorkflowID, run.WorkflowType)
		}
		if t.Step <= 0 {
			return Plan{}, fmt.Errorf("stage step needs -step N (N ≥ 1)")
		}
	}
	if t.CallID != "" && !perCall[t.Stage] {
		return Plan{}, fmt.Errorf("-call applies to review, pre_tool_use and permission, not %s", t.Stage)
	}
	var found []*runhistory.Stage
	for _, s := range run.StagesOf(activityType) {
		if (t.CallID == "" || s.CallID == t.CallID) && (t.Step == 0 || s.Step == t.Step) {
			found = append(found, s)
		}
	}
	switch {
	case len(found) > 0:
	case t.Stage == StagePreToolUse:
		// A lean review (fenix-shape 5) that found no PreToolUse hook left
		// the stage out; resetting to that review re-decides, under
		// today's policy, whether the stage runs.
		found = leanReviewsWithoutPreToolUse(run, t)
	case t.Stage == StageCompact:
		// A PrepareTurn that found nothing to compact (fenix-shape 7)
		// answered for CompactContext; resetting to it decides again.
		found = preparesWithoutCompaction(run, t)
	}
	if len(found) == 0 {
		return Plan{}, notFound(run, t, activityType)
	}
	if len(found) > 1 && !(t.Stage == StageCompact && found[0].Step == found[len(found)-1].Step) {
		return Plan{}, ambiguous(run, t, found)
	}
	// A step's own compaction comes before the one a continue-as-new adds.
	s := found[0]
	p := Plan{WorkflowID: run.WorkflowID, RunID: run.RunID, Target: t, ActivityType: s.Type, StageEventID: s.EventID,
		Local: s.Local, CallID: s.CallID, Step: s.Step, ResetEventID: s.WorkflowTaskCompletedEventID}
	var also []string
	for _, other := range run.Stages {
		if other != s && other.WorkflowTaskCompletedEventID == p.ResetEventID {
			also = append(also, describe(other))
		}
	}
	p.AlsoRerun = countRepeats(also)
	p.Reruns = reruns(run, p.ResetEventID, known)
	p.Running = !run.Closed
	if p.Running {
		p.AwaitingPermission = AwaitingPermission(run)
	}
	return p, nil
}

// leanReviewsWithoutPreToolUse are the target's reviews whose recorded
// hook subscription left PreToolUse out.
func leanReviewsWithoutPreToolUse(run *runhistory.Run, t Target) []*runhistory.Stage {
	var out []*runhistory.Stage
	for _, s := range run.StagesOf(runhistory.TypeReviewToolCall) {
		if (t.CallID != "" && s.CallID != t.CallID) || (t.Step != 0 && s.Step != t.Step) {
			continue
		}
		var res activities.ReviewToolCallResult
		if ok, err := s.DecodeResult(&res); ok && err == nil && res.Hooks != nil && !res.Hooks.Has(hooks.EventPreToolUse) {
			out = append(out, s)
		}
	}
	return out
}

// preparesWithoutCompaction are the target's PrepareTurn stages that
// answered for a left-out CompactContext.
func preparesWithoutCompaction(run *runhistory.Run, t Target) []*runhistory.Stage {
	var out []*runhistory.Stage
	for _, s := range run.StagesOf(runhistory.TypePrepareTurn) {
		if t.Step != 0 && s.Step != t.Step {
			continue
		}
		var res activities.PrepareTurnResult
		if ok, err := s.DecodeResult(&res); ok && err == nil && res.NoCompaction != nil {
			out = append(out, s)
		}
	}
	return out
}

// Check refuses a plan that would repeat side effects, unless allowed.
func (p Plan) Check(allowRerun bool) error {
	if len(p.Reruns) > 0 && !allowRerun {
		return &RerunError{Plan: p}
	}
	return nil
}

// PendingError refuses to rewind a run that waits for a permission
// decision: the reset would terminate it and drop the request.
type PendingError struct {
	Plan Plan
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("%s (run %s) is waiting for a permission decision on %s: rewinding terminates the run and drops the request; "+
		"decide it first (starter approve/deny) or pass -discard-pending", e.Plan.WorkflowID, e.Plan.RunID, strings.Join(e.Plan.AwaitingPermission, ", "))
}

// CheckRunning refuses a running run that waits for a permission
// decision, unless discardPending.
func (p Plan) CheckRunning(discardPending bool) error {
	if p.Running && len(p.AwaitingPermission) > 0 && !discardPending {
		return &PendingError{Plan: p}
	}
	return nil
}

// AwaitingPermission lists, from history, the calls of an open run whose
// PreToolUse asked for permission and that nothing has decided yet: no
// PermissionRequest hook settled them, no decide_permission update
// answered them, they did not execute, and the run has not moved on to a
// later step (a timeout denies and moves on).
func AwaitingPermission(run *runhistory.Run) []string {
	if run.Closed {
		return nil
	}
	decided := map[string]bool{}
	for _, u := range run.Updates {
		var d struct {
			CallID string `json:"call_id"`
		}
		if u.Decode(&d) == nil {
			decided[d.CallID] = true
		}
	}
	lastStep := 0
	for _, s := range run.Stages {
		lastStep = max(lastStep, s.Step)
	}
	var out []string
	for i, s := range run.Stages {
		if s.Type != runhistory.TypePreToolUse || s.Step != lastStep || decided[s.CallID] {
			continue
		}
		var res activities.PreToolUseHooksResult
		if ok, err := s.DecodeResult(&res); !ok || err != nil || !res.Result.NeedsPermission() {
			continue
		}
		if !settledLater(run.Stages[i+1:], s.CallID) {
			out = append(out, s.CallID)
		}
	}
	return out
}

// settledLater reports whether a permission hook settled the call or the
// call went on to execute.
func settledLater(later []*runhistory.Stage, callID string) bool {
	for _, s := range later {
		if s.CallID != callID {
			continue
		}
		switch s.Type {
		case runhistory.TypeExecuteTool, runhistory.TypePostToolUse:
			return true
		case runhistory.TypePermissionRequest:
			var res activities.PermissionRequestHooksResult
			if ok, err := s.DecodeResult(&res); ok && err == nil && res.Result.Settled() {
				return true
			}
		}
	}
	return false
}

// reruns lists side effects recorded after the reset point: tools run as
// regular activities (a local ExecuteTool is free of side effects by
// construction) that started, or may have, and are not free of side
// effects — idempotent writes included; and subagents.
func reruns(run *runhistory.Run, resetEventID int64, known SideEffects) []Rerun {
	pure := reviewedSideEffects(run)
	var out []Rerun
	for _, s := range run.StagesOf(runhistory.TypeExecuteTool) {
		if s.EventID <= resetEventID || s.Local {
			continue
		}
		if !s.Started && s.Outcome != runhistory.OutcomePending {
			continue // closed without a worker picking it up
		}
		var in activities.ExecuteToolInput
		_, _ = s.DecodeInput(&in)
		tool := in.ToolCall.ToolName
		// Histories from before descriptors recorded "local" read false:
		// what the tool is today counts too.
		if pure[s.CallID] {
			continue
		}
		if known != nil {
			if free, ok := known(tool); ok && free {
				continue
			}
		}
		if tool == "" {
			tool = "a tool"
		}
		out = append(out, Rerun{Kind: "tool", Name: tool, CallID: s.CallID, EventID: s.EventID, Pending: s.Outcome == runhistory.OutcomePending})
	}
	for _, c := range run.Children {
		if c.EventID > resetEventID && c.Started {
			out = append(out, Rerun{Kind: "subagent", Name: c.WorkflowID, EventID: c.EventID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EventID < out[j].EventID })
	return out
}

// reviewedSideEffects reads from each call's review whether its tool is
// free of side effects.
func reviewedSideEffects(run *runhistory.Run) map[string]bool {
	out := map[string]bool{}
	for _, s := range run.StagesOf(runhistory.TypeReviewToolCall) {
		var res activities.ReviewToolCallResult
		if ok, err := s.DecodeResult(&res); ok && err == nil && res.Tool.Name != "" {
			out[s.CallID] = res.Tool.Local
		}
	}
	return out
}

func describe(s *runhistory.Stage) string {
	d := s.Type
	if s.CallID != "" {
		d += " " + s.CallID
	}
	if s.Local {
		d += " (local)"
	}
	return d
}

// countRepeats folds repeated descriptions into one with a count, in
// first-seen order: four lifecycle-hook stages read "RunLifecycleHooks
// (local) ×4".
func countRepeats(items []string) []string {
	counts := map[string]int{}
	var order []string
	for _, it := range items {
		if counts[it] == 0 {
			order = append(order, it)
		}
		counts[it]++
	}
	for i, it := range order {
		if n := counts[it]; n > 1 {
			order[i] = fmt.Sprintf("%s ×%d", it, n)
		}
	}
	return order
}

func stageList() string {
	names := make([]string, len(Stages))
	for i, s := range Stages {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func notFound(run *runhistory.Run, t Target, activityType string) error {
	var have []string
	for _, s := range run.StagesOf(activityType) {
		have = append(have, where(s))
	}
	what := string(t.Stage)
	if t.CallID != "" {
		what += " of call " + t.CallID
	}
	if t.Step > 0 {
		what += fmt.Sprintf(" in step %d", t.Step)
	}
	if len(have) == 0 {
		return fmt.Errorf("%s (run %s) has no %s stage (%s)", run.WorkflowID, run.RunID, t.Stage, activityType)
	}
	return fmt.Errorf("%s (run %s) has no %s; its %s stages: %s", run.WorkflowID, run.RunID, what, t.Stage, strings.Join(have, ", "))
}

func ambiguous(run *runhistory.Run, t Target, found []*runhistory.Stage) error {
	var have []string
	for _, s := range found {
		have = append(have, where(s))
	}
	have = slices.Compact(have)
	hint := "pass -call CALL_ID"
	if !perCall[t.Stage] {
		hint = "pass -step N"
	} else if run.WorkflowType == "AgentTurn" {
		hint = "pass -call CALL_ID (and -step N if the ID repeats)"
	}
	return fmt.Errorf("%s (run %s) has %d %s stages (%s): %s", run.WorkflowID, run.RunID, len(found), t.Stage, strings.Join(have, ", "), hint)
}

func where(s *runhistory.Stage) string {
	switch {
	case s.CallID != "" && s.Step > 0:
		return fmt.Sprintf("call %s in step %d", s.CallID, s.Step)
	case s.CallID != "":
		return "call " + s.CallID
	case s.Step > 0:
		return fmt.Sprintf("step %d", s.Step)
	}
	return fmt.Sprintf("event %d", s.EventID)
}
