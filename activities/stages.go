package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

// MaxToolResultBytes caps a raw tool result so it always fits in a
// Temporal payload (2 MiB) with room for the rest of the event.
const MaxToolResultBytes = 1 << 20

// StepResultBudget is what the raw results of one agent step's calls may
// add up to. The calls run in parallel, and the results of their stages
// (local activities' markers, or regular stages' inputs) reach the server
// in one workflow task, whose gRPC message is limited to 4 MB: four
// parallel reads of 1 MiB failed it (GrpcMessageTooLarge) on every retry
// and the turn never ended; three did not. Each of n calls may return
// StepResultBudget/n.
const StepResultBudget = 2 << 20

// tracePreviewBytes caps content copied into trace entries: the trace is
// for humans and is repeated in queries and the result, the full content
// is already in the stage result.
const tracePreviewBytes = 512

// ReviewToolCallInput is ReviewToolCall's input.
type ReviewToolCallInput struct {
	ToolCall     contract.ToolCall     `json:"tool_call"`
	AgentContext contract.AgentContext `json:"agent_context"`
	// Lean (fenix-shape 5) asks for the subscribed hook events and leaves
	// the call, which the workflow already has, out of the result.
	Lean bool `json:"lean,omitempty"`
	// ConversationSessions (fenix-shape 6) answers a lean review with
	// Claude dialect hooks following the conversation: they need the
	// SessionStart stage (the session claim) and not the run's SessionStop.
	ConversationSessions bool `json:"conversation_sessions,omitempty"`
}

// ReviewToolCallResult is the approved call and where it must run.
type ReviewToolCallResult struct {
	// ToolCall is empty in a Lean review's recorded result (the workflow
	// has the call) and then left out of it.
	ToolCall contract.ToolCall `json:"tool_call,omitzero"`
	Tool     tools.Descriptor  `json:"tool"`
	// TaskQueue is where ExecuteTool must run; empty means the shared queue.
	TaskQueue string `json:"task_queue,omitempty"`
	// PolicyFingerprint identifies the policy that approved the call.
	PolicyFingerprint string              `json:"policy_fingerprint,omitempty"`
	Trace             contract.TraceEntry `json:"trace"`
	// Hooks is set for a Lean review: the events with a hook to run.
	Hooks *HookSubscription `json:"hooks,omitempty"`
	// ArgsHash is set for a Lean review, which does not repeat the call:
	// contract.ArgumentsHash of the reviewed arguments, so a local tool's
	// execution (whose marker records no input) can still be proven to
	// have run with them.
	ArgsHash string `json:"args_hash,omitempty"`
}

// ReviewToolCall applies the seed's two checks (supported, then visible),
// validates the arguments and decides where the tool runs: registry-backed
// tools run on the queue of the host that owns their resource.
// A rejection carries the policy fingerprint in its failure details.
func (a *Activities) ReviewToolCall(_ context.Context, in ReviewToolCallInput) (ReviewToolCallResult, error) {
	fingerprint := a.hookRegistry().PolicyFingerprint(in.AgentContext.AllowedToolNames)
	def, err := a.Tools.Review(in.ToolCall, in.AgentContext)
	if err != nil {
		a.logRefusal(StageReviewToolCall, in.ToolCall, err)
		return fail[ReviewToolCallResult](fenixerr.As(err).WithPolicyFingerprint(fingerprint))
	}
	queue := ""
	if def.RegistryBacked {
		queue, err = a.hostQueueFor(def, in.ToolCall)
		if err != nil {
			return fail[ReviewToolCallResult](err)
		}
	}
	desc := def.Descriptor
	desc.Schema = nil // already enforced; keep it out of history
	if in.Lean {
		return a.leanReview(in, desc, queue, fingerprint), nil
	}
	return ReviewToolCallResult{
		ToolCall:          in.ToolCall,
		Tool:              desc,
		TaskQueue:         queue,
		PolicyFingerprint: fingerprint,
		Trace: contract.Trace(StageReviewToolCall,
			"tool_name", in.ToolCall.ToolName,
			"call_id", in.ToolCall.CallID,
			"registry_backed", def.RegistryBacked,
			"idempotent", def.Idempotent,
			"local", def.Local,
			"task_queue", queue,
			"policy_fingerprint", fingerprint,
		),
	}, nil
}

// hostQueueFor pins a registry-backed call on an existing resource to the
// queue of the host that owns it. A call that creates a resource runs on
// the shared queue: whichever worker runs it owns what it creates (the
// resource ID names that host), and staying on the workflow's queue lets
// the server hand the task to this worker eagerly, without a round trip.
func (a *Activities) hostQueueFor(def tools.Definition, call contract.ToolCall) (string, error) {
	resource := def.OwnerResource(call.Arguments)
	if resource == "" {
		return "", nil
	}
	hostID, ok := tools.HostOfResource(resource)
	if !ok {
		return "", fenixerr.Validation("%q is not a resource ID of this cluster (expected <kind>_<host>_<id>)", resource).WithTool(call.ToolName)
	}
	return tools.HostQueue(hostID), nil
}

// ExecuteToolInput is ExecuteTool's input.
type ExecuteToolInput struct {
	ToolCall       contract.ToolCall `json:"tool_call"`
	WorkspaceRoot  string            `json:"workspace_root,omitempty"`
	ConversationID string            `json:"conversation_id"`
	TurnID         string            `json:"turn_id"`
	AgentProfile   string            `json:"agent_profile"`
	// ReachedPath is the file the call's "path" led to when PreToolUse
	// judged it (PreToolUseHooksResult.ReachedPath): the tool may open
	// that path only if it still leads there.
	ReachedPath string `json:"reached_path,omitempty"`
	// SessionEnv is the session's $CLAUDE_ENV_FILE lines
	// (tools.Env.SessionEnv).
	SessionEnv string `json:"session_env,omitempty"`
	// ResultBudget, when positive and under MaxToolResultBytes, is what
	// this call's raw result may be: the calls of one agent step share
	// StepResultBudget, since their stages' results reach one workflow
	// task.
	ResultBudget int `json:"result_budget,omitempty"`
}

// ExecuteToolResult is the executor's raw result.
type ExecuteToolResult struct {
	Raw        json.RawMessage     `json:"raw"`
	DurationMs int64               `json:"duration_ms"`
	Trace      contract.TraceEntry `json:"trace"`
}

// ExecuteTool runs the reviewed call. Long tools heartbeat so a
// cancellation reaches them and a dead worker is noticed.
func (a *Activities) ExecuteTool(ctx context.Context, in ExecuteToolInput) (ExecuteToolResult, error) {
	def, ok := a.Tools.Lookup(in.ToolCall.ToolName)
	if !ok {
		return fail[ExecuteToolResult](fenixerr.UnsupportedTool(in.ToolCall.ToolName))
	}
	// Only a tool that works in the workspace gets it, or one that may
	// write there by its own means (an MCP server's), to report what it
	// changed: opening one (a descriptor, the protected paths) is most of
	// a calculator call's ExecuteTool, and PrepareTurn has already checked
	// the root.
	var ws *workspace.Workspace
	if def.NeedsWorkspace || def.WatchesWorkspace {
		opened, err := a.openWorkspace(in.WorkspaceRoot, def.NeedsWorkspace)
		if err != nil {
			return fail[ExecuteToolResult](err)
		}
		if ws = opened; ws != nil {
			defer ws.Close()
		}
		// Hooks that run each workspace's own scripts (a fleet's settings)
		// pin them before the agent's first act there, not at their own
		// first run, which a call they do not match may precede.
		if root, err := a.resolveWorkspaceRoot(in.WorkspaceRoot); err == nil {
			a.hookRegistry().PinWorkspace(root)
		}
	}
	progress := newProgressSink(ctx, in.ToolCall.CallID)
	progress.redactor = a.Redactor
	stopHeartbeat := startHeartbeat(ctx, progress)
	defer stopHeartbeat()

	env := &tools.Env{
		CallID:         in.ToolCall.CallID,
		ConversationID: in.ConversationID,
		TurnID:         in.TurnID,
		AgentProfile:   in.AgentProfile,
		RunID:          workflowID(ctx),
		Blobs:          a.Contexts,
		Workspace:      ws,
		Progress:       progress.emit,
		ReportResource: progress.reportResource,
		Logger:         a.logger().With("tool", in.ToolCall.ToolName, "call_id", in.ToolCall.CallID),
		Host:           a.Host,
		ContactLost:    func() bool { return contactLost(context.Cause(ctx)) },
		SessionEnv:     in.SessionEnv,
		AskNetwork:     networkAsker(ctx, in.ToolCall, in.ConversationID, a.NetworkMemory),
		Elicit:         elicitor(ctx, in.ToolCall),
	}
	a.judgeWorkspace(env, pinOf(in.ToolCall.Arguments, in.ReachedPath))
	started := time.Now()
	raw, err := a.Tools.Execute(ctx, env, in.ToolCall)
	progress.flush()
	if err != nil {
		status := ToolStatusError
		if ctx.Err() != nil {
			status = ToolStatusCanceled
		}
		a.metrics().ToolCall(in.ToolCall.ToolName, status)
		err = a.redactToolError(err)
		a.logRefusal(StageExecuteTool, in.ToolCall, err)
		return fail[ExecuteToolResult](ctxErr(ctx, err))
	}
	a.metrics().ToolCall(in.ToolCall.ToolName, ToolStatusOK)
	// Secrets are removed here, before the result is recorded in history.
	raw, redactions, err := a.Redactor.JSON(raw)
	if err != nil {
		return fail[ExecuteToolResult](fenixerr.Runtime("redacting the result of tool %q: %v", in.ToolCall.ToolName, err).WithTool(in.ToolCall.ToolName))
	}
	if in.ResultBudget > 0 && in.ResultBudget < MaxToolResultBytes && len(raw) > in.ResultBudget {
		return fail[ExecuteToolResult](fenixerr.PayloadTooLarge("result of tool %q is %d bytes, over the %d bytes each call may return when the model makes several calls at once (they share %d bytes): ask for less per call, or make fewer calls at once",
			in.ToolCall.ToolName, len(raw), in.ResultBudget, StepResultBudget).WithTool(in.ToolCall.ToolName).WithCode("step_result_budget"))
	}
	if len(raw) > MaxToolResultBytes {
		return fail[ExecuteToolResult](fenixerr.PayloadTooLarge("result of tool %q is %d bytes, over the %d-byte limit for a stage result", in.ToolCall.ToolName, len(raw), MaxToolResultBytes).WithTool(in.ToolCall.ToolName))
	}
	duration := time.Since(started).Milliseconds()
	trace := contract.Trace(StageExecuteTool,
		"tool_name", in.ToolCall.ToolName,
		"call_id", in.ToolCall.CallID,
		"duration_ms", duration,
		"result_bytes", len(raw),
		"redactions", redactions,
	)
	if in.SessionEnv != "" {
		trace.Fields["session_env_bytes"] = len(in.SessionEnv)
	}
	return ExecuteToolResult{Raw: raw, DurationMs: duration, Trace: trace}, nil
}

// contactLost reports whether the SDK ended an activity's context because
// its heartbeat failed — the server no longer knows the attempt (it timed
// out) or could not be reached within the heartbeat's retry window — as
// opposed to a requested cancellation (*temporal.CanceledError), a pause or
// reset, a deadline, or the worker shutting down (context.Canceled). The SDK
// passes the heartbeat's error as the cancellation cause.
func contactLost(cause error) bool {
	var serverErr serviceerror.ServiceError
	return errors.As(cause, &serverErr)
}

func (a *Activities) openWorkspace(root string, required bool) (*workspace.Workspace, error) {
	if root == "" {
		root = a.DefaultWorkspaceRoot
	}
	if root == "" {
		if required {
			return nil, fenixerr.Validation("no workspace root: pass workspace_root in the assignment or set FENIX_WORKSPACE_ROOT on the worker")
		}
		return nil, nil
	}
	bases, err := a.bases()
	if err != nil {
		return nil, err
	}
	ws, err := bases.Open(root)
	if err != nil {
		return nil, err
	}
	a.guardWorkspace(ws)
	return ws, nil
}

// guardWorkspace keeps a workspace's tools out of what is the worker's:
// the scripts and settings loaded hooks run and the worker's own
// configuration are never writable, its private files (data directory,
// keys, audit files) neither readable nor writable.
func (a *Activities) guardWorkspace(ws *workspace.Workspace) {
	GuardWorkspace(ws, a.hookRegistry(), a.protectedPaths(), a.Private)
}

// GuardWorkspace protects in ws what hooks run or configure, the paths
// protected (never written) and private (neither read nor written).
func GuardWorkspace(ws *workspace.Workspace, registry *hooks.Registry, protected, private []string) {
	ws.Protect(registry.ProtectedPaths())
	ws.Protect(protected, nil)
	ws.Hide(private)
}

// protectedPaths is LiveProtected's list where one is loaded, else
// Protected.
func (a *Activities) protectedPaths() []string {
	if a.LiveProtected != nil {
		if p := a.LiveProtected.Load(); p != nil {
			return *p
		}
	}
	return a.Protected
}

// ProjectToolResultInput is ProjectToolResult's input.
type ProjectToolResultInput struct {
	ToolCall contract.ToolCall `json:"tool_call"`
	Raw      json.RawMessage   `json:"raw"`
}

// ProjectToolResultResult is the narrative projection.
type ProjectToolResultResult struct {
	Projection tools.Projection    `json:"projection"`
	Trace      contract.TraceEntry `json:"trace"`
}

// ProjectToolResult dispatches to the tool's projector.
func (a *Activities) ProjectToolResult(_ context.Context, in ProjectToolResultInput) (ProjectToolResultResult, error) {
	p, err := a.Tools.Project(in.ToolCall, in.Raw)
	if err != nil {
		return fail[ProjectToolResultResult](err)
	}
	return ProjectToolResultResult{
		Projection: p,
		Trace: contract.Trace(StageProjectToolResult,
			"tool_name", in.ToolCall.ToolName,
			"content", preview(p.Content),
			"content_bytes", len(p.Content),
		),
	}, nil
}

// FinalizeOutputInput is FinalizeOutput's input.
type FinalizeOutputInput struct {
	Content        string         `json:"content"`
	Data           map[string]any `json:"data,omitempty"`
	ConversationID string         `json:"conversation_id"`
	TurnID         string         `json:"turn_id"`
}

// FinalizeOutputResult is the anchored output.
type FinalizeOutputResult struct {
	Output contract.Output     `json:"output"`
	Trace  contract.TraceEntry `json:"trace"`
}

// FinalizeOutput anchors the content to its conversation and turn.
func (a *Activities) FinalizeOutput(_ context.Context, in FinalizeOutputInput) (FinalizeOutputResult, error) {
	out := FinalizeOutput(in)
	return FinalizeOutputResult{
		Output: out,
		Trace: contract.Trace(StageFinalizeOutput,
			"output", preview(out.Content),
			"conversation_id", out.ConversationID,
			"turn_id", out.TurnID,
		),
	}, nil
}

// FinalizeOutput is the pure anchoring rule.
func FinalizeOutput(in FinalizeOutputInput) contract.Output {
	return contract.Output{Content: in.Content, ConversationID: in.ConversationID, TurnID: in.TurnID, Data: in.Data}
}

// HandleErrorInput describes the failure to report.
type HandleErrorInput struct {
	Error          ErrorInfo                `json:"error"`
	LogicalWorkID  string                   `json:"logical_work_id"`
	AttemptNo      int                      `json:"attempt_no"`
	ToolInvocation *contract.ToolInvocation `json:"tool_invocation,omitempty"`
}

// ErrorInfo is a classified error as the workflow saw it.
type ErrorInfo struct {
	Type    string `json:"type"`
	Class   string `json:"class"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Tool    string `json:"tool,omitempty"`
	Stage   string `json:"stage,omitempty"`
}

// ErrorInfoOf captures a classified error for HandleError.
func ErrorInfoOf(stage string, err *fenixerr.Error) ErrorInfo {
	return ErrorInfo{Type: err.Type, Class: string(err.Class), Code: err.Code, Message: err.Message, Tool: err.Tool, Stage: stage}
}

// HandleErrorResult is the failure payload.
type HandleErrorResult struct {
	Failure contract.Failure    `json:"failure"`
	Trace   contract.TraceEntry `json:"trace"`
}

// HandleError builds the standard failure payload.
func (a *Activities) HandleError(_ context.Context, in HandleErrorInput) (HandleErrorResult, error) {
	f := BuildFailure(in)
	return HandleErrorResult{Failure: f, Trace: FailureTrace(f)}, nil
}

// BuildFailure is the pure HandleError rule: failure_kind runtime_error
// (canceled for cancellations), never retryable, with the classification
// and the failed tool invocation when there was one.
func BuildFailure(in HandleErrorInput) contract.Failure {
	kind := contract.FailureRuntimeError
	if in.Error.Type == fenixerr.TypeCanceled {
		kind = contract.FailureCanceled
	}
	f := contract.Failure{
		FailureKind:      kind,
		Retryable:        false,
		LogicalWorkID:    in.LogicalWorkID,
		AttemptNo:        in.AttemptNo,
		LastErrorSummary: in.Error.Message,
		Classification:   in.Error.Class,
		Code:             in.Error.Code,
		ErrorType:        in.Error.Type,
		Stage:            in.Error.Stage,
	}
	if in.ToolInvocation != nil {
		inv := *in.ToolInvocation
		inv.Status = "failed"
		f.ToolInvocations = []contract.ToolInvocation{inv}
	}
	return f
}

// FailureTrace is handle_error's trace entry.
func FailureTrace(f contract.Failure) contract.TraceEntry {
	return contract.Trace(StageHandleError,
		"error", f.LastErrorSummary,
		"error_type", f.ErrorType,
		"classification", f.Classification,
		"code", f.Code,
		"stage", f.Stage,
	)
}

// preview shortens content for trace entries, on a rune boundary.
func preview(s string) string {
	if len(s) <= tracePreviewBytes {
		return s
	}
	cut := tracePreviewBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [%d bytes]", s[:cut], len(s))
}

// currentActivity returns the activity info, or false outside an activity
// (unit tests call stage methods directly).
// workflowID is the ID of the workflow the activity runs for, empty
// outside an activity.
func workflowID(ctx context.Context) string {
	info, _ := currentActivity(ctx)
	return info.WorkflowExecution.ID
}

func currentActivity(ctx context.Context) (activity.Info, bool) {
	if !activity.IsActivity(ctx) {
		return activity.Info{}, false
	}
	return activity.GetInfo(ctx), true
}

// redactToolError removes secrets from a tool's error as from its result:
// the message reaches history, the audit log and the model. A redacted
// error drops its cause, whose text history would record too.
func (a *Activities) redactToolError(err error) error {
	if err == nil || a.Redactor == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var fe *fenixerr.Error
	if !errors.As(err, &fe) {
		// A plain error is a runtime error (fenixerr.ToTemporal); an
		// error the tool built for Temporal itself is passed on as is.
		var appErr interface{ NonRetryable() bool }
		if errors.As(err, &appErr) {
			return err
		}
	}
	fe = fenixerr.As(err)
	msg, n := a.Redactor.String(fe.Message)
	if cause := fe.Cause; n == 0 && cause != nil {
		if _, m := a.Redactor.String(cause.Error()); m == 0 {
			return err
		}
	} else if n == 0 {
		return err
	}
	out := *fe
	out.Message, out.Cause = msg, nil
	return &out
}
