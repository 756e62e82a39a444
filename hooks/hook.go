package hooks

import "context"

// AgentHook observes, and for some events steers, an agent run. Every
// method may return an error: it is recorded in the hook's HookDecision and
// the returned action is applied as is, so a hook chooses whether a failure
// allows (Continue) or blocks (Block) by what it returns with the error.
//
// Embed Base to get no-op defaults and implement only what you need.
type AgentHook interface {
	// Name identifies the hook in decisions, traces and block reasons.
	Name() string

	OnSessionStart(ctx context.Context, ev SessionStartEvent) error
	PreToolUse(ctx context.Context, ev PreToolUseEvent) (PreToolUseAction, error)
	PostToolUse(ctx context.Context, ev PostToolUseEvent) (PostToolUseAction, error)
	PostToolUseFailure(ctx context.Context, ev PostToolUseFailureEvent) error
	PermissionRequest(ctx context.Context, ev PermissionRequestEvent) (PermissionDecision, error)
	OnStepComplete(ctx context.Context, ev StepCompleteEvent) error
	OnSessionStop(ctx context.Context, ev SessionStopEvent) error
	OnSubagentStart(ctx context.Context, ev SubagentStartEvent) error
	OnSubagentStop(ctx context.Context, ev SubagentStopEvent) error
	OnPreCompact(ctx context.Context, ev PreCompactEvent) error
	OnPostCompact(ctx context.Context, ev PostCompactEvent) error
	OnError(ctx context.Context, ev ErrorEvent) error

	UserPromptSubmit(ctx context.Context, ev UserPromptSubmitEvent) (PromptAction, error)
	Stop(ctx context.Context, ev StopEvent) (StopAction, error)
	PostToolBatch(ctx context.Context, ev PostToolBatchEvent) (BatchAction, error)
	OnNotification(ctx context.Context, ev NotificationEvent) error
	PermissionDenied(ctx context.Context, ev PermissionDeniedEvent) (DeniedAction, error)
	OnConfigChange(ctx context.Context, ev ConfigChangeEvent) error
}

// FeedbackHook is implemented by hooks whose answer to a fire-and-forget
// event (SessionStart, PostToolUseFailure, SubagentStart, …) can carry
// feedback: context for the model or a request to end the turn. For those
// events the registry calls Feedback, with the event value (for example a
// SessionStartEvent), instead of the On… method.
type FeedbackHook interface {
	Feedback(ctx context.Context, ev any) (Feedback, error)
}

// FailClosedHook is implemented by hooks that must block rather than allow
// when they panic: a panicking guard must not wave a call through.
type FailClosedHook interface {
	FailClosed() bool
}

// EssentialHook is implemented by hooks whose work the stage they run in
// exists for (the audit log: a call must not go on unrecorded). Their
// error is not a non-blocking hook error: the decision is marked
// Essential and the stage fails (see EssentialErr), so it is retried.
type EssentialHook interface {
	Essential() bool
}

// EventFilter is implemented by hooks that handle only some events; the
// registry skips them for the others, so decisions and traces list only the
// hooks that had something to do.
type EventFilter interface {
	HandlesEvent(Event) bool
}

// Base gives every AgentHook method a no-op default. It has no Name, so a
// hook embedding it still has to name itself.
type Base struct{}

func (Base) OnSessionStart(context.Context, SessionStartEvent) error { return nil }

func (Base) PreToolUse(context.Context, PreToolUseEvent) (PreToolUseAction, error) {
	return Continue(), nil
}

func (Base) PostToolUse(context.Context, PostToolUseEvent) (PostToolUseAction, error) {
	return KeepOutput(), nil
}

func (Base) PostToolUseFailure(context.Context, PostToolUseFailureEvent) error { return nil }

func (Base) PermissionRequest(context.Context, PermissionRequestEvent) (PermissionDecision, error) {
	return NoOpinion(), nil
}

func (Base) OnStepComplete(context.Context, StepCompleteEvent) error   { return nil }
func (Base) OnSessionStop(context.Context, SessionStopEvent) error     { return nil }
func (Base) OnSubagentStart(context.Context, SubagentStartEvent) error { return nil }
func (Base) OnSubagentStop(context.Context, SubagentStopEvent) error   { return nil }
func (Base) OnPreCompact(context.Context, PreCompactEvent) error       { return nil }
func (Base) OnPostCompact(context.Context, PostCompactEvent) error     { return nil }
func (Base) OnError(context.Context, ErrorEvent) error                 { return nil }

func (Base) UserPromptSubmit(context.Context, UserPromptSubmitEvent) (PromptAction, error) {
	return PromptAction{Kind: KindContinue}, nil
}

func (Base) Stop(context.Context, StopEvent) (StopAction, error) {
	return StopAction{Kind: KindContinue}, nil
}

func (Base) PostToolBatch(context.Context, PostToolBatchEvent) (BatchAction, error) {
	return BatchAction{Kind: KindContinue}, nil
}

func (Base) OnNotification(context.Context, NotificationEvent) error { return nil }

func (Base) OnConfigChange(context.Context, ConfigChangeEvent) error { return nil }

func (Base) PermissionDenied(context.Context, PermissionDeniedEvent) (DeniedAction, error) {
	return DeniedAction{}, nil
}
