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
