package policydiff

import (
	"errors"
	"fmt"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/history/runhistory"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/workflows"
)

// Call is one recorded tool call that reached ReviewToolCall, with what
// the policy of the day decided.
type Call struct {
	WorkflowID   string `json:"workflow_id"`
	RunID        string `json:"run_id"`
	WorkflowType string `json:"workflow_type"`
	// Step is the AgentTurn step (0 in ExecuteAssignment).
	Step int `json:"step,omitempty"`
	// ToolCall is the call as reviewed.
	ToolCall     contract.ToolCall     `json:"tool_call"`
	AgentContext contract.AgentContext `json:"agent_context"`
	Recorded     Verdict               `json:"recorded"`
	// HumanDecision is how an ask ended: "allow" or "deny" by
	// decide_permission, or "deny (timeout)".
	HumanDecision string `json:"human_decision,omitempty"`

	// session and the cancel state are what PreToolUse hooks saw.
	session      hooks.Session
	cancelled    bool
	cancelReason string
}

// Extract lists a run's reviewed calls in history order. Calls whose
// stages do not decode are an error naming the run and the event.
func Extract(run *runhistory.Run) ([]Call, error) {
	if !run.IsToolRun() {
		return nil, nil
	}
	req, err := run.Request()
	if err != nil {
		return nil, err
	}
	hooksOff := len(run.StagesOf(runhistory.TypeLifecycleHooks)) == 0 && len(run.StagesOf(runhistory.TypePreToolUse)) == 0
	var human map[string]string
	var calls []Call
	for i, review := range run.Stages {
		if review.Type != runhistory.TypeReviewToolCall || review.CallID == "" {
			continue
		}
		c := Call{WorkflowID: run.WorkflowID, RunID: run.RunID, WorkflowType: run.WorkflowType, Step: review.Step,
			AgentContext: req.AgentContext,
			session:      hooks.SessionFromAssignment(run.WorkflowID, run.RunID, req.Assignment)}
		sv := stageVerdicts{hooksOff: hooksOff}
		if err := c.readReview(run, review, &sv); err != nil {
			return nil, err
		}
		// The call's later stages are the first of each type after its
		// review: a call ID may repeat in a later step.
		later := run.Stages[i+1:]
		if pre := firstFor(later, runhistory.TypePreToolUse, c.ToolCall.CallID); pre != nil {
			if err := c.readPreToolUse(pre, &sv); err != nil {
				return nil, err
			}
			if perm := firstFor(later, runhistory.TypePermissionRequest, c.ToolCall.CallID); perm != nil && sv.pre != nil && sv.pre.NeedsPermission() {
				var res activities.PermissionRequestHooksResult
				if ok, err := perm.DecodeResult(&res); err != nil {
					return nil, fmt.Errorf("%s: %w", run.WorkflowID, err)
				} else if ok {
					sv.permission = &res.Result
				}
			}
		}
		c.Recorded = sv.verdict()
		if c.Recorded.Outcome == OutcomeAsk {
			if human == nil {
				human = humanDecisions(run)
			}
			c.HumanDecision = human[c.ToolCall.CallID]
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func (c *Call) readReview(run *runhistory.Run, review *runhistory.Stage, sv *stageVerdicts) error {
	var in activities.ReviewToolCallInput
	if ok, err := review.DecodeInput(&in); err != nil {
		return fmt.Errorf("%s: %w", run.WorkflowID, err)
	} else if ok {
		c.ToolCall, c.AgentContext = in.ToolCall, in.AgentContext
	}
	switch review.Outcome {
	case runhistory.OutcomeCompleted:
		var res activities.ReviewToolCallResult
		if _, err := review.DecodeResult(&res); err != nil {
			return fmt.Errorf("%s: %w", run.WorkflowID, err)
		}
		if res.Hooks == nil {
			c.ToolCall = res.ToolCall
		} else {
			// A lean review (fenix-shape 5) does not repeat the call (the
			// run's request or model answer has it, below) and says
			// whether a PreToolUse hook was to run at all.
			sv.noPreToolUse = !res.Hooks.Has(hooks.EventPreToolUse)
		}
		sv.reviewed, sv.fingerprint = true, res.PolicyFingerprint
	case runhistory.OutcomeFailed:
		// Only a rejection is a verdict; a review that failed for another
		// reason (no host queue, a crash) decided nothing.
		if fe := review.Failure(); errors.Is(fe, fenixerr.ErrUnsupportedTool) || errors.Is(fe, fenixerr.ErrValidation) {
			sv.reviewErr = fe
		}
	}
	if c.ToolCall.ToolName == "" {
		// A local review that failed recorded neither input nor result,
		// and a lean one only the result, without the call.
		for _, rc := range run.RequestedCalls() {
			if rc.Step == review.Step && rc.Call.CallID == review.CallID {
				c.ToolCall = rc.Call
				break
			}
		}
	}
	if c.ToolCall.ToolName == "" {
		return fmt.Errorf("%s: the reviewed call %q (event %d) is not in the run's history", run.WorkflowID, review.CallID, review.EventID)
	}
	return nil
}

func (c *Call) readPreToolUse(pre *runhistory.Stage, sv *stageVerdicts) error {
	var ev hooks.PreToolUseEvent
	if ok, err := pre.DecodeInput(&ev); err != nil {
		return fmt.Errorf("%s: %w", c.WorkflowID, err)
	} else if ok {
		// A regular stage recorded exactly what the hooks saw.
		c.session, c.cancelled, c.cancelReason = ev.Session, ev.Cancelled, ev.CancelReason
	}
	var res activities.PreToolUseHooksResult
	ok, err := pre.DecodeResult(&res)
	if err != nil {
		return fmt.Errorf("%s: %w", c.WorkflowID, err)
	}
	if !ok {
		return nil
	}
	sv.pre = &res.Result
	if res.PolicyFingerprint != "" {
		sv.fingerprint = res.PolicyFingerprint
	}
	if res.Result.Blocked() && res.Result.DecidedBy == builtin.NewCancellationHook().Name() {
		// The run was being canceled: replay the same state.
		c.cancelled = true
	}
	return nil
}

func firstFor(stages []*runhistory.Stage, activityType, callID string) *runhistory.Stage {
	for _, s := range stages {
		if s.Type == activityType && s.CallID == callID {
			return s
		}
	}
	return nil
}

// humanDecisions reads how asks ended: the result's permission_decision
// trace entries (they include timeouts), else the decide_permission
// updates (for runs that did not complete).
func humanDecisions(run *runhistory.Run) map[string]string {
	out := map[string]string{}
	for _, u := range run.Updates {
		var d workflows.PermissionDecision
		if u.Name == workflows.UpdateDecidePermission && u.Decode(&d) == nil {
			out[d.CallID] = d.Decision
		}
	}
	var res struct {
		Trace []struct {
			Hook      string `json:"hook"`
			CallID    string `json:"call_id"`
			Decision  string `json:"decision"`
			DecidedBy string `json:"decided_by"`
		} `json:"trace"`
	}
	if ok, err := run.DecodeResult(&res); !ok || err != nil {
		return out
	}
	for _, e := range res.Trace {
		if e.Hook != activities.StagePermissionDecision || e.CallID == "" || e.Decision == "" {
			continue
		}
		out[e.CallID] = e.Decision
		if e.DecidedBy == "timeout" {
			out[e.CallID] += " (timeout)"
		}
	}
	return out
}
