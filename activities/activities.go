// Package activities adapts Fenix's domain packages to Temporal: one
// Activities struct holds the dependencies and has a method per hook stage.
// Each method is thin — decode, call the domain package, return a typed
// result carrying the stage's trace entry — and converts every error into a
// classified, non-retryable Temporal application error (fenixerr), except
// transient infrastructure errors, which idempotent stages may retry.
package activities

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/fenixrt/fenix/agent/compaction"
	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/prompt"
	"github.com/fenixrt/fenix/agent/skills"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/redact"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

// Stage names: the trace "hook" values and the words used in summaries.
const (
	StagePrepareTurn       = "prepare_turn"
	StageCompactContext    = "compact_context"
	StageReviewToolCall    = "review_tool_call"
	StageExecuteTool       = "execute_tool"
	StageProjectToolResult = "project_tool_result"
	StageFinalizeOutput    = "finalize_output"
	StageHandleError       = "handle_error"
	StageSkills            = "skills"
)

// Activities holds what the stages need. One instance is registered per
// worker; its methods are safe for concurrent use.
type Activities struct {
	Tools *tools.Registry
	// Contexts stores message lists too large to inline in history.
	Contexts contextstore.Store
	// Host is this worker's host identity and host-local tool resources.
	Host *tools.Host
	// DefaultWorkspaceRoot is used when an assignment has no workspace_root.
	DefaultWorkspaceRoot string
	// WorkspaceBases is the allow-list every workspace root must resolve
	// inside (FENIX_WORKSPACE_BASES); nil means DefaultWorkspaceRoot alone.
	WorkspaceBases *workspace.Bases
	Estimator      compaction.Estimator
	// InlineLimit is the largest message list kept inline between stages.
	InlineLimit int
	Logger      *slog.Logger
	// Assembler builds the round's prompt (profiles, skills, operator
	// snapshot); nil means inline prompt sections only.
	Assembler *prompt.Assembler
	// Skills serves the skill flow; nil makes skill modes unavailable.
	Skills *skills.Catalog
	// Summarizers are the summary-compaction backends by name; the
	// extractive one is always available.
	Summarizers map[string]compaction.Summarizer
	// Hooks is the lifecycle hook registry (built-ins, command and http
	// hooks, custom Go hooks); nil means no hooks.
	Hooks *hooks.Registry
	// LiveHooks, when set and loaded, overrides Hooks: the worker swaps
	// in a reloaded registry there (SIGHUP) while activities run.
	LiveHooks *atomic.Pointer[hooks.Registry]
	// Transcripts writes the transcript file command and http hooks read
	// through transcript_path; nil leaves transcript_path empty.
	Transcripts *claudecode.TranscriptWriter
	// Model answers AgentTurn's model calls (a router over the scripted
	// and OpenAI-compatible providers).
	Model llm.Provider
	// Metrics records tool calls, hook decisions and model tokens; stage
	// durations are recorded by a worker interceptor.
	Metrics Recorder
	// Redactor removes secrets from tool results and streamed output
	// before they reach history; nil redacts nothing.
	Redactor *redact.Redactor
	// Audit records permission decisions; nil records none.
	Audit audit.Store
	// Sessions answers conversation-session claims (fenix-shape 6); nil
	// starts a session for every run.
	Sessions SessionClaimer
	// NetworkMemory keeps the hosts people allowed a conversation's
	// sandboxed commands; nil: each run asks anew.
	NetworkMemory NetworkMemory
	// InboxURL is the approvals inbox that permission_prompt
	// notifications link to; empty adds no link.
	InboxURL string
	// Protected are further absolute paths tools never write, beside the
	// hooks' own: the MCP configurations the worker loaded, which name the
	// commands it launches when it starts, and the scripts those launch.
	Protected []string
	// LiveProtected, when set and loaded, overrides Protected: a reload
	// (SIGHUP) that adds MCP servers protects what they launch at once.
	LiveProtected *atomic.Pointer[[]string]
	// Private are absolute paths tools neither read nor write, where a
	// workspace holds them (a workspace of the worker's home): the
	// worker's data directory, keys and audit files, which commands are
	// kept out of too.
	Private []string
}

func (a *Activities) metrics() Recorder {
	if a.Metrics == nil {
		return NopRecorder{}
	}
	return a.Metrics
}

// bases is the workspace allow-list: WorkspaceBases, else the default
// root alone (FENIX_WORKSPACE_BASES defaults to FENIX_WORKSPACE_ROOT).
func (a *Activities) bases() (*workspace.Bases, error) {
	if a.WorkspaceBases != nil {
		return a.WorkspaceBases, nil
	}
	b, err := workspace.DefaultBases(a.DefaultWorkspaceRoot)
	if err != nil {
		return nil, fenixerr.Runtime("workspace bases: %v", err)
	}
	return b, nil
}

// resolveWorkspaceRoot checks a workspace root (or the worker default when
// root is empty) against the bases and returns its resolved form; "" when
// neither is set.
func (a *Activities) resolveWorkspaceRoot(root string) (string, error) {
	if root == "" {
		root = a.DefaultWorkspaceRoot
	}
	if root == "" {
		return "", nil
	}
	bases, err := a.bases()
	if err != nil {
		return "", err
	}
	resolved, _, err := bases.Resolve(root)
	return resolved, err
}

func (a *Activities) estimator() compaction.Estimator {
	if a.Estimator == nil {
		return compaction.WordEstimator{}
	}
	return a.Estimator
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// logRefusal logs an expected refusal (fenixerr.Error.Expected) at info:
// the Temporal SDK logs it at debug only, and it is no error of Fenix's.
func (a *Activities) logRefusal(stage string, call contract.ToolCall, err error) {
	if fe := fenixerr.As(err); fe.Expected() {
		a.logger().Info("tool call refused", "stage", stage, "tool", call.ToolName, "call_id", call.CallID,
			"error_type", fe.Type, "code", fe.Code, "reason", fe.Message)
	}
}

// fail converts a domain error at the activity boundary.
func fail[T any](err error) (T, error) {
	var zero T
	return zero, fenixerr.ToTemporal(err)
}

// ctxErr reports cancellation as the context error so the SDK records the
// stage as canceled, not failed.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
