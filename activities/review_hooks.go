package activities

import (
	"slices"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
)

// HookSubscription is what a lean review found about the run's hooks for
// one call: the lifecycle events some hook acts on. The workflow skips the
// stage of every other event; the answer is in the review's recorded
// result, so replay makes the same choice.
type HookSubscription struct {
	Events []hooks.Event `json:"events"`
	// Answers are the events the answer covers; empty means a lean
	// review's skippableEvents (the only answer before fenix-shape 9).
	Answers []hooks.Event `json:"answers,omitempty"`
}

// Has is whether ev's stage runs: ev has a hook, or is not an event the
// answer covers, or there was no answer (nil).
func (h *HookSubscription) Has(ev hooks.Event) bool {
	if h == nil {
		return true
	}
	answers := h.Answers
	if len(answers) == 0 {
		answers = skippableEvents
	}
	return !slices.Contains(answers, ev) || slices.Contains(h.Events, ev)
}

// skippableEvents are the events whose stage the workflow leaves out when
// no hook subscribes. PermissionRequest and the turn events stay: they run
// only when asked for, or are the turn's own.
var skippableEvents = []hooks.Event{
	hooks.EventSessionStart, hooks.EventPreToolUse, hooks.EventPostToolUse,
	hooks.EventPostToolUseFailure, hooks.EventError, hooks.EventSessionStop,
}

// turnEvents are the session and turn events whose stage an agent turn
// leaves out when no hook subscribes (fenix-shape 9). SessionStart is not
// among them: its stage is the turn's first and gives the answer.
var turnEvents = []hooks.Event{
	hooks.EventUserPromptSubmit, hooks.EventPostToolBatch, hooks.EventStepComplete,
	hooks.EventStop, hooks.EventError, hooks.EventSessionStop,
}

// turnSubscription answers which of turnEvents some hook acts on for a
// run; inConversation is whether the run's conversation-scoped hooks
// follow its conversation (fenix-shape 6).
func (a *Activities) turnSubscription(inConversation bool) *HookSubscription {
	events := a.hookRegistry().Subscribed("", "", turnEvents...)
	if inConversation {
		events = a.hookRegistry().SubscribedInConversation("", "", turnEvents...)
	}
	return &HookSubscription{Events: events, Answers: turnEvents}
}

// leanReview is the review result of fenix-shape 5: no copy of the call,
// and the subscribed events (also in the trace, so a skipped stage is
// explained). The descriptor keeps what the workflow and the history
// tools read, not the description and schema written for the model (an
// MCP tool's can be kilobytes, recorded with every call).
func (a *Activities) leanReview(in ReviewToolCallInput, desc tools.Descriptor, queue, fingerprint string) ReviewToolCallResult {
	desc.Description, desc.Schema = "", nil
	mode := in.AgentContext.PermissionMode
	events := a.hookRegistry().Subscribed(mode, in.ToolCall.ToolName, skippableEvents...)
	if in.ConversationSessions {
		events = a.hookRegistry().SubscribedInConversation(mode, in.ToolCall.ToolName, skippableEvents...)
	}
	return ReviewToolCallResult{
		Tool:              desc,
		TaskQueue:         queue,
		PolicyFingerprint: fingerprint,
		Hooks:             &HookSubscription{Events: events},
		ArgsHash:          contract.ArgumentsHash(in.ToolCall.Arguments),
		Trace: contract.Trace(StageReviewToolCall,
			"tool_name", in.ToolCall.ToolName,
			"call_id", in.ToolCall.CallID,
			"registry_backed", desc.RegistryBacked,
			"idempotent", desc.Idempotent,
			"local", desc.Local,
			"task_queue", queue,
			"policy_fingerprint", fingerprint,
			"hook_events", events,
		),
	}
}
