package contract

import (
	"encoding/json"
	"fmt"
	"time"
)

// Result statuses.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCanceled  = "canceled"
)

// Report kinds, in the order a run emits them.
const (
	ReportStarted  = "started"
	ReportProgress = "progress"
	ReportComplete = "complete"
	ReportFail     = "fail"
)

// Report phases of progress reports.
const (
	PhaseToolReviewed      = "tool_reviewed"
	PhasePermissionPending = "permission_pending"
	PhaseToolOutput        = "tool_output"
	// PhaseProcessCanceledBeforeStart reports a process-flow call canceled
	// after review but before its service was started.
	PhaseProcessCanceledBeforeStart = "process_canceled_before_start"
)

// Failure kinds.
const (
	FailureRuntimeError = "runtime_error"
	FailureCanceled     = "canceled"
)

// Output is the finalized content, anchored to its conversation and turn so
// the kernel can write it into the transcript directly.
type Output struct {
	Content        string         `json:"content"`
	ConversationID string         `json:"conversation_id"`
	TurnID         string         `json:"turn_id"`
	Data           map[string]any `json:"data,omitempty"`
}

// ToolInvocation is the report/failure view of one tool call.
type ToolInvocation struct {
	CallID          string         `json:"call_id"`
	ToolName        string         `json:"tool_name"`
	Status          string         `json:"status"`
	RequestPayload  ToolCall       `json:"request_payload"`
	ResponsePayload map[string]any `json:"response_payload,omitempty"`
	RegistryBacked  bool           `json:"registry_backed"`
	ResourceID      string         `json:"resource_id,omitempty"`
}

// ProcessRun is the resource of the process tool flow: a background
// service owned by one worker host.
type ProcessRun struct {
	ProcessRunID   string `json:"process_run_id,omitempty"`
	HostID         string `json:"host_id,omitempty"`
	LifecycleState string `json:"lifecycle_state"`
	ProxyPath      string `json:"proxy_path,omitempty"`
	Reason         string `json:"reason,omitempty"`
}

// Failure is the HandleError payload.
type Failure struct {
	FailureKind      string           `json:"failure_kind"`
	Retryable        bool             `json:"retryable"`
	LogicalWorkID    string           `json:"logical_work_id"`
	AttemptNo        int              `json:"attempt_no"`
	LastErrorSummary string           `json:"last_error_summary"`
	Classification   string           `json:"classification"`
	Code             string           `json:"code"`
	ErrorType        string           `json:"error_type"`
	Stage            string           `json:"stage,omitempty"`
	ToolInvocations  []ToolInvocation `json:"tool_invocations,omitempty"`
}

// ToolOutputChunk is a piece of streamed tool output (exec_command).
type ToolOutputChunk struct {
	CallID string `json:"call_id"`
	Stream string `json:"stream"`
	Text   string `json:"text"`
	Offset int64  `json:"offset"`
}

// Report is one entry of the report channel to the kernel.
type Report struct {
	Sequence       int              `json:"sequence"`
	Kind           string           `json:"kind"`
	Phase          string           `json:"phase,omitempty"`
	LogicalWorkID  string           `json:"logical_work_id"`
	AttemptNo      int              `json:"attempt_no"`
	ConversationID string           `json:"conversation_id"`
	TurnID         string           `json:"turn_id"`
	OccurredAt     time.Time        `json:"occurred_at"`
	ToolInvocation *ToolInvocation  `json:"tool_invocation,omitempty"`
	ProcessRun     *ProcessRun      `json:"process_run,omitempty"`
	OutputChunk    *ToolOutputChunk `json:"output_chunk,omitempty"`
	Output         *Output          `json:"output,omitempty"`
	Error          *Failure         `json:"error,omitempty"`
}

// Metrics are the live counters served on the metrics query.
type Metrics struct {
	ToolCalls        int `json:"tool_calls"`
	ToolErrors       int `json:"tool_errors"`
	Steps            int `json:"steps"`
	Errors           int `json:"errors"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Result is the output of ExecuteAssignment (and AgentTurn).
type Result struct {
	Status  string       `json:"status"`
	Output  *Output      `json:"output,omitempty"`
	Reports []Report     `json:"reports"`
	Trace   []TraceEntry `json:"trace"`
	Error   *Failure     `json:"error,omitempty"`
	Metrics *Metrics     `json:"metrics,omitempty"`
}

// PreparedRound is the output of PrepareRound: the messages for the
// kernel's next model call.
type PreparedRound struct {
	Status                string       `json:"status"`
	Messages              []Message    `json:"messages"`
	MessagesRef           string       `json:"messages_ref,omitempty"`
	LikelyModel           string       `json:"likely_model"`
	EstimatedMessageCount int          `json:"estimated_message_count"`
	EstimatedTokenCount   int          `json:"estimated_token_count"`
	Compacted             bool         `json:"compacted"`
	Trace                 []TraceEntry `json:"trace"`
	Error                 *Failure     `json:"error,omitempty"`
}

// TraceEntry is one stage's observations. It marshals flat, as the seed's
// trace hashes do: {"hook": "prepare_turn", "message_count": 3, ...}.
type TraceEntry struct {
	Hook   string
	Fields map[string]any
}

// Trace builds an entry from alternating key/value pairs.
func Trace(hook string, kv ...any) TraceEntry {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("contract.Trace(%q): odd number of key/value arguments", hook))
	}
	e := TraceEntry{Hook: hook, Fields: make(map[string]any, len(kv)/2)}
	for i := 0; i < len(kv); i += 2 {
		e.Fields[kv[i].(string)] = kv[i+1]
	}
	return e
}

// Get returns one observation.
func (e TraceEntry) Get(key string) any { return e.Fields[key] }

// MarshalJSON flattens the hook name into the observation object.
func (e TraceEntry) MarshalJSON() ([]byte, error) {
	flat := make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		flat[k] = v
	}
	flat["hook"] = e.Hook
	return json.Marshal(flat)
}

// UnmarshalJSON splits "hook" back out of the flat object.
func (e *TraceEntry) UnmarshalJSON(data []byte) error {
	var flat map[string]any
	if err := json.Unmarshal(data, &flat); err != nil {
		return err
	}
	hook, _ := flat["hook"].(string)
	delete(flat, "hook")
	e.Hook = hook
	e.Fields = flat
	return nil
}
