package hooks

import (
	"encoding/json"
	"slices"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// Event names a lifecycle event. The values appear in summaries and traces.
type Event string

// The lifecycle events: the seed's nine plus error, tool failure and
// permission request, and the turn events Claude Code hooks rely on
// (prompt submission, turn stop, tool batches, notifications, denials).
const (
	EventSessionStart       Event = "session_start"
	EventPreToolUse         Event = "pre_tool_use"
	EventPostToolUse        Event = "post_tool_use"
	EventPostToolUseFailure Event = "post_tool_use_failure"
	EventPermissionRequest  Event = "permission_request"
	EventStepComplete       Event = "step_complete"
	EventSessionStop        Event = "session_stop"
	EventSubagentStart      Event = "subagent_start"
	EventSubagentStop       Event = "subagent_stop"
	EventPreCompact         Event = "pre_compact"
	EventPostCompact        Event = "post_compact"
	EventError              Event = "error"
	// EventUserPromptSubmit fires before the first model call of a turn.
	EventUserPromptSubmit Event = "user_prompt_submit"
	// EventStop fires when an agent (main or subagent) is about to end its
	// turn with a final answer; hooks may make it take another step.
	EventStop Event = "stop"
	// EventPostToolBatch fires once after all tool calls of a step resolved.
	EventPostToolBatch Event = "post_tool_batch"
	// EventNotification fires when the run needs a human (a permission is
	// pending).
	EventNotification Event = "notification"
	// EventPermissionDenied fires after a permission request was denied.
	EventPermissionDenied Event = "permission_denied"
	// EventConfigChange fires when an operator's reload would change a
	// hook settings file, outside any run; hooks may refuse the change.
	EventConfigChange Event = "config_change"
)

// AllEvents lists every event in lifecycle order.
var AllEvents = []Event{
	EventSessionStart, EventUserPromptSubmit, EventPreToolUse, EventPermissionRequest,
	EventNotification, EventPermissionDenied, EventPostToolUse, EventPostToolUseFailure,
	EventPostToolBatch, EventStepComplete, EventSubagentStart, EventSubagentStop,
	EventPreCompact, EventPostCompact, EventStop, EventError, EventSessionStop,
	EventConfigChange,
}

// Permission modes of Session.PermissionMode, Claude Code's words
// (contract.PermissionModes): the kernel names one per assignment, else a
// session runs in "default" and the settings files' defaultMode applies.
const PermissionModeDefault = "default"

// Notification types of NotificationEvent.
const (
	NotificationPermissionPrompt = "permission_prompt"
	// NotificationElicitationDialog: an MCP server asks for input.
	NotificationElicitationDialog = "elicitation_dialog"
)

// PermissionPromptMessage is a permission_prompt notification's message
// for a call of tool: the words, then the reason and where to decide.
func PermissionPromptMessage(tool string) string { return "Fenix needs your permission to use " + tool }

// Stop reasons of SessionStopEvent and SubagentStopEvent; the same words as
// the workflow result status.
const (
	StopCompleted = contract.StatusCompleted
	StopFailed    = contract.StatusFailed
	StopCanceled  = contract.StatusCanceled
)

// Session sources of SessionStartEvent.
const (
	SourceStartup = "startup"
	// SourceResume is a session continued after continue-as-new, or a
	// conversation whose session had ended (expired or ended by the
	// kernel) going on.
	SourceResume = "resume"
	// SourceCompact is a conversation's context compacted (fenix-shape 6,
	// in an agent turn); it reaches conversation-scoped hooks only.
	SourceCompact = "compact"
)

// SessionEnd reasons of SessionStopEvent.Reason for conversation-scoped
// hooks, Claude Code's words.
const (
	// EndReasonOther is an idle expiry, and every per-run stop.
	EndReasonOther = "other"
	// EndReasonPromptInputExit is the kernel ending the conversation.
	EndReasonPromptInputExit = "prompt_input_exit"
	EndReasonClear           = "clear"
	EndReasonLogout          = "logout"
)

// EndReasons lists the SessionEnd reasons the kernel may give.
var EndReasons = []string{EndReasonPromptInputExit, EndReasonClear, EndReasonLogout, EndReasonOther}

// Compaction triggers of PreCompactEvent and PostCompactEvent.
const (
	CompactAuto   = "auto"
	CompactManual = "manual"
)

// Session is the part every event carries. It is embedded, so its fields
// sit at the top level of every event's JSON.
type Session struct {
	// SessionID is the workflow ID of the run the event belongs to.
	SessionID      string `json:"session_id"`
	RunID          string `json:"run_id,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	TurnID         string `json:"turn_id,omitempty"`
	Profile        string `json:"agent_profile,omitempty"`
	IsSubagent     bool   `json:"is_subagent,omitempty"`
	WorkspaceRoot  string `json:"workspace_root,omitempty"`
	// Cwd is the directory command hooks run in; defaults to WorkspaceRoot.
	Cwd string `json:"cwd,omitempty"`
	// PermissionMode is Claude Code's permission_mode; empty means
	// PermissionModeDefault.
	PermissionMode string `json:"permission_mode,omitempty"`
	// Transcript is the session's transcript so far, usually a context-store
	// reference. The worker materializes it as a JSONL file before external
	// hooks run and sets TranscriptPath; hooks never see this field.
	Transcript *contract.MessageSet `json:"transcript,omitempty"`
	// TranscriptPath is that file, set by the worker.
	TranscriptPath string `json:"transcript_path,omitempty"`
	// IsReplay marks an event re-evaluated from recorded history (starter
	// policy-diff): no tool runs after it, so a logging or alerting hook
	// can skip it.
	IsReplay bool `json:"is_replay,omitempty"`
	// AllowedToolNames is the agent's allow-list, part of the policy
	// fingerprint every verdict records.
	AllowedToolNames []string `json:"allowed_tool_names,omitempty"`
	// ConversationSessionID, when set (fenix-shape 6), is the session_id
	// conversation-scoped hooks see: the conversation, not the run.
	ConversationSessionID string `json:"conversation_session_id,omitempty"`
	// Parent is set in a subagent since fenix-shape 6: the session it
	// works for.
	Parent *ParentSession `json:"parent,omitempty"`
}

// SessionFromAssignment fills a Session from the workflow's identity and its
// assignment.
func SessionFromAssignment(workflowID, runID string, a contract.Assignment) Session {
	return Session{
		SessionID:      workflowID,
		RunID:          runID,
		ConversationID: a.ConversationID,
		TurnID:         a.TurnID,
		Profile:        a.AgentContext.Profile,
		IsSubagent:     a.AgentContext.IsSubagent,
		WorkspaceRoot:  a.WorkspaceRoot,
		Cwd:            a.WorkspaceRoot,
		// Cloned: the session outlives the assignment it was built from.
		AllowedToolNames: slices.Clone(a.AgentContext.AllowedToolNames),
		PermissionMode:   a.AgentContext.PermissionMode,
	}
}

// WorkDir is where a command hook runs: Cwd, else the workspace root, else
// "" (the caller's default).
func (s Session) WorkDir() string {
	if s.Cwd != "" {
		return s.Cwd
	}
	return s.WorkspaceRoot
}

// TokenUsage is the model usage of one step.
type TokenUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens defaults to prompt + completion when 0.
	TotalTokens int `json:"total_tokens"`
}

// Total is TotalTokens, or prompt + completion when the provider did not
// report a total.
func (u TokenUsage) Total() int {
	if u.TotalTokens != 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
}

// SessionStartEvent fires when a session is created or resumed.
type SessionStartEvent struct {
	Session
	// Source is SourceStartup or SourceResume.
	Source string `json:"source,omitempty"`
	// Scope is which hooks the event is for (set by the worker from the
	// stage input, never serialized with the event).
	Scope SessionScope `json:"-"`
}

// PreToolUseEvent fires before every tool call.
type PreToolUseEvent struct {
	Session
	ToolName  string         `json:"tool_name"`
	CallID    string         `json:"call_id"`
	ToolInput map[string]any `json:"tool_input"`
	Step      int            `json:"step,omitempty"`
	// Cancelled and CancelReason are the workflow's own cancellation state,
	// the one cancellation source builtin.CancellationHook reads.
	Cancelled    bool   `json:"cancelled,omitempty"`
	CancelReason string `json:"cancel_reason,omitempty"`
	// ContextBudget, when positive, is what the stage's additional
	// context for the model may be: the parallel calls of an agent step
	// share one budget, since their stages' results reach one workflow
	// task. Zero leaves the stage's own bound.
	ContextBudget int `json:"context_budget,omitempty"`
	// ArgsBudget, likewise, is what arguments a hook rewrote may encode
	// to; rewritten ones over it fail the call.
	ArgsBudget int `json:"args_budget,omitempty"`
	// ReadOnly says the tool only reads: it changes nothing in the
	// workspace, on the host or elsewhere (tools.Spec.ReadOnly). The
	// worker sets it from its own tool registry, never from the
	// workflow's input, and a permission policy's plan mode refuses
	// every tool without it.
	ReadOnly bool `json:"-"`
}

// PostToolUseEvent fires after a tool call that produced a result.
type PostToolUseEvent struct {
	Session
	ToolName  string         `json:"tool_name"`
	CallID    string         `json:"call_id"`
	ToolInput map[string]any `json:"tool_input"`
	// Content is the projected (narrative) tool output hooks may rewrite.
	Content string `json:"content"`
	// RawResult is the tool's machine-readable result; it must be valid
	// JSON when set.
	RawResult  json.RawMessage `json:"raw_result,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	// Status is the tool's own status, "completed" unless it says otherwise.
	Status string `json:"status,omitempty"`
	Step   int    `json:"step,omitempty"`
	// ContextBudget, when positive, is what the stage's additional
	// context for the model may be: the parallel calls of an agent step
	// share one budget, since their stages' results reach one workflow
	// task. Zero leaves the stage's own bound.
	ContextBudget int `json:"context_budget,omitempty"`
	// ResultBudget, likewise, is what output a hook rewrote may be; it is
	// cut to it.
	ResultBudget int `json:"result_budget,omitempty"`
}

// PostToolUseFailureEvent fires when a tool call failed instead of
// producing a result. A call fires PostToolUse or PostToolUseFailure, never
// both.
type PostToolUseFailureEvent struct {
	Session
	ToolName     string         `json:"tool_name"`
	CallID       string         `json:"call_id"`
	ToolInput    map[string]any `json:"tool_input"`
	DurationMS   int64          `json:"duration_ms"`
	ErrorType    string         `json:"error_type"`
	ErrorMessage string         `json:"error_message"`
	Step         int            `json:"step,omitempty"`
	// IsInterrupt marks a call that failed because the run was cancelled.
	IsInterrupt bool `json:"is_interrupt,omitempty"`
	// ContextBudget, when positive, is what the stage's additional
	// context for the model may be: the parallel calls of an agent step
	// share one budget, since their stages' results reach one workflow
	// task. Zero leaves the stage's own bound.
	ContextBudget int `json:"context_budget,omitempty"`
}

// Refused reports that the tool never ran: a PreToolUse hook blocked the
// call or ended the turn, or its permission was denied. Claude Code fires
// PostToolUseFailure only for a tool that ran and failed; a refusal is
// reported to PermissionDenied hooks when a permission decision denied it.
func (ev PostToolUseFailureEvent) Refused() bool {
	switch ev.ErrorType {
	case fenixerr.TypeToolBlocked, fenixerr.TypePermissionDenied, fenixerr.TypeHookHalt:
		return true
	}
	return false
}

// Interrupted reports whether the failure was a cancellation.
func (ev PostToolUseFailureEvent) Interrupted() bool {
	return ev.IsInterrupt || ev.ErrorType == fenixerr.TypeCanceled
}

// PermissionRequestEvent fires when a tool call needs permission, before a
// human is asked; hooks may settle it.
type PermissionRequestEvent struct {
	Session
	ToolName  string         `json:"tool_name"`
	CallID    string         `json:"call_id"`
	ToolInput map[string]any `json:"tool_input"`
	// Permission is what is being asked for, as PermissionRequired said.
	Permission string `json:"permission"`
	// RequestedBy is the hook that asked.
	RequestedBy string `json:"requested_by,omitempty"`
}

// StepCompleteEvent fires at the end of every ReAct step.
type StepCompleteEvent struct {
	Session
	Step      int        `json:"step"`
	ToolCalls int        `json:"tool_calls,omitempty"`
	Usage     TokenUsage `json:"usage"`
}

// SessionStopEvent fires when a session ends for any reason.
type SessionStopEvent struct {
	Session
	// StopReason is StopCompleted, StopFailed or StopCanceled.
	StopReason   string `json:"stop_reason"`
	ErrorMessage string `json:"error_message,omitempty"`
	Steps        int    `json:"steps,omitempty"`
	// Reason is Claude Code's SessionEnd reason for a conversation's end
	// (EndReasons); empty means EndReasonOther.
	Reason string `json:"reason,omitempty"`
	// Scope is which hooks the event is for (see SessionStartEvent.Scope).
	Scope SessionScope `json:"-"`
}

// SubagentStartEvent fires when a subagent starts.
type SubagentStartEvent struct {
	Session
	SubagentID      string `json:"subagent_id"`
	SubagentProfile string `json:"subagent_profile,omitempty"`
	Task            string `json:"task,omitempty"`
	Depth           int    `json:"depth,omitempty"`
}

// SubagentStopEvent fires when a subagent stops.
type SubagentStopEvent struct {
	Session
	SubagentID      string `json:"subagent_id"`
	SubagentProfile string `json:"subagent_profile,omitempty"`
	StopReason      string `json:"stop_reason"`
	ErrorMessage    string `json:"error_message,omitempty"`
}

// PreCompactEvent fires before context compaction, in the main agent and in
// subagents alike.
type PreCompactEvent struct {
	Session
	Trigger      string `json:"trigger"`
	MessageCount int    `json:"message_count"`
	TokenCount   int    `json:"token_count"`
	Threshold    int    `json:"threshold,omitempty"`
}

// PostCompactEvent fires after context compaction.
type PostCompactEvent struct {
	Session
	Trigger        string `json:"trigger"`
	MessagesBefore int    `json:"messages_before"`
	MessagesAfter  int    `json:"messages_after"`
	TokensBefore   int    `json:"tokens_before"`
	TokensAfter    int    `json:"tokens_after"`
}

// ErrorEvent fires when any stage fails.
type ErrorEvent struct {
	Session
	Stage        string         `json:"stage"`
	ErrorType    string         `json:"error_type"`
	ErrorClass   fenixerr.Class `json:"error_class,omitempty"`
	ErrorCode    string         `json:"error_code,omitempty"`
	ErrorMessage string         `json:"error_message"`
	Retryable    bool           `json:"retryable,omitempty"`
	ToolName     string         `json:"tool_name,omitempty"`
	CallID       string         `json:"call_id,omitempty"`
}

// Sources of ConfigChangeEvent, Claude Code's words.
const (
	ConfigUserSettings    = "user_settings"
	ConfigProjectSettings = "project_settings"
	ConfigLocalSettings   = "local_settings"
	// ConfigPolicySettings (managed settings) cannot be refused.
	ConfigPolicySettings = "policy_settings"
)

// ConfigChangeEvent fires, outside any run, when an operator's reload
// (SIGHUP) would change, create or remove a hook settings file: the
// hooks of the policy in force hear of it before it is accepted, and a
// refusal (Summary.Blocked) keeps that policy. Session names the file's
// project as the workspace.
type ConfigChangeEvent struct {
	Session
	Source   string `json:"source"`
	FilePath string `json:"file_path"`
	// Change is "created", "removed" or "changed".
	Change string `json:"change"`
}

// StageCallModel is ErrorEvent.Stage of a failed model call.
const StageCallModel = "call_model"

// NewErrorEvent classifies err with fenixerr and describes it for hooks.
func NewErrorEvent(s Session, stage string, err error) ErrorEvent {
	fe := fenixerr.As(err)
	ev := ErrorEvent{Session: s, Stage: stage}
	if fe == nil {
		return ev
	}
	ev.ErrorType = fe.Type
	ev.ErrorClass = fe.Class
	ev.ErrorCode = fe.Code
	ev.ErrorMessage = fe.Message
	ev.Retryable = fe.Type == fenixerr.TypeTransient
	ev.ToolName = fe.Tool
	return ev
}

// UserPromptSubmitEvent fires before the first model call of a turn, with
// the prompt the turn answers.
type UserPromptSubmitEvent struct {
	Session
	Prompt string `json:"prompt"`
}

// StopEvent fires when an agent is about to end its turn with a final
// answer. Session.IsSubagent tells a subagent's stop (Claude Code's
// SubagentStop) from the main agent's (Stop).
type StopEvent struct {
	Session
	// StopHookActive is set when the agent is already continuing because a
	// Stop hook blocked its previous stop: the loop guard hooks check.
	StopHookActive bool `json:"stop_hook_active"`
	// LastAssistantMessage is the final answer's text.
	LastAssistantMessage string `json:"last_assistant_message"`
	Step                 int    `json:"step,omitempty"`
	// Blocks counts the consecutive stops hooks blocked before this one.
	Blocks int `json:"blocks,omitempty"`
}

// BatchCall is one tool call of a PostToolBatch.
type BatchCall struct {
	ToolName  string         `json:"tool_name"`
	CallID    string         `json:"call_id"`
	ToolInput map[string]any `json:"tool_input"`
	// Content is what the model receives for the call: the tool's
	// projected output, or the error it failed with.
	Content string `json:"content"`
	Failed  bool   `json:"failed,omitempty"`
}

// PostToolBatchEvent fires once after every tool call of a step resolved,
// before the next model call.
type PostToolBatchEvent struct {
	Session
	Step  int         `json:"step,omitempty"`
	Calls []BatchCall `json:"calls"`
}

// NotificationEvent fires when the run needs someone's attention.
type NotificationEvent struct {
	Session
	// NotificationType is NotificationPermissionPrompt.
	NotificationType string `json:"notification_type"`
	Message          string `json:"message"`
	Title            string `json:"title,omitempty"`
	ToolName         string `json:"tool_name,omitempty"`
	CallID           string `json:"call_id,omitempty"`
}

// PermissionDeniedEvent fires after a permission request ended in a deny
// (by a hook, a human or the approval timeout).
type PermissionDeniedEvent struct {
	Session
	ToolName   string         `json:"tool_name"`
	CallID     string         `json:"call_id"`
	ToolInput  map[string]any `json:"tool_input"`
	Permission string         `json:"permission,omitempty"`
	Reason     string         `json:"reason"`
	// DeniedBy is "hook:<name>", "decide_permission" or "timeout".
	DeniedBy string `json:"denied_by,omitempty"`
}
