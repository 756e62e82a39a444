// Package contract holds the wire types exchanged between the kernel and
// Fenix: assignments, prepare_round requests, results, reports and trace
// entries. Field names are the seeds' snake_case names so a hand-written JSON
// file can be passed to `temporal workflow execute --input-file`.
package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Modes of an execution assignment. The empty mode is ModeTool.
const (
	ModeTool              = "tool"
	ModeSkillsCatalogList = "skills_catalog_list"
	ModeSkillsLoad        = "skills_load"
	ModeSkillsReadFile    = "skills_read_file"
	ModeSkillsInstall     = "skills_install"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one transcript entry. ToolCalls and ToolCallID link an
// assistant's tool request to the tool's answer so compaction can keep the
// pair together.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	// Images are images in the context store by reference, so history
	// holds the reference: on a tool message those the tool returned (a
	// browser_screenshot, an MCP server's image; the content names each in
	// a line), on a user message those the kernel's user gave. A model
	// provider that shows its model images reads them from the store.
	Images []ImageRef `json:"images,omitempty"`
}

// ImageRef is an image in the context store.
type ImageRef struct {
	Ref      string `json:"ref"`
	MIMEType string `json:"mime_type"`
	Bytes    int    `json:"bytes,omitempty"`
}

// ToolCall is one request to run a tool.
type ToolCall struct {
	CallID    string         `json:"call_id"`
	ToolName  string         `json:"tool_name"`
	Arguments map[string]any `json:"arguments"`
}

// UnmarshalJSON reads Fenix's shape of a call and OpenAI's chat
// completions shape, which a kernel may keep its transcript in
// ({"id", "type": "function", "function": {"name", "arguments": "<JSON
// text>"}}): that one decoded to a call with no ID, no name and no
// arguments, which a model then saw answered by a result of nothing.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	type fenixShape ToolCall
	var in struct {
		fenixShape
		ID       string `json:"id"`
		Function *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*c = ToolCall(in.fenixShape)
	if in.Function == nil || c.ToolName != "" {
		return nil
	}
	c.ToolName = in.Function.Name
	if c.CallID == "" {
		c.CallID = in.ID
	}
	if c.Arguments != nil || len(in.Function.Arguments) == 0 {
		return nil
	}
	text := in.Function.Arguments
	var encoded string
	if json.Unmarshal(text, &encoded) == nil {
		text = json.RawMessage(encoded) // OpenAI sends the arguments as JSON text in a string
	}
	if len(strings.TrimSpace(string(text))) == 0 {
		return nil
	}
	if err := json.Unmarshal(text, &c.Arguments); err != nil {
		return fmt.Errorf("tool call %q (%s): function.arguments is not a JSON object: %v", c.CallID, c.ToolName, err)
	}
	return nil
}

// AgentContext says who the agent is and what it may use.
type AgentContext struct {
	Profile          string   `json:"profile"`
	IsSubagent       bool     `json:"is_subagent"`
	AllowedToolNames []string `json:"allowed_tool_names"`
	SubagentDepth    int      `json:"subagent_depth,omitempty"`
	// ParentSessionID is the session (workflow ID) a subagent works for,
	// set by its parent since fenix-shape 6.
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// PermissionMode is the session's Claude Code permission mode, which
	// the kernel (not the agent) chooses: one of PermissionModes, or
	// empty for the settings files' defaultMode. Hooks read it as
	// permission_mode and the permission rules apply it; a subagent
	// inherits its parent's.
	PermissionMode string `json:"permission_mode,omitempty"`
}

// PermissionModes are Claude Code's permission modes, which a session
// may run in.
var PermissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto"}

// ModelContext names the model the kernel expects to call next.
type ModelContext struct {
	LikelyModel string `json:"likely_model,omitempty"`
	ModelRef    string `json:"model_ref,omitempty"`
	APIModel    string `json:"api_model,omitempty"`
}

// ProviderExecution is the provider-side view of the model.
type ProviderExecution struct {
	ModelRef string `json:"model_ref,omitempty"`
}

// AdvisoryHints are the kernel's non-binding budget suggestions.
type AdvisoryHints struct {
	RecommendedCompactionThreshold *int `json:"recommended_compaction_threshold,omitempty"`
}

// BudgetHints carries the compaction thresholds. Pointers distinguish an
// absent key from an explicit 0, which matters for the fallback order.
type BudgetHints struct {
	AdvisoryHints                     AdvisoryHints `json:"advisory_hints"`
	AdvisoryCompactionThresholdTokens *int          `json:"advisory_compaction_threshold_tokens,omitempty"`
}

// PromptSections are the prompt layers the kernel may send inline. Sections
// left empty are filled from the agent's profile directory when one exists.
type PromptSections struct {
	AgentPrompt         string         `json:"agent_prompt,omitempty"`
	Soul                string         `json:"soul,omitempty"`
	User                string         `json:"user,omitempty"`
	Memory              string         `json:"memory,omitempty"`
	ConversationSummary string         `json:"conversation_summary,omitempty"`
	OperatorPrompt      string         `json:"operator_prompt,omitempty"`
	OperatorState       map[string]any `json:"operator_state,omitempty"`
}

// SkillRequest parameterizes the skill flow modes.
type SkillRequest struct {
	SkillName    string `json:"skill_name,omitempty"`
	RelativePath string `json:"relative_path,omitempty"`
	SourcePath   string `json:"source_path,omitempty"`
}

// ReportTarget asks Fenix to deliver every report as a signal to a kernel
// workflow, in addition to keeping it in workflow state.
type ReportTarget struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id,omitempty"`
	SignalName string `json:"signal_name,omitempty"`
}

// CompactionOptions selects the compaction strategy for one assignment.
type CompactionOptions struct {
	// Strategy is "sandwich" (the seed's default) or "summary".
	Strategy string `json:"strategy,omitempty"`
	// Summarizer names the summary strategy's backend: "extractive" (the
	// default, no model call) or one configured on the worker ("model").
	Summarizer string `json:"summarizer,omitempty"`
}

// ApprovalOptions configures how long a PermissionRequired tool call waits
// for a human before it is denied.
type ApprovalOptions struct {
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// MaxApprovalTimeoutSeconds bounds approval.timeout_seconds: 30 days.
const MaxApprovalTimeoutSeconds = 30 * 24 * 3600

// Validate refuses a timeout below 0 or over MaxApprovalTimeoutSeconds
// (0 is the worker's default): -5 and an overflowing 2^63-1 became the
// default silently, and 99999999999 parked a call for 3,000 years.
func (o ApprovalOptions) Validate() error {
	if o.TimeoutSeconds < 0 || o.TimeoutSeconds > MaxApprovalTimeoutSeconds {
		return fmt.Errorf("approval.timeout_seconds %d: want 0 (the default) to %d (30 days)", o.TimeoutSeconds, MaxApprovalTimeoutSeconds)
	}
	return nil
}

// ExecutionOptions tune how stages are scheduled.
type ExecutionOptions struct {
	// Stages is "fast" (the default: every stage that is safe to repeat
	// and needs no particular host runs as a local activity, recorded as
	// one history marker, with no round trip to the server) or "regular"
	// (one activity per stage: one row with its summary each in the Web
	// UI, at about one server round trip per stage).
	Stages string `json:"stages,omitempty"`
	// PureStages is the older option: "regular" is Stages "regular";
	// "local" runs at least review, projection, finalization and
	// HandleError locally.
	PureStages string `json:"pure_stages,omitempty"`
}

// Stage modes of ExecutionOptions.Stages.
const (
	StagesFast    = "fast"
	StagesRegular = "regular"
)

// Pure stage modes of ExecutionOptions.PureStages.
const (
	PureStagesRegular = "regular"
	PureStagesLocal   = "local"
)

// Assignment is the input of ExecuteAssignment and PrepareRound.
type Assignment struct {
	LogicalWorkID     string            `json:"logical_work_id"`
	AttemptNo         int               `json:"attempt_no"`
	ConversationID    string            `json:"conversation_id"`
	TurnID            string            `json:"turn_id"`
	Mode              string            `json:"mode,omitempty"`
	ContextMessages   []Message         `json:"context_messages"`
	ContextRef        string            `json:"context_ref,omitempty"`
	ContextImports    []map[string]any  `json:"context_imports,omitempty"`
	AgentContext      AgentContext      `json:"agent_context"`
	ModelContext      ModelContext      `json:"model_context"`
	ProviderExecution ProviderExecution `json:"provider_execution"`
	BudgetHints       BudgetHints       `json:"budget_hints"`
	Prompts           PromptSections    `json:"prompts"`
	WorkspaceRoot     string            `json:"workspace_root,omitempty"`
	ToolCall          *ToolCall         `json:"tool_call,omitempty"`
	SkillRequest      *SkillRequest     `json:"skill_request,omitempty"`
	Compaction        CompactionOptions `json:"compaction"`
	Approval          ApprovalOptions   `json:"approval"`
	Execution         ExecutionOptions  `json:"execution"`
	ReportTo          *ReportTarget     `json:"report_to,omitempty"`
}

// ParseAssignment decodes and validates an assignment. Unknown top-level
// fields are tolerated (kernels add fields over time); wrong types and
// missing required fields are not.
func ParseAssignment(raw []byte) (Assignment, error) {
	var a Assignment
	if err := checkReadable(raw, "assignment"); err != nil {
		return a, err
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return a, fmt.Errorf("assignment is empty: expected a JSON object with logical_work_id, conversation_id and turn_id")
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("assignment is not valid JSON for this contract: %s", describeJSONError(err))
	}
	a.Normalize()
	if err := a.Validate(); err != nil {
		return a, withUnknownFields(err, "assignment", raw, reflect.TypeFor[Assignment]())
	}
	return a, nil
}

// withUnknownFields adds to a refusal the top-level fields of raw that no
// field of t reads: a camelCase or misspelt field is the likeliest reason
// a required one is missing.
func withUnknownFields(err error, what string, raw []byte, t reflect.Type) error {
	unknown := unknownFields(raw, t)
	if len(unknown) == 0 {
		return err
	}
	return fmt.Errorf("%w; the %s has fields this contract does not know: %s (its fields are snake_case: logical_work_id, conversation_id, turn_id, …)", err, what, strings.Join(unknown, ", "))
}

// unknownFields are the top-level fields of raw that no field of the
// struct type t reads (its embedded structs' included), sorted.
func unknownFields(raw []byte, t reflect.Type) []string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	known := map[string]bool{}
	var note func(t reflect.Type)
	note = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				note(f.Type)
				continue
			}
			known[name] = true
		}
	}
	note(t)
	var out []string
	for name := range fields { // sorted below: the order does not reach the result
		if !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Normalize fills defaults that do not change meaning.
func (a *Assignment) Normalize() {
	if a.AttemptNo == 0 {
		a.AttemptNo = 1
	}
	if a.Mode == "" {
		a.Mode = ModeTool
	}
	if a.AgentContext.Profile == "" {
		a.AgentContext.Profile = "main"
	}
	if a.ToolCall != nil && a.ToolCall.CallID == "" {
		a.ToolCall.CallID = fmt.Sprintf("tool-call-%s-%d", a.LogicalWorkID, a.AttemptNo)
	}
	if a.ToolCall != nil && a.ToolCall.Arguments == nil {
		a.ToolCall.Arguments = map[string]any{}
	}
}

// Validate checks the fields every flow needs. Flow-specific checks (a tool
// call for the tool flow) are done by ValidateForExecution.
func (a Assignment) Validate() error {
	var missing []string
	if a.LogicalWorkID == "" {
		missing = append(missing, "logical_work_id")
	}
	if a.ConversationID == "" {
		missing = append(missing, "conversation_id")
	}
	if a.TurnID == "" {
		missing = append(missing, "turn_id")
	}
	if len(missing) > 0 {
		return fmt.Errorf("assignment is missing required field(s): %s", strings.Join(missing, ", "))
	}
	if a.AttemptNo < 1 {
		return fmt.Errorf("assignment attempt_no must be >= 1, got %d", a.AttemptNo)
	}
	switch a.Execution.Stages {
	case "", StagesFast, StagesRegular:
	default:
		return fmt.Errorf("execution.stages %q is unknown: use %q or %q", a.Execution.Stages, StagesFast, StagesRegular)
	}
	switch a.Execution.PureStages {
	case "", PureStagesRegular, PureStagesLocal:
	default:
		return fmt.Errorf("execution.pure_stages %q is unknown: use %q or %q", a.Execution.PureStages, PureStagesRegular, PureStagesLocal)
	}
	if m := a.AgentContext.PermissionMode; m != "" && !slices.Contains(PermissionModes, m) {
		return fmt.Errorf("agent_context.permission_mode %q is not a Claude Code permission mode: use one of %s", m, strings.Join(PermissionModes, ", "))
	}
	if a.Execution.Stages != "" && a.Execution.PureStages != "" {
		return fmt.Errorf("execution has both stages and pure_stages: send stages only")
	}
	if len(a.ContextMessages) > 0 && a.ContextRef != "" {
		return fmt.Errorf("assignment has both context_messages and context_ref: send one")
	}
	for i, m := range a.ContextMessages {
		if m.Role == "" {
			return fmt.Errorf("context_messages[%d] has no role", i)
		}
	}
	return nil
}

// ValidateForExecution adds the checks of ExecuteAssignment's flows.
func (a Assignment) ValidateForExecution() error {
	switch a.Mode {
	case ModeTool:
		if a.ToolCall == nil {
			return fmt.Errorf("assignment in mode %q has no tool_call: send {\"tool_call\": {\"tool_name\": ..., \"arguments\": {...}}}", a.Mode)
		}
		if a.ToolCall.ToolName == "" {
			return fmt.Errorf("tool_call %q has no tool_name", a.ToolCall.CallID)
		}
	case ModeSkillsCatalogList:
	case ModeSkillsLoad, ModeSkillsReadFile:
		if a.SkillRequest == nil || a.SkillRequest.SkillName == "" {
			return fmt.Errorf("assignment in mode %q needs skill_request.skill_name", a.Mode)
		}
		if a.Mode == ModeSkillsReadFile && a.SkillRequest.RelativePath == "" {
			return fmt.Errorf("assignment in mode %q needs skill_request.relative_path", a.Mode)
		}
	case ModeSkillsInstall:
		if a.SkillRequest == nil || a.SkillRequest.SourcePath == "" {
			return fmt.Errorf("assignment in mode %q needs skill_request.source_path", a.Mode)
		}
	default:
		return fmt.Errorf("assignment mode %q is unknown: use one of %s", a.Mode,
			strings.Join([]string{ModeTool, ModeSkillsCatalogList, ModeSkillsLoad, ModeSkillsReadFile, ModeSkillsInstall}, ", "))
	}
	return nil
}

// InferModel applies the seed's fallback chain: likely_model, model_ref,
// api_model, then provider_execution.model_ref.
func (a Assignment) InferModel() string {
	for _, candidate := range []string{
		a.ModelContext.LikelyModel,
		a.ModelContext.ModelRef,
		a.ModelContext.APIModel,
		a.ProviderExecution.ModelRef,
	} {
		if candidate != "" {
			return candidate
		}
	}
	return ""
}

// CompactionThreshold returns the kernel's threshold: the advisory hint
// first, then advisory_compaction_threshold_tokens, else 0 (no compaction).
func (b BudgetHints) CompactionThreshold() int {
	if b.AdvisoryHints.RecommendedCompactionThreshold != nil {
		return *b.AdvisoryHints.RecommendedCompactionThreshold
	}
	if b.AdvisoryCompactionThresholdTokens != nil {
		return *b.AdvisoryCompactionThresholdTokens
	}
	return 0
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Sprintf("field %s must be %s, got JSON %s", field, typeErr.Type.String(), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("syntax error at byte %d: %v", syntaxErr.Offset, err)
	default:
		return err.Error()
	}
}

// MessageSet is a message list passed between stages: inline when small,
// otherwise a reference into the context store, so large transcripts are
// not copied into every stage's input in workflow history.
type MessageSet struct {
	Messages []Message `json:"messages,omitempty"`
	Ref      string    `json:"ref,omitempty"`
	Count    int       `json:"count"`
	Bytes    int       `json:"bytes"`
}

// AgentTurnRequest is the input of AgentTurn: an assignment plus the loop's
// budget. Its JSON is the assignment's with a few more fields.
type AgentTurnRequest struct {
	Assignment
	// MaxSteps bounds the model calls of the turn (default 10).
	MaxSteps int `json:"max_steps,omitempty"`
	// Model overrides the model inferred from model_context.
	Model     string `json:"model,omitempty"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	// ContinueAsNewAfterEvents continues the turn in a new run once history
	// has this many events (default 10,000; Temporal's suggestion also
	// triggers it).
	ContinueAsNewAfterEvents int `json:"continue_as_new_after_events,omitempty"`
	// Continuation carries a long turn's state into its next run.
	Continuation *TurnContinuation `json:"continuation,omitempty"`
}

// TurnContinuation is what a continued-as-new AgentTurn run resumes from.
type TurnContinuation struct {
	Transcript     MessageSet `json:"transcript"`
	Step           int        `json:"step"`
	Metrics        Metrics    `json:"metrics"`
	PreviousRunIDs []string   `json:"previous_run_ids"`
}

// ParseAgentTurn decodes and validates an AgentTurn request.
func ParseAgentTurn(raw []byte) (AgentTurnRequest, error) {
	var r AgentTurnRequest
	if err := checkReadable(raw, "agent turn request"); err != nil {
		return r, err
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return r, fmt.Errorf("agent turn request is empty")
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("agent turn request is not valid JSON for this contract: %s", describeJSONError(err))
	}
	r.Assignment.Normalize()
	if err := r.Assignment.Validate(); err != nil {
		return r, withUnknownFields(err, "agent turn request", raw, reflect.TypeFor[AgentTurnRequest]())
	}
	if r.MaxSteps < 0 || r.MaxSteps > 1000 {
		return r, fmt.Errorf("max_steps must be between 1 and 1000, got %d", r.MaxSteps)
	}
	if r.ContinueAsNewAfterEvents < 0 {
		return r, fmt.Errorf("continue_as_new_after_events must be positive, got %d", r.ContinueAsNewAfterEvents)
	}
	return r, nil
}
