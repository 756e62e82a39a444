package activities

import (
	"encoding/json"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// Bounds of what hook stages return. A command hook may print up to 1 MiB
// and several hooks answer one event: joined, their context alone could
// exceed Temporal's 2 MB payload limit and end the run. What the model or
// the kernel reads of hook output is truncated here, with a marker, before
// it reaches history.
const (
	// maxHookContextBytes bounds the joined additional context of one
	// stage, and one hook's.
	maxHookContextBytes = 64 << 10
	// maxHookReasonBytes bounds a block, deny, halt or error reason.
	maxHookReasonBytes = 8 << 10
	// StepHookContextBudget is what the hook context of one agent step's
	// calls may add up to, per tool stage (PreToolUse, PostToolUse,
	// PostToolUseFailure). The calls run in parallel and their stages'
	// results reach the server in one workflow task, whose gRPC message
	// is limited to 4 MB: a PreToolUse hook adding its 64 KiB to 32
	// parallel calls failed that task on every retry and the turn never
	// ended. Each of n calls gets StepHookContextBudget/n (the whole
	// maxHookContextBytes up to four calls).
	StepHookContextBudget = 256 << 10
	// StepArgumentBudget is what the arguments PreToolUse hooks rewrote
	// may add up to over one agent step's calls, for the same reason:
	// each of n calls' rewritten arguments may encode to
	// StepArgumentBudget/n.
	StepArgumentBudget = 1 << 20
)

// contextLimit is a stage's context bound under a step's budget (see
// hooks.PreToolUseEvent.ContextBudget).
func contextLimit(budget int) int {
	if budget > 0 && budget < maxHookContextBytes {
		return budget
	}
	return maxHookContextBytes
}

func boundText(s *string, max int) { *s = contract.TruncateText(*s, max) }

func boundHalt(h *hooks.Halt) {
	if h != nil {
		boundText(&h.Reason, maxHookReasonBytes)
	}
}

func boundDecisions(ds []hooks.HookDecision) {
	for i := range ds {
		boundText(&ds[i].Reason, maxHookReasonBytes)
		boundText(&ds[i].Error, maxHookReasonBytes)
	}
}

func boundSummary(s *hooks.Summary, contextBudget int) {
	boundText(&s.AdditionalContext, contextLimit(contextBudget))
	boundHalt(s.Halt)
	boundDecisions(s.Decisions)
}

// boundPreToolUse also drops the arguments the workflow already has:
// FinalArgs is read only when a hook changed them.
func boundPreToolUse(r *hooks.PreToolUseResult, contextBudget int) {
	if !r.ArgsMutated {
		r.FinalArgs = nil
	} else {
		r.Action.UpdatedArgs = nil
	}
	boundText(&r.AdditionalContext, contextLimit(contextBudget))
	boundText(&r.Action.AdditionalContext, contextLimit(contextBudget))
	boundText(&r.Action.Reason, maxHookReasonBytes)
	boundHalt(r.Action.Halt)
	boundHalt(r.Halt)
	boundDecisions(r.Decisions)
}

func boundPermissionRequest(r *hooks.PermissionRequestResult) {
	boundText(&r.Decision.Reason, maxHookReasonBytes)
	boundHalt(r.Halt)
	boundDecisions(r.Decisions)
}

// boundPostToolUse also drops FinalContent when no hook changed it: the
// workflow then keeps the content it passed in.
func boundPostToolUse(r *hooks.PostToolUseResult, contextBudget, resultBudget int) {
	if !r.Mutated {
		r.FinalContent = ""
	} else if resultBudget > 0 {
		boundText(&r.FinalContent, resultBudget)
	}
	boundText(&r.AdditionalContext, contextLimit(contextBudget))
	boundHalt(r.Halt)
	boundDecisions(r.Decisions)
}

func boundUserPromptSubmit(r *hooks.UserPromptSubmitResult) {
	boundText(&r.Reason, maxHookReasonBytes)
	boundText(&r.AdditionalContext, maxHookContextBytes)
	boundHalt(r.Halt)
	boundDecisions(r.Decisions)
}

func boundStop(r *hooks.StopResult) {
	boundText(&r.Reason, maxHookReasonBytes)
	boundText(&r.AdditionalContext, maxHookContextBytes)
	boundHalt(r.Halt)
	boundDecisions(r.Decisions)
}

func boundPostToolBatch(r *hooks.PostToolBatchResult) {
	boundText(&r.AdditionalContext, maxHookContextBytes)
	boundHalt(r.Halt)
	boundDecisions(r.Decisions)
}

func boundPermissionDenied(r *hooks.PermissionDeniedResult) {
	boundText(&r.AdditionalContext, maxHookContextBytes)
	boundDecisions(r.Decisions)
}

// checkRewrittenArgs refuses arguments a PreToolUse hook rewrote past the
// call's share of StepArgumentBudget (ev.ArgsBudget).
func checkRewrittenArgs(ev hooks.PreToolUseEvent, r hooks.PreToolUseResult) error {
	if ev.ArgsBudget <= 0 || !r.ArgsMutated {
		return nil
	}
	raw, err := json.Marshal(r.FinalArgs)
	if err != nil || len(raw) <= ev.ArgsBudget {
		return nil
	}
	return fenixerr.PayloadTooLarge("the arguments PreToolUse hooks rewrote for tool %q are %d bytes, over the %d bytes each call's may be when the model makes several calls at once (they share %d bytes)",
		ev.ToolName, len(raw), ev.ArgsBudget, StepArgumentBudget).WithTool(ev.ToolName).WithCode("step_argument_budget")
}
