package activities

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
)

// Agent-turn stage names.
const (
	StageCallModel      = hooks.StageCallModel
	StageAppendMessages = "append_messages"
)

// SubagentToolName is the tool through which a model spawns a subagent.
// It is not in the tool registry: the AgentTurn workflow runs it as a child
// workflow, after the same review and hooks as any other call.
const SubagentToolName = "spawn_subagent"

// SubagentArgs are spawn_subagent's arguments.
type SubagentArgs struct {
	Task             string   `json:"task" jsonschema:"minLength=1,description=What the subagent must do; it sees only this text"`
	Profile          string   `json:"profile,omitempty" jsonschema:"description=Agent profile of the subagent (default: subagent)"`
	AllowedToolNames []string `json:"allowed_tool_names,omitempty" jsonschema:"description=Tools the subagent may use; a subset of yours (default: all of yours except spawn_subagent)"`
	MaxSteps         int      `json:"max_steps,omitempty" jsonschema:"minimum=1,maximum=50,description=Step budget of the subagent"`
}

// SubagentToolSpec is spawn_subagent as offered to the model.
func SubagentToolSpec() llm.ToolSpec {
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"task":               map[string]any{"type": "string", "minLength": 1, "description": "What the subagent must do; it sees only this text"},
			"profile":            map[string]any{"type": "string", "description": "Agent profile of the subagent (default: subagent)"},
			"allowed_tool_names": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Tools the subagent may use; a subset of yours"},
			"max_steps":          map[string]any{"type": "integer", "minimum": 1, "maximum": 50},
		},
		"required":             []string{"task"},
		"additionalProperties": false,
	})
	return llm.ToolSpec{Name: SubagentToolName, Description: "Delegate a self-contained task to a subagent with its own context and a subset of your tools; returns its final answer.", Parameters: schema}
}

// CallModelInput is one model call of an agent turn.
type CallModelInput struct {
	Model string `json:"model"`
	// Prompt is the prepared, compacted context for this call.
	Prompt contract.MessageSet `json:"prompt"`
	// Transcript is the conversation so far; the answer is appended to it.
	Transcript       contract.MessageSet `json:"transcript,omitzero"`
	AllowedToolNames []string            `json:"allowed_tool_names"`
	Step             int                 `json:"step"`
	MaxTokens        int                 `json:"max_tokens,omitempty"`
	// AnswerOnly says the caller keeps the transcript (an inline one,
	// fenix-shape 10) and appends the answer itself: Transcript is not
	// sent and none is returned, so history does not hold it twice more
	// per model call. A worker that predates the field appends the answer
	// to the empty transcript it was given, which the caller ignores.
	AnswerOnly bool `json:"answer_only,omitempty"`
}

// CallModelResult is the model's answer and the transcript with it.
type CallModelResult struct {
	Message      contract.Message `json:"message"`
	FinishReason string           `json:"finish_reason"`
	Usage        llm.Usage        `json:"usage"`
	// Transcript is the transcript with Message appended, unless the
	// caller asked for the answer only.
	Transcript contract.MessageSet `json:"transcript,omitzero"`
	Trace      contract.TraceEntry `json:"trace"`
}

// CallModel asks the model for the next turn, offering the agent's allowed
// tools, and appends its answer to the transcript. Provider errors are
// classified: 429/5xx/timeouts retry (honouring Retry-After), other 4xx
// fail the turn.
func (a *Activities) CallModel(ctx context.Context, in CallModelInput) (CallModelResult, error) {
	if a.Model == nil {
		return fail[CallModelResult](fenixerr.New(fenixerr.TypeModelProvider, "this worker has no model provider configured"))
	}
	prompt, err := contextstore.Unpack(ctx, a.Contexts, in.Prompt)
	if err != nil {
		return fail[CallModelResult](err)
	}
	var transcript []contract.Message
	if !in.AnswerOnly {
		if transcript, err = contextstore.Unpack(ctx, a.Contexts, in.Transcript); err != nil {
			return fail[CallModelResult](err)
		}
	}
	if info, ok := currentActivity(ctx); ok {
		ctx = llm.WithAttempt(ctx, int(info.Attempt))
	}
	stop := startHeartbeat(ctx, newProgressSink(ctx, ""))
	started := time.Now()
	req := llm.Request{Model: in.Model, Messages: prompt, Tools: a.toolSpecs(in.AllowedToolNames), MaxTokens: in.MaxTokens}
	if a.Contexts != nil {
		req.Blobs = a.Contexts
	}
	resp, err := a.Model.Complete(ctx, req)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return CallModelResult{}, ctx.Err()
		}
		return CallModelResult{}, llm.ToTemporal(err)
	}
	resp.Message.Role = contract.RoleAssistant
	if n := len(resp.Message.ToolCalls); n > MaxToolCallsPerAnswer {
		return fail[CallModelResult](fenixerr.PayloadTooLarge(
			"the model (%s) answered with %d tool calls, over the %d one step runs: each call is several stages in history, so a step that large would take hours and outgrow the server's history limit; ask for fewer calls per answer",
			in.Model, n, MaxToolCallsPerAnswer).WithCode("too_many_tool_calls"))
	}
	// Repeated call IDs are renamed here too, so the transcript's
	// assistant message names the IDs the tool results answer.
	oversized := contract.BoundToolCalls(resp.Message.ToolCalls)
	renamed := contract.UniqueCallIDs(resp.Message.ToolCalls)

	a.metrics().ModelTokens(TokenKindPrompt, resp.Usage.PromptTokens)
	a.metrics().ModelTokens(TokenKindCompletion, resp.Usage.CompletionTokens)
	var set contract.MessageSet
	if !in.AnswerOnly {
		if set, err = contextstore.Pack(ctx, a.Contexts, append(slices.Clip(transcript), resp.Message), a.InlineLimit); err != nil {
			return fail[CallModelResult](err)
		}
	}
	names := make([]string, len(resp.Message.ToolCalls))
	for i, tc := range resp.Message.ToolCalls {
		names[i] = tc.ToolName
	}
	trace := contract.Trace(StageCallModel,
		"step", in.Step, "model", resp.Model, "provider", resp.Provider, "finish_reason", resp.FinishReason,
		"tool_calls", names, "content", preview(resp.Message.Content), "usage", resp.Usage,
		"duration_ms", time.Since(started).Milliseconds(), "prompt_messages", len(prompt))
	if len(resp.MalformedToolCalls) > 0 {
		trace.Fields["malformed_tool_calls"] = resp.MalformedToolCalls
	}
	if len(renamed) > 0 {
		trace.Fields["renamed_call_ids"] = renamed
	}
	if len(oversized) > 0 {
		trace.Fields["oversized_tool_call_names"] = oversized
	}
	res := CallModelResult{Message: resp.Message, FinishReason: resp.FinishReason, Usage: resp.Usage, Transcript: set, Trace: trace}
	if n := resultBytes(res); n > MaxModelResultBytes {
		return fail[CallModelResult](fenixerr.PayloadTooLarge(
			"the model's answer is %d bytes (content and tool calls), over the %d bytes one CallModel result may record in history; ask for less, or have the model write large content to a file",
			n, MaxModelResultBytes).WithCode("model_answer_too_large"))
	}
	return res, nil
}

// MaxToolCallsPerAnswer bounds the tool calls of one model answer. Every
// call of a step runs in parallel through several stages, each at least
// one history event: 10,000 calls in one answer made a step of some 50,000
// events, past the server's 51,200-event limit (the run is terminated
// without a result), and the workflow took minutes per few hundred of
// them. 128 calls take about two seconds and 540 events; models
// make a few per answer.
const MaxToolCallsPerAnswer = 128

// MaxModelResultBytes bounds CallModel's result as history records it,
// under Temporal's 2 MiB payload limit: the server refuses a larger one
// and the call failed with the SDK's "Complete result exceeds size limit"
// as an untyped runtime error.
const MaxModelResultBytes = 2<<20 - 64<<10

// resultBytes is the JSON size of v as Fenix's converter records it.
func resultBytes(v any) int {
	raw, err := tools.EncodeResult(v)
	if err != nil {
		return 0
	}
	return len(raw)
}

// toolSpecs offers the model the allowed tools the registry has (an
// "mcp__<server>" entry stands for each of that server's tools), plus
// spawn_subagent when it is allowed.
func (a *Activities) toolSpecs(allowed []string) []llm.ToolSpec {
	var specs []llm.ToolSpec
	if slices.Contains(allowed, SubagentToolName) {
		specs = append(specs, SubagentToolSpec())
	}
	for _, d := range a.Tools.Allowed(allowed) {
		specs = append(specs, llm.ToolSpec{Name: d.Name, Description: d.Description, Parameters: d.Schema})
	}
	return specs
}

// AppendMessagesInput adds tool results to the transcript.
type AppendMessagesInput struct {
	Transcript contract.MessageSet `json:"transcript"`
	Messages   []contract.Message  `json:"messages"`
}

// AppendMessagesResult is the longer transcript.
type AppendMessagesResult struct {
	Transcript contract.MessageSet `json:"transcript"`
}

// AppendMessages runs as a local activity: the tool results it appends are
// already in history (in their stages' results), so its input is not
// recorded again; only the new transcript's reference is.
func (a *Activities) AppendMessages(ctx context.Context, in AppendMessagesInput) (AppendMessagesResult, error) {
	transcript, err := contextstore.Unpack(ctx, a.Contexts, in.Transcript)
	if err != nil {
		return fail[AppendMessagesResult](err)
	}
	set, err := contextstore.Pack(ctx, a.Contexts, append(slices.Clip(transcript), in.Messages...), a.InlineLimit)
	if err != nil {
		return fail[AppendMessagesResult](err)
	}
	return AppendMessagesResult{Transcript: set}, nil
}
