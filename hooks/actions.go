package hooks

// Kind tags an action. Actions travel as activity results, so they are flat
// tagged structs rather than Go interfaces: {"kind":"block","reason":"..."}.
type Kind string

// PreToolUse kinds.
const (
	KindContinue           Kind = "continue"
	KindBlock              Kind = "block"
	KindMutateInput        Kind = "mutate_input"
	KindPermissionRequired Kind = "permission_required"
	// KindDefer parks the call until someone outside the run decides
	// (Claude Code's permissionDecision "defer"): Fenix asks through
	// decide_permission without running PermissionRequest hooks.
	KindDefer Kind = "defer"
)

// PostToolUse kind (besides KindContinue).
const KindMutateOutput Kind = "mutate_output"

// PermissionRequest kinds.
const (
	KindAllow     Kind = "allow"
	KindDeny      Kind = "deny"
	KindNoOpinion Kind = "no_opinion"
)

// KindRan marks a hook that handled a fire-and-forget event.
const KindRan Kind = "ran"

// Halt asks to end the whole turn (Claude Code's "continue": false), not
// just the current call. It takes precedence over the event's own decision.
type Halt struct {
	Reason string `json:"reason"`
	// Hook names the hook that asked; the registry fills it in.
	Hook string `json:"hook,omitempty"`
}

// PreToolUseAction is a hook's answer before a tool runs. The zero value is
// Continue.
type PreToolUseAction struct {
	Kind Kind `json:"kind"`
	// Reason says why a call is blocked (KindBlock).
	Reason string `json:"reason,omitempty"`
	// UpdatedArgs replaces the tool arguments (KindMutateInput). Nil means
	// "arguments unchanged", so a hook can add context alone; an empty
	// non-nil map means "call with no arguments".
	UpdatedArgs map[string]any `json:"updated_args,omitzero"`
	// AdditionalContext is text for the model (KindMutateInput).
	AdditionalContext string `json:"additional_context,omitempty"`
	// Permission and ToolName describe what must be approved
	// (KindPermissionRequired).
	Permission string `json:"permission,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// Halt ends the turn; the call is blocked.
	Halt *Halt `json:"halt,omitempty"`
}

// Continue lets the tool run unchanged.
func Continue() PreToolUseAction { return PreToolUseAction{Kind: KindContinue} }

// Block stops the tool call; reason is shown to the model and in the trace.
func Block(reason string) PreToolUseAction {
	return PreToolUseAction{Kind: KindBlock, Reason: reason}
}

// MutateInput replaces the tool arguments (nil keeps them) and adds context
// for the model ("" adds none).
func MutateInput(updatedArgs map[string]any, additionalContext string) PreToolUseAction {
	return PreToolUseAction{Kind: KindMutateInput, UpdatedArgs: updatedArgs, AdditionalContext: additionalContext}
}

// AddContext adds context for the model without touching the arguments.
func AddContext(additionalContext string) PreToolUseAction {
	return MutateInput(nil, additionalContext)
}

// RequirePermission asks the caller to obtain permission before the tool
// runs.
func RequirePermission(permission, toolName string) PreToolUseAction {
	return PreToolUseAction{Kind: KindPermissionRequired, Permission: permission, ToolName: toolName}
}

// AllowCall is an explicit allow (Claude Code's permissionDecision
// "allow"): the call runs as with Continue, and the trace records the
// hook as the one that allowed it. It does not outrank another hook's ask
// or block, nor a deny or ask permission rule.
func AllowCall(reason string) PreToolUseAction {
	return PreToolUseAction{Kind: KindAllow, Reason: reason}
}

// Defer parks the call for a decision from outside the run.
func Defer(reason, toolName string) PreToolUseAction {
	return PreToolUseAction{Kind: KindDefer, Permission: reason, ToolName: toolName}
}

func (a PreToolUseAction) kind() Kind {
	if a.Kind == "" {
		return KindContinue
	}
	return a.Kind
}

// PostToolUseAction is a hook's answer after a tool ran. The zero value is
// Continue.
type PostToolUseAction struct {
	Kind           Kind   `json:"kind"`
	UpdatedContent string `json:"updated_content,omitempty"`
	// AdditionalContext is text for the model next to the tool result.
	AdditionalContext string `json:"additional_context,omitempty"`
	Halt              *Halt  `json:"halt,omitempty"`
}

// KeepOutput leaves the tool output unchanged.
func KeepOutput() PostToolUseAction { return PostToolUseAction{Kind: KindContinue} }

// MutateOutput replaces the tool output shown to the model.
func MutateOutput(updatedContent string) PostToolUseAction {
	return PostToolUseAction{Kind: KindMutateOutput, UpdatedContent: updatedContent}
}

func (a PostToolUseAction) kind() Kind {
	if a.Kind == "" {
		return KindContinue
	}
	return a.Kind
}

// PermissionDecision is a hook's answer to a permission request. The zero
// value is NoOpinion.
type PermissionDecision struct {
	Kind   Kind   `json:"kind"`
	Reason string `json:"reason,omitempty"`
	// UpdatedArgs replaces the tool arguments of an allowed call.
	UpdatedArgs map[string]any `json:"updated_args,omitzero"`
	Halt        *Halt          `json:"halt,omitempty"`
}

// Allow settles a permission request in favour of the call.
func Allow(reason string) PermissionDecision {
	return PermissionDecision{Kind: KindAllow, Reason: reason}
}

// Deny settles a permission request against the call.
func Deny(reason string) PermissionDecision {
	return PermissionDecision{Kind: KindDeny, Reason: reason}
}

// NoOpinion leaves a permission request to the next hook or a human.
func NoOpinion() PermissionDecision { return PermissionDecision{Kind: KindNoOpinion} }

func (d PermissionDecision) kind() Kind {
	if d.Kind == "" {
		return KindNoOpinion
	}
	return d.Kind
}

// PromptAction is a hook's answer to a submitted prompt. The zero value
// lets the prompt through.
type PromptAction struct {
	// Kind is KindContinue or KindBlock (the turn ends without a model call).
	Kind              Kind   `json:"kind"`
	Reason            string `json:"reason,omitempty"`
	AdditionalContext string `json:"additional_context,omitempty"`
	Halt              *Halt  `json:"halt,omitempty"`
}

// StopAction is a hook's answer when an agent is about to stop. The zero
// value lets it stop.
type StopAction struct {
	// Kind is KindContinue (stop) or KindBlock (take another step, with
	// Reason as the instruction).
	Kind   Kind   `json:"kind"`
	Reason string `json:"reason,omitempty"`
	// AdditionalContext is feedback that also keeps the agent going.
	AdditionalContext string `json:"additional_context,omitempty"`
	// Halt ends the turn for good, whatever other hooks said.
	Halt *Halt `json:"halt,omitempty"`
}

// BatchAction is a hook's answer after a step's tool calls. The zero value
// lets the loop continue.
type BatchAction struct {
	// Kind is KindContinue or KindBlock (the loop stops before the next
	// model call).
	Kind              Kind   `json:"kind"`
	Reason            string `json:"reason,omitempty"`
	AdditionalContext string `json:"additional_context,omitempty"`
	Halt              *Halt  `json:"halt,omitempty"`
}

// DeniedAction is a hook's answer to a permission denial.
type DeniedAction struct {
	// Retry tells the model it may try the call again; the denial stands.
	Retry             bool   `json:"retry,omitempty"`
	AdditionalContext string `json:"additional_context,omitempty"`
}

// Feedback is what a FeedbackHook answers to an event that has no decision
// to make: context for the model, or a request to end the turn.
type Feedback struct {
	AdditionalContext string `json:"additional_context,omitempty"`
	Halt              *Halt  `json:"halt,omitempty"`
	// SessionEnv is what a SessionStart hook wrote to $CLAUDE_ENV_FILE
	// for the session's later shell commands (see JoinSessionEnv).
	SessionEnv string `json:"session_env,omitempty"`
	// Block is a hook's reason to refuse what the event announces; only
	// PreCompact's compaction (then left out) and ConfigChange's reload
	// (then not made) can be refused.
	Block string `json:"block,omitempty"`
}
