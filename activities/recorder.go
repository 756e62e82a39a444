package activities

import "time"

// Recorder receives Fenix's own measurements. Activities call it so they
// stay free of Prometheus types (internal/observability.Metrics implements
// it); tests pass NopRecorder. Record from
// activities only: workflow code replays, and would count twice.
type Recorder interface {
	// StageDone records a finished stage; errType is "" on success, else
	// the stage's error type (fenixerr), which also counts a failure.
	StageDone(stage string, d time.Duration, errType string)
	// ToolCall counts one tool call by its outcome (ToolStatus*).
	ToolCall(tool, status string)
	// HookDecision counts one aggregated hook verdict, e.g. event
	// "PreToolUse", kind "block".
	HookDecision(event, kind string)
	// PermissionDecision counts an answered permission request: decision
	// "allow" or "deny", decidedBy the hook name or "user".
	PermissionDecision(decision, decidedBy string)
	// ModelTokens adds n tokens of a kind (TokenKind*).
	ModelTokens(kind string, n int)
}

// Label values shared by Recorder callers, so dashboards can rely on them.
const (
	ToolStatusOK       = "ok"
	ToolStatusError    = "error"
	ToolStatusBlocked  = "blocked"
	ToolStatusCanceled = "canceled"

	TokenKindPrompt     = "prompt"
	TokenKindCompletion = "completion"
)

// NopRecorder discards everything.
type NopRecorder struct{}

func (NopRecorder) StageDone(string, time.Duration, string) {}
func (NopRecorder) ToolCall(string, string)                 {}
func (NopRecorder) HookDecision(string, string)             {}
func (NopRecorder) PermissionDecision(string, string)       {}
func (NopRecorder) ModelTokens(string, int)                 {}
