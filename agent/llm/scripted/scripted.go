// Package scripted is a model provider that replays canned turns from a
// JSON file, for offline demos and deterministic tests of the AgentTurn
// loop.
//
// # Selection
//
// The request's model picks the script: "scripted:<name>" selects script
// <name>, and "scripted" alone selects "main". Within a script, the turn
// is turns[step], where step is the number of assistant messages already
// in the request (0 for the first model call). Selection depends on the
// request alone, so an activity retry or a workflow replay gets the same
// turn. A script is therefore the whole conversation's assistant turns in
// order; a compaction that removes assistant messages shifts the step.
//
// # File format
//
//	{
//	  "scripts": {
//	    "main": {
//	      "description": "optional, for humans",
//	      "turns": [
//	        {
//	          "content": "optional thought shown with the tool calls",
//	          "tool_calls": [
//	            {"tool_name": "calculator", "arguments": {"expression": "2+2"}}
//	          ],
//	          "usage": {"prompt_tokens": 40, "completion_tokens": 12}
//	        },
//	        {"content": "2+2 is 4."}
//	      ]
//	    },
//	    "researcher": {"turns": [{"content": "..."}]}
//	  }
//	}
//
// A file holding only {"turns": [...]} is one script named "main".
//
// A turn is a final answer ("content" only) or tool calls ("tool_calls",
// with optional "content"); it needs at least one of them unless it is a
// pure failure (below). Fields of a turn:
//
//   - content: the assistant's text.
//   - tool_calls: each with tool_name, arguments (a JSON object), optional
//     call_id (default "call-<step>-<i>", i the index in the turn), and
//     optional raw_arguments, a string sent instead of arguments to act
//     out a model that emits broken JSON (it becomes {"_raw": text}, see
//     llm.RawArgumentsKey).
//   - usage: prompt_tokens, completion_tokens, total_tokens (default their
//     sum). Without it usage is estimated like compaction.WordEstimator:
//     whitespace-separated words plus 4 per message.
//   - finish_reason: default "tool_calls" when there are tool calls,
//     otherwise "stop".
//   - expect: {"contains": ["text", ...]}: what the request must hold
//     (in any message) for this turn to be answered, for example context
//     a hook added. A request without it fails with a non-retryable
//     ModelProviderError naming the missing text, so a test that expects
//     the model to see something fails when it does not.
//   - error: a simulated provider failure, classified exactly like a real
//     HTTP error (429, 408 and 5xx retryable, other 4xx not):
//     {"status": 429, "message": "...", "code": "...",
//     "retry_after_seconds": 1, "fail_attempts": 1}.
//
// # Simulated failures and retries
//
// The provider keeps no state, so "fail once" cannot mean "the first call
// in this process". It means the activity attempt: the turn fails while
// llm.Attempt(ctx) <= fail_attempts (default 1) and answers normally from
// the next attempt. The calling activity must therefore pass its attempt
// with llm.WithAttempt(ctx, activity.GetInfo(ctx).Attempt); without it
// every call is attempt 1 and the failure repeats until the retry policy
// gives up. A turn with an error and neither content nor tool_calls fails
// on every attempt.
package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// Name is the provider's name.
const Name = "scripted"

// DefaultScript is the script selected by the model "scripted".
const DefaultScript = "main"

// File is the script file's top level.
type File struct {
	Scripts map[string]Script `json:"scripts,omitempty"`
	// Turns is the one-script shorthand for {"scripts": {"main": ...}}.
	Turns []Turn `json:"turns,omitempty"`
}

// Script is one agent's canned conversation.
type Script struct {
	Description string `json:"description,omitempty"`
	Turns       []Turn `json:"turns"`
}

// Turn is one canned model answer.
type Turn struct {
	Content      string          `json:"content,omitempty"`
	ToolCalls    []ToolCall      `json:"tool_calls,omitempty"`
	Usage        *llm.Usage      `json:"usage,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Expect       *Expectation    `json:"expect,omitempty"`
	Error        *SimulatedError `json:"error,omitempty"`
}

// Expectation is what a request must hold for a turn to be answered.
type Expectation struct {
	// Contains lists texts each of which must appear in some message.
	Contains []string `json:"contains"`
}

// check returns the first expected text the request lacks, or "".
func (e *Expectation) check(messages []contract.Message) string {
	if e == nil {
		return ""
	}
	for _, want := range e.Contains {
		found := false
		for _, m := range messages {
			if strings.Contains(m.Content, want) {
				found = true
				break
			}
		}
		if !found {
			return want
		}
	}
	return ""
}

// ToolCall is one canned tool request.
type ToolCall struct {
	CallID       string         `json:"call_id,omitempty"`
	ToolName     string         `json:"tool_name"`
	Arguments    map[string]any `json:"arguments,omitempty"`
	RawArguments *string        `json:"raw_arguments,omitempty"`
}

// SimulatedError makes a turn fail like a provider's HTTP error.
type SimulatedError struct {
	Status            int     `json:"status"`
	Message           string  `json:"message,omitempty"`
	Code              string  `json:"code,omitempty"`
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// FailAttempts is how many activity attempts fail; 0 means 1.
	FailAttempts int `json:"fail_attempts,omitempty"`
}

func (e SimulatedError) failAttempts() int { return max(e.FailAttempts, 1) }

// Provider serves scripted turns. It is safe for concurrent use: it never
// changes after construction.
type Provider struct {
	source  string
	scripts map[string]Script
}

var _ llm.Provider = (*Provider)(nil)

// Load reads and validates a script file.
func Load(path string) (*Provider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted provider: read script file: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes a script file; source names it in errors. Unknown fields
// are rejected so a typo ("tool_call") fails loudly instead of silently
// producing a final answer.
func Parse(data []byte, source string) (*Provider, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("scripted provider: %s: %s", source, describeJSONError(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("scripted provider: %s: text after the top-level JSON object", source)
	}
	scripts := f.Scripts
	switch {
	case len(f.Turns) > 0 && len(f.Scripts) > 0:
		return nil, fmt.Errorf("scripted provider: %s has both \"turns\" and \"scripts\": use \"scripts\" for several scripts, or \"turns\" alone for one", source)
	case len(f.Turns) > 0:
		scripts = map[string]Script{DefaultScript: {Turns: f.Turns}}
	}
	return newProvider(scripts, source)
}

// New builds a provider from scripts defined in Go (tests).
func New(scripts map[string]Script) (*Provider, error) {
	return newProvider(scripts, "scripts given in code")
}

func newProvider(scripts map[string]Script, source string) (*Provider, error) {
	if len(scripts) == 0 {
		return nil, fmt.Errorf("scripted provider: %s defines no scripts: expected {\"scripts\": {\"main\": {\"turns\": [...]}}}", source)
	}
	for _, name := range sortedNames(scripts) {
		if err := validateScript(name, scripts[name]); err != nil {
			return nil, fmt.Errorf("scripted provider: %s: %w", source, err)
		}
	}
	return &Provider{source: source, scripts: scripts}, nil
}

func validateScript(name string, s Script) error {
	if name == "" {
		return errors.New("a script has an empty name")
	}
	if len(s.Turns) == 0 {
		return fmt.Errorf("script %q has no turns", name)
	}
	for i, t := range s.Turns {
		at := fmt.Sprintf("script %q turn %d", name, i)
		if t.Content == "" && len(t.ToolCalls) == 0 && t.Error == nil {
			return fmt.Errorf("%s has neither content nor tool_calls", at)
		}
		if t.Expect != nil && len(t.Expect.Contains) == 0 {
			return fmt.Errorf("%s has an empty expect: list the texts the request must contain", at)
		}
		for j, tc := range t.ToolCalls {
			if tc.ToolName == "" {
				return fmt.Errorf("%s tool_calls[%d] has no tool_name", at, j)
			}
			if tc.RawArguments != nil && tc.Arguments != nil {
				return fmt.Errorf("%s tool_calls[%d] (%s) has both arguments and raw_arguments: give one", at, j, tc.ToolName)
			}
		}
		if e := t.Error; e != nil {
			if e.Status < 400 || e.Status > 599 {
				return fmt.Errorf("%s error.status %d is not an HTTP error status (400-599)", at, e.Status)
			}
			if e.RetryAfterSeconds < 0 || e.FailAttempts < 0 {
				return fmt.Errorf("%s error has a negative retry_after_seconds or fail_attempts", at)
			}
		}
	}
	return nil
}

// Name identifies the provider.
func (p *Provider) Name() string { return Name }

// Scripts lists the script names, sorted.
func (p *Provider) Scripts() []string { return sortedNames(p.scripts) }

// Complete returns the scripted turn for the request's script and step.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	name, err := scriptName(req.Model)
	if err != nil {
		return llm.Response{}, err
	}
	script, ok := p.scripts[name]
	if !ok {
		return llm.Response{}, fenixerr.New(fenixerr.TypeModelProvider,
			"script %q is not in %s; it has %s (select one with model \"scripted:<name>\")",
			name, p.source, strings.Join(p.Scripts(), ", "))
	}
	step := llm.AssistantTurns(req.Messages)
	if step >= len(script.Turns) {
		return llm.Response{}, fenixerr.New(fenixerr.TypeModelProvider,
			"script %q in %s has %d turn(s) but the model was called for step %d (the request already holds %d assistant messages): add a turn, or end the script with a final answer (a turn without tool_calls)",
			name, p.source, len(script.Turns), step, step)
	}
	turn := script.Turns[step]
	if missing := turn.Expect.check(req.Messages); missing != "" {
		return llm.Response{}, fenixerr.New(fenixerr.TypeModelProvider,
			"script %q in %s expects the request for step %d to contain %q, and none of its %d messages does",
			name, p.source, step, missing, len(req.Messages))
	}
	if e := turn.Error; e != nil {
		pureFailure := turn.Content == "" && len(turn.ToolCalls) == 0
		if attempt := llm.Attempt(ctx); pureFailure || attempt <= e.failAttempts() {
			return llm.Response{}, p.simulatedFailure(req.Model, name, step, attempt, *e, pureFailure)
		}
	}
	return respond(req, step, turn), nil
}

func (p *Provider) simulatedFailure(model, script string, step, attempt int, e SimulatedError, always bool) error {
	message := e.Message
	if message == "" {
		message = "simulated failure"
	}
	if always {
		message += fmt.Sprintf(" (simulated: script %q step %d fails on every attempt)", script, step)
	} else {
		message += fmt.Sprintf(" (simulated: script %q step %d, attempt %d of %d failing)", script, step, attempt, e.failAttempts())
	}
	return llm.HTTPFailure{
		Provider:   Name,
		Model:      model,
		Endpoint:   p.source,
		StatusCode: e.Status,
		Message:    message,
		Code:       e.Code,
		RetryAfter: time.Duration(e.RetryAfterSeconds * float64(time.Second)),
	}.Err()
}

func respond(req llm.Request, step int, turn Turn) llm.Response {
	msg := contract.Message{Role: contract.RoleAssistant, Content: turn.Content}
	var malformed []llm.MalformedToolCall
	for i, tc := range turn.ToolCalls {
		id := tc.CallID
		if id == "" {
			id = fmt.Sprintf("call-%d-%d", step, i)
		}
		if tc.RawArguments != nil {
			call, bad := llm.ToolCallFromRaw(id, tc.ToolName, *tc.RawArguments)
			msg.ToolCalls = append(msg.ToolCalls, call)
			if bad != nil {
				malformed = append(malformed, *bad)
			}
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, contract.ToolCall{CallID: id, ToolName: tc.ToolName, Arguments: cloneArguments(tc.Arguments)})
	}
	finish := turn.FinishReason
	if finish == "" {
		finish = "stop"
		if len(msg.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := estimateUsage(req.Messages, msg)
	if turn.Usage != nil {
		usage = *turn.Usage
		if usage.TotalTokens == 0 {
			usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
		}
	}
	return llm.Response{
		Message:            msg,
		FinishReason:       finish,
		Usage:              usage,
		Model:              req.Model,
		Provider:           Name,
		MalformedToolCalls: malformed,
	}
}

// cloneArguments copies the script's arguments so a caller that edits a
// response cannot change the script for later calls.
func cloneArguments(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	data, err := json.Marshal(args)
	if err != nil {
		return args // decoded from JSON, so it always re-encodes
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return args
	}
	return out
}

// perMessageTokens matches compaction.WordEstimator's per-message cost.
const perMessageTokens = 4

func estimateUsage(prompt []contract.Message, answer contract.Message) llm.Usage {
	var u llm.Usage
	for _, m := range prompt {
		u.PromptTokens += messageWords(m) + perMessageTokens
	}
	u.CompletionTokens = messageWords(answer) + perMessageTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func messageWords(m contract.Message) int {
	n := len(strings.Fields(m.Content))
	for _, tc := range m.ToolCalls {
		n++ // the tool name
		if args, err := llm.EncodeArguments(tc.Arguments); err == nil {
			n += len(strings.Fields(args))
		}
	}
	return n
}

func scriptName(model string) (string, error) {
	if !llm.IsScriptedModel(model) {
		return "", fenixerr.New(fenixerr.TypeModelProvider,
			"scripted provider serves models \"scripted:<script>\", got model %q", model)
	}
	name := strings.TrimPrefix(strings.TrimPrefix(model, Name), ":")
	if name == "" {
		name = DefaultScript
	}
	return name, nil
}

func sortedNames(scripts map[string]Script) []string {
	names := make([]string, 0, len(scripts))
	for name := range scripts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// describeJSONError adds the line and column to a decoding error.
func describeJSONError(data []byte, err error) string {
	var offset int64 = -1
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		offset = syntaxErr.Offset
	case errors.As(err, &typeErr):
		offset = typeErr.Offset
	}
	if offset < 0 || offset > int64(len(data)) {
		return err.Error()
	}
	line := 1 + bytes.Count(data[:offset], []byte("\n"))
	col := int(offset) - bytes.LastIndexByte(data[:offset], '\n')
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}
