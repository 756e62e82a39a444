package openai

import (
	"bytes"
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// buildParams maps a request onto standard Chat Completions fields only;
// shown are the images to show the model, by reference.
func buildParams(model string, req llm.Request, maxTokensField string, shown map[string][]byte) (sdk.ChatCompletionNewParams, error) {
	messages, err := encodeMessages(req.Messages, shown)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	tools, err := encodeTools(req.Tools)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	params := sdk.ChatCompletionNewParams{
		Model:    shared.ChatModel(model),
		Messages: messages,
		Tools:    tools,
	}
	if req.MaxTokens > 0 {
		if maxTokensField == MaxCompletionTokensField {
			params.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	return params, nil
}

// encodeMessages maps transcript roles onto Chat Completions roles. The
// contract's Name field is not sent: the API restricts its characters and
// tool messages have no such field. The images of a run of tool messages
// that are shown follow it in one user message (images.go).
func encodeMessages(messages []contract.Message, shown map[string][]byte) ([]sdk.ChatCompletionMessageParamUnion, error) {
	out := make([]sdk.ChatCompletionMessageParamUnion, 0, len(messages))
	var images []sdk.ChatCompletionContentPartUnionParam
	showImages := func() {
		if len(images) > 0 {
			out = append(out, sdk.UserMessage(images))
			images = nil
		}
	}
	for i, m := range messages {
		if m.Role != contract.RoleTool {
			showImages()
		}
		switch m.Role {
		case contract.RoleSystem:
			out = append(out, sdk.SystemMessage(m.Content))
		case contract.RoleUser:
			if images := imageParts(m, shown); len(images) > 0 {
				parts := []sdk.ChatCompletionContentPartUnionParam{}
				if m.Content != "" {
					parts = append(parts, sdk.TextContentPart(m.Content))
				}
				out = append(out, sdk.UserMessage(append(parts, images...)))
				continue
			}
			out = append(out, sdk.UserMessage(m.Content))
		case contract.RoleTool:
			if m.ToolCallID == "" {
				return nil, fenixerr.Validation("messages[%d] has role tool but no tool_call_id: a tool result must name the call it answers", i)
			}
			out = append(out, sdk.ToolMessage(m.Content, m.ToolCallID))
			images = append(images, imageParts(m, shown)...)
		case contract.RoleAssistant:
			msg, err := encodeAssistant(i, m)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
		default:
			return nil, fenixerr.Validation("messages[%d] has role %q: the Chat Completions API accepts system, user, assistant and tool", i, m.Role)
		}
	}
	showImages()
	return out, nil
}

func encodeAssistant(i int, m contract.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	var a sdk.ChatCompletionAssistantMessageParam
	// Content may be omitted only when the message carries tool calls;
	// an empty string there trips some chat templates.
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = param.NewOpt(m.Content)
	}
	for j, tc := range m.ToolCalls {
		if tc.CallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, fenixerr.Validation(
				"messages[%d].tool_calls[%d] (tool %q) has no call_id: tool results are matched to calls by it", i, j, tc.ToolName)
		}
		args, err := llm.EncodeArguments(tc.Arguments)
		if err != nil {
			return sdk.ChatCompletionMessageParamUnion{}, fenixerr.Validation(
				"messages[%d].tool_calls[%d] (tool %q, call %s): arguments cannot be encoded as JSON: %v", i, j, tc.ToolName, tc.CallID, err)
		}
		a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.CallID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.ToolName, Arguments: args},
			},
		})
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
}

// emptyObjectSchema is sent for tools without parameters: some servers
// (llama.cpp) reject a function without a parameters schema.
func emptyObjectSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

func encodeTools(tools []llm.ToolSpec) ([]sdk.ChatCompletionToolUnionParam, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]sdk.ChatCompletionToolUnionParam, 0, len(tools))
	for _, t := range tools {
		if t.Name == "" {
			return nil, fenixerr.Validation("a tool offered to the model has no name")
		}
		schema := emptyObjectSchema()
		if raw := bytes.TrimSpace(t.Parameters); len(raw) > 0 && string(raw) != "null" {
			schema = nil
			if err := json.Unmarshal(raw, &schema); err != nil {
				return nil, fenixerr.Validation("tool %q: parameters must be a JSON schema object: %v", t.Name, err).WithTool(t.Name)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		out = append(out, sdk.ChatCompletionFunctionTool(fn))
	}
	return out, nil
}
