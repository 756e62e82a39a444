// Package verify proves from history alone that no tool ran without an
// allow. In every ExecuteAssignment and AgentTurn run, each ExecuteTool
// (a scheduled activity or a LocalActivity marker) must come after, in the
// same run and step:
//
//   - a ReviewToolCall of the same call that completed (review passed),
//     for the same tool;
//   - a RunPreToolUseHooks verdict for the call that neither blocked nor
//     halted (runs recorded before lifecycle hooks have none to check);
//   - when that verdict asked for permission, a grant: a
//     RunPermissionRequestHooks allow, or an accepted decide_permission
//     update with decision allow;
//
// and, where history records the executed arguments (a regular
// activity's input), run with the arguments allowed: the reviewed ones,
// replaced by PreToolUse's updatedInput, replaced by a permission hook's.
//
// Each allow authorizes one execution. A subagent (spawn_subagent) is a
// child AgentTurn: its start needs the PreToolUse allow (and grant) of its
// call — its review is inline in the workflow and leaves no stage — and
// its own history is checked like any other run. MCP tools
// (mcp__server__tool) are ExecuteTool stages like the built-in ones.
package verify

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/history/runhistory"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/workflows"
)

// Violation is an execution without the allow it needed.
type Violation struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// EventID is the ExecuteTool (or StartChildWorkflow) event.
	EventID int64  `json:"event_id"`
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
	Step    int    `json:"step,omitempty"`
	Problem string `json:"problem"`
}

func (v Violation) String() string {
	call := v.CallID
	if call == "" {
		call = "(unnamed)"
	}
	where := ""
	if v.Step > 0 {
		where = fmt.Sprintf(" step %d", v.Step)
	}
	return fmt.Sprintf("%s (run %s) event %d%s: call %s (%s) %s", v.WorkflowID, v.RunID, v.EventID, where, call, v.Tool, v.Problem)
}

// Report is one run's check.
type Report struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Executions counts the ExecuteTool stages and subagent starts checked.
	Executions int         `json:"executions"`
	Violations []Violation `json:"violations,omitempty"`
	// Ungoverned is set for runs recorded before lifecycle hooks existed:
	// a passed review was the whole decision, so no PreToolUse is
	// required.
	Ungoverned bool `json:"ungoverned,omitempty"`
}

// callState is one reviewed call on its way to execution.
type callState struct {
	callID string
	step   int
	tool   string
	// reviewEvent is the review; reviewErr says why it did not pass.
	reviewEvent int64
	reviewErr   string
	args        map[string]any
	// noPreToolUse is set when a lean review (fenix-shape 5) recorded
	// that no PreToolUse hook and no permission rule concerned the call,
	// so the workflow left the stage out: nothing could have refused it.
	noPreToolUse bool
	// argsUnrecorded: a lean local review records neither the call nor
	// its arguments (a marker holds only the result), so there is no
	// allowed argument list to compare with unless PreToolUse ran.
	argsUnrecorded bool
	// argsHash is what a lean review recorded instead of the arguments.
	argsHash string
	// preEvent is the PreToolUse verdict (0: none yet).
	preEvent int64
	denied   string
	// needsGrant is set when PreToolUse asked for permission; grantEvent
	// is the grant (a hook allow or a decide_permission update).
	needsGrant bool
	grantEvent int64
	permEvent  int64
	consumed   int64
}

// Run checks one run. A run that is not an ExecuteAssignment or AgentTurn
// has nothing to check. An error means a stage would not decode; it names
// the run and the event.
func Run(run *runhistory.Run) (Report, error) {
	rep := Report{WorkflowID: run.WorkflowID, RunID: run.RunID}
	if !run.IsToolRun() {
		return rep, nil
	}
	c := checker{run: run, rep: &rep, byCall: map[string][]*callState{}, updates: allowUpdates(run)}
	c.governed = run.Versions["fenix-shape"] >= 1 || run.Versions["lifecycle-hooks"] >= 1
	rep.Ungoverned = !c.governed
	for _, s := range run.Stages {
		var err error
		switch s.Type {
		case runhistory.TypeReviewToolCall:
			err = c.review(s)
		case runhistory.TypePreToolUse:
			err = c.preToolUse(s)
		case runhistory.TypePermissionRequest:
			err = c.permission(s)
		case runhistory.TypeExecuteTool:
			rep.Executions++
			err = c.execute(s)
		}
		if err != nil {
			return rep, fmt.Errorf("%s (run %s): %w", run.WorkflowID, run.RunID, err)
		}
	}
	if err := c.children(); err != nil {
		return rep, fmt.Errorf("%s (run %s): %w", run.WorkflowID, run.RunID, err)
	}
	return rep, nil
}

type checker struct {
	run      *runhistory.Run
	rep      *Report
	governed bool
	byCall   map[string][]*callState
	// updates are the accepted decide_permission allows: call ID to the
	// update events.
	updates map[string][]int64
}

// traceIDs are the call and tool a local stage's trace entry names.
type traceIDs struct {
	Trace struct {
		CallID   string `json:"call_id"`
		ToolName string `json:"tool_name"`
	} `json:"trace"`
}

func (c *checker) review(s *runhistory.Stage) error {
	st := &callState{callID: s.CallID, step: s.Step, reviewEvent: s.EventID}
	var in activities.ReviewToolCallInput
	if _, err := s.DecodeInput(&in); err != nil {
		return err
	}
	st.tool, st.args = in.ToolCall.ToolName, in.ToolCall.Arguments
	switch s.Outcome {
	case runhistory.OutcomeCompleted:
		var res activities.ReviewToolCallResult
		if _, err := s.DecodeResult(&res); err != nil {
			return err
		}
		if res.Hooks == nil {
			st.tool, st.args = res.ToolCall.ToolName, res.ToolCall.Arguments
		} else {
			// A lean review does not repeat the call: the input's is the one.
			st.noPreToolUse = !res.Hooks.Has(hooks.EventPreToolUse)
			st.argsUnrecorded = st.args == nil
			st.argsHash = res.ArgsHash
			if st.tool == "" {
				st.tool = res.Tool.Name
			}
		}
	case runhistory.OutcomeFailed, runhistory.OutcomeTimedOut:
		st.reviewErr = "its review failed"
		if fe := s.Failure(); fe != nil {
			st.reviewErr = fmt.Sprintf("its review failed (%s: %s)", fe.Type, fe.Message)
			if st.tool == "" {
				st.tool = fe.Tool
			}
		}
	default:
		st.reviewErr = fmt.Sprintf("its review had not passed (%s)", s.Outcome)
	}
	if st.callID == "" {
		// A failed local review names no call; nothing can run on it.
		return nil
	}
	c.byCall[st.callID] = append(c.byCall[st.callID], st)
	return nil
}

// open finds the oldest state of a call in a step that the given stage
// has not been attached to yet.
func (c *checker) open(callID string, step int, free func(*callState) bool) *callState {
	for _, st := range c.byCall[callID] {
		if st.step == step && free(st) {
			return st
		}
	}
	return nil
}

func (c *checker) preToolUse(s *runhistory.Stage) error {
	var res activities.PreToolUseHooksResult
	ok, err := s.DecodeResult(&res)
	if err != nil {
		return err
	}
	st := c.open(s.CallID, s.Step, func(st *callState) bool { return st.preEvent == 0 })
	if st == nil {
		// A subagent call has no review stage: the workflow reviews it
		// inline. Its PreToolUse starts its state.
		tool := toolOfPre(s)
		if tool != activities.SubagentToolName {
			return nil
		}
		st = &callState{callID: s.CallID, step: s.Step, tool: tool}
		c.byCall[s.CallID] = append(c.byCall[s.CallID], st)
	}
	st.preEvent = s.EventID
	switch {
	case !ok:
		st.denied = fmt.Sprintf("its PreToolUse stage (event %d) gave no verdict (%s)", s.EventID, s.Outcome)
	case res.Result.Halt != nil:
		st.denied = fmt.Sprintf("PreToolUse (event %d) halted the turn", s.EventID)
	case res.Result.Blocked():
		st.denied = fmt.Sprintf("PreToolUse (event %d) blocked it (hook %q: %s)", s.EventID, res.Result.DecidedBy, res.Result.Action.Reason)
	default:
		if res.Result.ArgsMutated {
			st.args = res.Result.FinalArgs
		}
		st.needsGrant = res.Result.NeedsPermission()
	}
	return nil
}

// toolOfPre reads the tool a PreToolUse stage was about.
func toolOfPre(s *runhistory.Stage) string {
	var ev hooks.PreToolUseEvent
	if ok, err := s.DecodeInput(&ev); ok && err == nil {
		return ev.ToolName
	}
	var ids traceIDs
	if ok, err := s.DecodeResult(&ids); ok && err == nil {
		return ids.Trace.ToolName
	}
	return ""
}

func (c *checker) permission(s *runhistory.Stage) error {
	var res activities.PermissionRequestHooksResult
	ok, err := s.DecodeResult(&res)
	if err != nil {
		return err
	}
	st := c.open(s.CallID, s.Step, func(st *callState) bool { return st.preEvent != 0 && st.permEvent == 0 })
	if st == nil {
		return nil
	}
	st.permEvent = s.EventID
	if !ok || !res.Result.Settled() {
		return nil // a human decides
	}
	if res.Result.Decision.Kind == hooks.KindAllow && res.Result.Halt == nil {
		st.grantEvent = s.EventID
		if res.Result.Decision.UpdatedArgs != nil && c.run.Versions["fenix-shape"] >= 2 {
			st.args = res.Result.Decision.UpdatedArgs
		}
	} else {
		st.denied = fmt.Sprintf("PermissionRequest hooks (event %d) denied it (hook %q)", s.EventID, res.Result.DecidedBy)
	}
	return nil
}

// execution is what history says ran.
type execution struct {
	callID string
	tool   string
	// args are nil when history does not record them (a local activity).
	args    map[string]any
	eventID int64
	step    int
}

func (c *checker) execute(s *runhistory.Stage) error {
	ex := execution{callID: s.CallID, eventID: s.EventID, step: s.Step}
	var in activities.ExecuteToolInput
	ok, err := s.DecodeInput(&in)
	if err != nil {
		return err
	}
	if ok {
		ex.tool, ex.args = in.ToolCall.ToolName, in.ToolCall.Arguments
		if ex.args == nil {
			ex.args = map[string]any{}
		}
	} else {
		var ids traceIDs
		if _, err := s.DecodeResult(&ids); err != nil {
			return err
		}
		ex.tool = ids.Trace.ToolName
		if fe := s.Failure(); fe != nil && ex.tool == "" {
			ex.tool = fe.Tool
		}
	}
	c.authorize(ex)
	return nil
}

// authorize finds the allow an execution ran under and consumes it, or
// records a violation.
func (c *checker) authorize(ex execution) {
	candidates := c.byCall[ex.callID]
	if ex.callID == "" {
		// A local ExecuteTool that failed records no call: it ran under
		// some allowed call of its step and tool that has not run yet.
		for _, list := range c.byCall {
			for _, st := range list {
				if st.step == ex.step && (ex.tool == "" || st.tool == ex.tool) && c.problem(st, ex) == "" {
					candidates = append(candidates, st)
				}
			}
		}
	}
	problem := fmt.Sprintf("ran without a review: no ReviewToolCall of the call precedes it in step %d", ex.step)
	switch {
	case ex.tool == activities.SubagentToolName:
		problem = "ran without a PreToolUse verdict of allow: no RunPreToolUseHooks of the spawn_subagent call precedes the child's start"
	case c.run.WorkflowType != "AgentTurn":
		problem = "ran without a review: no ReviewToolCall of the call precedes it"
	}
	for _, st := range candidates {
		if st.step != ex.step || firstEvent(st) > ex.eventID {
			continue
		}
		p := c.problem(st, ex)
		if p == "" {
			st.consumed = ex.eventID
			return
		}
		problem = p
	}
	c.violate(ex, problem)
}

func firstEvent(st *callState) int64 {
	if st.reviewEvent != 0 {
		return st.reviewEvent
	}
	return st.preEvent
}

// problem says why st does not authorize ex ("" when it does).
func (c *checker) problem(st *callState, ex execution) string {
	switch {
	case st.consumed != 0:
		return fmt.Sprintf("ran again under the allow already used by event %d", st.consumed)
	case st.reviewEvent == 0 && st.tool != activities.SubagentToolName:
		return "ran without a review"
	case st.reviewErr != "":
		return "ran although " + st.reviewErr
	case ex.tool != "" && st.tool != "" && ex.tool != st.tool:
		return fmt.Sprintf("ran as tool %s but was reviewed as %s (event %d)", ex.tool, st.tool, st.reviewEvent)
	}
	if c.governed {
		switch {
		case st.preEvent == 0 && st.noPreToolUse:
			// The review recorded that no hook or rule had a say.
		case st.preEvent == 0 || st.preEvent > ex.eventID:
			return "ran without a PreToolUse verdict of allow: no RunPreToolUseHooks of the call precedes it"
		case st.denied != "":
			return "ran although " + st.denied
		case st.needsGrant && !c.granted(st, ex.eventID):
			return fmt.Sprintf("ran without the permission PreToolUse (event %d) asked for: no PermissionRequest allow or decide_permission allow precedes it", st.preEvent)
		}
	}
	if ex.args == nil {
		return "" // a local execution records no arguments
	}
	if st.args == nil && st.argsUnrecorded {
		// A lean local review recorded only the hash of what it reviewed;
		// PreToolUse, had it changed them, would have recorded st.args.
		if st.argsHash != "" && contract.ArgumentsHash(ex.args) != st.argsHash {
			return fmt.Sprintf("ran with arguments %s, not the ones reviewed (hash %s)", compact(ex.args), st.argsHash)
		}
		return ""
	}
	if !sameArgs(ex.args, st.args) {
		return fmt.Sprintf("ran with arguments %s, not the allowed %s", compact(ex.args), compact(st.args))
	}
	return ""
}

// granted reports whether a grant came between the ask and the execution.
func (c *checker) granted(st *callState, before int64) bool {
	if st.grantEvent != 0 && st.grantEvent < before {
		return true
	}
	for _, ev := range c.updates[st.callID] {
		if ev > st.preEvent && ev < before {
			return true
		}
	}
	return false
}

func (c *checker) violate(ex execution, problem string) {
	c.rep.Violations = append(c.rep.Violations, Violation{WorkflowID: c.run.WorkflowID, RunID: c.run.RunID, EventID: ex.eventID,
		CallID: ex.callID, Tool: ex.tool, Step: ex.step, Problem: problem})
}

// children checks every subagent start against its call's allow.
func (c *checker) children() error {
	if len(c.run.Children) == 0 {
		return nil
	}
	// A malformed input fails the run before any stage; one that still
	// started children is a violation for each, not a reason to stop.
	req, reqErr := c.run.Request()
	prefix := strings.TrimSuffix(workflows.SubagentWorkflowID(req.LogicalWorkID, req.AttemptNo, "x"), "x")
	for _, ch := range c.run.Children {
		if reqErr != nil {
			c.rep.Executions++
			c.violate(execution{tool: activities.SubagentToolName, eventID: ch.EventID}, fmt.Sprintf("started subagent %s, but the run's input does not decode: %v", ch.WorkflowID, reqErr))
			continue
		}
		if ch.WorkflowType != workflows.AgentTurnWorkflow {
			continue
		}
		c.rep.Executions++
		callID, ok := strings.CutPrefix(ch.WorkflowID, prefix)
		ex := execution{callID: callID, tool: activities.SubagentToolName, eventID: ch.EventID, step: c.stepAt(ch.EventID)}
		if !ok {
			c.violate(ex, fmt.Sprintf("started subagent %s, which is not named after a spawn_subagent call of this run (%s…)", ch.WorkflowID, prefix))
			continue
		}
		if !c.governed {
			continue // reviewed inline, no hooks to ask
		}
		c.authorize(ex)
	}
	return nil
}

// stepAt is the AgentTurn step of the last stage before an event.
func (c *checker) stepAt(eventID int64) int {
	step := 0
	for _, s := range c.run.Stages {
		if s.EventID > eventID {
			break
		}
		step = s.Step
	}
	return step
}

// allowUpdates lists the accepted decide_permission updates that allowed a
// call.
func allowUpdates(run *runhistory.Run) map[string][]int64 {
	out := map[string][]int64{}
	for _, u := range run.Updates {
		var d workflows.PermissionDecision
		if u.Name == workflows.UpdateDecidePermission && u.Decode(&d) == nil && d.Decision == workflows.DecisionAllow {
			out[d.CallID] = append(out[d.CallID], u.EventID)
		}
	}
	return out
}

// sameArgs compares JSON-shaped arguments by their JSON encoding, so
// numbers decoded from different payloads compare equal.
func sameArgs(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	var na, nb any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if json.Unmarshal(ja, &na) != nil || json.Unmarshal(jb, &nb) != nil {
		return false
	}
	return reflect.DeepEqual(na, nb)
}

func compact(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Sprint(args)
	}
	const max = 120
	if len(b) > max {
		return string(b[:max-1]) + "…"
	}
	return string(b)
}
