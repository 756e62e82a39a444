package activities

import (
	"github.com/fenixrt/fenix/contract"
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
)

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

func boundSummary(s *hooks.Summary) {
	boundText(&s.AdditionalContext, maxHookContextBytes)
	boundHalt(s.Halt)
	boundDecisions(s.Decisions)
}

// boundPreToolUse also drops the arguments the workflow already has:
// FinalArgs is read only when a hook changed them.
func boundPreToolUse(r *hooks.PreToolUseResult) {
	if !r.ArgsMutated {
		r.FinalArgs = nil
	} else {
		r.Action.UpdatedArgs = nil
	}
	boundText(&r.AdditionalContext, maxHookContextBytes)
	boundText(&r.Action.AdditionalContext, maxHookContextBytes)
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
func boundPostToolUse(r *hooks.PostToolUseResult) {
	if !r.Mutated {
		r.FinalContent = ""
	}
	boundText(&r.AdditionalContext, maxHookContextBytes)
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
