package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/contract"
)

// RawArgumentsKey holds the model's text when its tool-call arguments were
// not a JSON object. Models do emit broken JSON (truncated at max_tokens,
// trailing commas); failing the whole turn for it would throw the turn
// away, while a tool call with {"_raw": text} flows through the normal
// pipeline: argument validation rejects it and the model sees the error as
// the tool result and can correct itself. Response.MalformedToolCalls and
// MalformedArguments flag such calls so the caller can answer them without
// running the tool.
const RawArgumentsKey = "_raw"

// MalformedToolCall is a tool call whose arguments could not be decoded.
type MalformedToolCall struct {
	CallID   string `json:"call_id"`
	ToolName string `json:"tool_name"`
	// Raw is the model's arguments text, unchanged.
	Raw string `json:"raw"`
	// Problem says why it was rejected, in words the model can act on.
	Problem string `json:"problem"`
}

// DecodeArguments decodes a model's arguments text into a JSON object.
// Empty text and null mean no arguments: models send them for tools
// without parameters.
func DecodeArguments(raw string) (map[string]any, error) {
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" || trimmed == "null" {
		return map[string]any{}, nil
	}
	var args map[string]any
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if err := dec.Decode(&args); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, fmt.Errorf("arguments must be a JSON object, got JSON %s", typeErr.Value)
		}
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("arguments have text after the JSON object")
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// ToolCallFromRaw builds a tool call from the model's arguments text. When
// the text is not a JSON object the call carries {"_raw": text} and the
// second result describes the problem.
func ToolCallFromRaw(callID, toolName, raw string) (contract.ToolCall, *MalformedToolCall) {
	args, err := DecodeArguments(raw)
	if err != nil {
		return contract.ToolCall{CallID: callID, ToolName: toolName, Arguments: map[string]any{RawArgumentsKey: raw}},
			&MalformedToolCall{CallID: callID, ToolName: toolName, Raw: raw, Problem: err.Error()}
	}
	return contract.ToolCall{CallID: callID, ToolName: toolName, Arguments: args}, nil
}

// MalformedArguments reports whether a tool call carries undecodable
// arguments, returning the model's original text. It works on calls read
// back from a transcript, where Response.MalformedToolCalls is gone. A tool
// whose only parameter is literally named "_raw" would be mistaken for one.
func MalformedArguments(tc contract.ToolCall) (raw string, ok bool) {
	if len(tc.Arguments) != 1 {
		return "", false
	}
	raw, ok = tc.Arguments[RawArgumentsKey].(string)
	return raw, ok
}

// EncodeArguments renders arguments as the JSON text the Chat Completions
// API expects in an assistant message's tool call.
func EncodeArguments(args map[string]any) (string, error) {
	if args == nil {
		return "{}", nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
