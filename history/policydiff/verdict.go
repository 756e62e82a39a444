// Package policydiff answers "which past tool calls would this policy
// decide differently?". It reads recorded runs (package runhistory),
// extracts every tool call that reached ReviewToolCall with the verdicts
// Review, PreToolUse and PermissionRequest recorded for it, re-evaluates
// those three stages under a candidate policy with the worker's own code
// (tools.Registry.Review and the hooks.Registry aggregation), and diffs
// the outcomes. No tool runs: a re-evaluation stops where ExecuteTool
// would start, and hooks see is_replay.
package policydiff

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// Outcome is what a policy decided for a call.
type Outcome string

// Outcomes, from most to least permissive.
const (
	// OutcomeAllow: the call runs (possibly with rewritten arguments).
	OutcomeAllow Outcome = "allow"
	// OutcomeAsk: a PreToolUse hook asked for permission and no
	// PermissionRequest hook settled it, so a human decides.
	OutcomeAsk Outcome = "ask"
	// OutcomeBlock: review rejected the call, a PreToolUse hook blocked
	// it, or a PermissionRequest hook denied it.
	OutcomeBlock Outcome = "block"
	// OutcomeUndecided: history holds no verdict (the run was canceled
	// between stages or is still running).
	OutcomeUndecided Outcome = "undecided"
)

func (o Outcome) rank() int {
	switch o {
	case OutcomeAllow:
		return 0
	case OutcomeAsk:
		return 1
	default:
		return 2
	}
}

// Stages that decide.
const (
	StageReview            = "review"
	StagePreToolUse        = "pre_tool_use"
	StagePermissionRequest = "permission_request"
)

// Verdict is a policy's decision on one call.
type Verdict struct {
	Outcome Outcome `json:"outcome"`
	// Stage is the stage that decided a block or ask (or a hook allow).
	Stage string `json:"stage,omitempty"`
	// DecidedBy is the deciding hook, or the error type of a review
	// rejection.
	DecidedBy string `json:"decided_by,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// UpdatedInput is set when PreToolUse hooks rewrote the arguments of
	// an allowed call.
	UpdatedInput map[string]any `json:"updated_input,omitempty"`
	// PolicyFingerprint identifies the policy that decided; empty for
	// verdicts recorded before fingerprints existed.
	PolicyFingerprint string `json:"policy_fingerprint,omitempty"`
}

// stageVerdicts are the raw results of the three stages for one call;
// nil where a stage did not run.
type stageVerdicts struct {
	reviewErr   *fenixerr.Error
	reviewed    bool
	pre         *hooks.PreToolUseResult
	permission  *hooks.PermissionRequestResult
	fingerprint string
	// hooksOff marks runs recorded before lifecycle hooks existed:
	// a passed review was the whole decision.
	hooksOff bool
	// noPreToolUse: a lean review recorded that no PreToolUse hook or
	// rule concerned the call, so the stage was left out and the passed
	// review was the whole decision.
	noPreToolUse bool
}

// verdict applies the workflow's rules (governToolCall, decidePermission)
// to the stage results.
func (v stageVerdicts) verdict() Verdict {
	out := Verdict{PolicyFingerprint: v.fingerprint}
	switch {
	case v.reviewErr != nil:
		out.Outcome, out.Stage, out.DecidedBy, out.Reason = OutcomeBlock, StageReview, v.reviewErr.Type, v.reviewErr.Message
		if v.reviewErr.PolicyFingerprint != "" {
			out.PolicyFingerprint = v.reviewErr.PolicyFingerprint
		}
	case !v.reviewed:
		out.Outcome = OutcomeUndecided
	case v.pre == nil && (v.hooksOff || v.noPreToolUse):
		out.Outcome = OutcomeAllow
	case v.pre == nil:
		out.Outcome = OutcomeUndecided
	case v.pre.Blocked():
		out.Outcome, out.Stage, out.DecidedBy, out.Reason = OutcomeBlock, StagePreToolUse, v.pre.DecidedBy, v.pre.Action.Reason
	case v.pre.NeedsPermission():
		req := v.pre.PermissionRequired
		out.Outcome, out.Stage, out.DecidedBy, out.Reason = OutcomeAsk, StagePreToolUse, req.Hook, req.Permission
		if p := v.permission; p != nil && p.Settled() {
			out.Stage, out.DecidedBy, out.Reason = StagePermissionRequest, p.DecidedBy, p.Decision.Reason
			out.Outcome = OutcomeBlock
			if p.Decision.Kind == hooks.KindAllow {
				out.Outcome = OutcomeAllow
			}
		}
	default:
		out.Outcome = OutcomeAllow
	}
	if out.Outcome == OutcomeAllow && v.pre != nil && v.pre.ArgsMutated {
		out.UpdatedInput = v.pre.FinalArgs
	}
	return out
}

// Change classifies a candidate verdict against the recorded one.
type Change string

// Changes.
const (
	// ChangeNewlyBlocked: the candidate is stricter (allow → ask or block,
	// ask → block).
	ChangeNewlyBlocked Change = "newly_blocked"
	// ChangeNewlyAllowed: the candidate is more permissive.
	ChangeNewlyAllowed Change = "newly_allowed"
	// ChangeInputChanged: allowed both times, with different updatedInput.
	ChangeInputChanged Change = "input_changed"
	ChangeUnchanged    Change = "unchanged"
	// ChangeSkipped: nothing recorded to compare with.
	ChangeSkipped Change = "skipped"
)

// Compare classifies a change of verdict.
func Compare(recorded, candidate Verdict) Change {
	switch {
	case recorded.Outcome == OutcomeUndecided || candidate.Outcome == OutcomeUndecided:
		return ChangeSkipped
	case candidate.Outcome.rank() > recorded.Outcome.rank():
		return ChangeNewlyBlocked
	case candidate.Outcome.rank() < recorded.Outcome.rank():
		return ChangeNewlyAllowed
	case recorded.Outcome == OutcomeAllow && !sameArgs(recorded.UpdatedInput, candidate.UpdatedInput):
		return ChangeInputChanged
	}
	return ChangeUnchanged
}

// sameArgs compares JSON-shaped arguments; numbers decoded from history
// and produced by hooks are both float64, so DeepEqual is exact here.
func sameArgs(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// String renders a verdict with its reasons cut: "allow", "ask: hook
// \"h\" (approve deploys)", "block: review ToolNotVisibleError", ….
func (v Verdict) String() string { return v.text(reasonsCut) }

// How much of a verdict's reasons text renders.
const (
	reasonsNone = iota // the narrow table: who decided, not why
	reasonsCut
	reasonsFull
)

func (v Verdict) text(reasons int) string {
	why := func(format, s string, n int) string {
		switch reasons {
		case reasonsNone:
			return ""
		case reasonsCut:
			s = shorten(s, n)
		}
		return fmt.Sprintf(format, s)
	}
	switch v.Outcome {
	case OutcomeAllow:
		s := "allow"
		if v.Stage == StagePermissionRequest {
			s += fmt.Sprintf(": permission hook %q", v.DecidedBy)
		}
		if len(v.UpdatedInput) > 0 {
			s += why(", input %s", compactJSON(v.UpdatedInput), 40)
			if reasons == reasonsNone {
				s += ", input changed"
			}
		}
		return s
	case OutcomeAsk:
		return fmt.Sprintf("ask: hook %q", v.DecidedBy) + why(" (%s)", v.Reason, 50)
	case OutcomeBlock:
		switch v.Stage {
		case StageReview:
			return fmt.Sprintf("block: review %s", v.DecidedBy)
		case StagePermissionRequest:
			return fmt.Sprintf("block: permission hook %q", v.DecidedBy) + why(": %s", v.Reason, 50)
		}
		return fmt.Sprintf("block: hook %q", v.DecidedBy) + why(": %s", v.Reason, 50)
	}
	return string(v.Outcome)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
