package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// The conformance suite's elicitation scenarios call tools that ask the
// client a question mid-call (elicitation/create) with a given form. The
// fixtures are Fenix tools asking through the call's Elicitor, the path
// an MCP server's question behind Fenix takes (its run parks the question,
// the Elicitation hooks see it, the gateway asks its client), so the
// scenarios check that the form reaches the client as it was asked —
// SEP-1034's defaults, SEP-1330's five kinds of enum — and the answer
// comes back.

type elicitArgs struct {
	Message string `json:"message,omitempty" jsonschema:"description=The message to show the user"`
}

func eliciting(name, message string, schema map[string]any, answer func(tools.ElicitationAnswer) string) tools.Definition {
	return tools.Define(tools.Spec{Name: name, Description: "Asks the client a question (conformance fixture)."},
		func(ctx context.Context, env *tools.Env, a elicitArgs) (textResult, error) {
			if env.Elicit == nil {
				return textResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "%s: this call cannot ask anyone", name)
			}
			if a.Message != "" {
				message = a.Message
			}
			got, err := env.Elicit(ctx, tools.Elicitation{ServerName: "conformance", ToolName: name, Mode: "form", Message: message, RequestedSchema: schema})
			if err != nil {
				return textResult{}, err
			}
			return textResult{Text: answer(got)}, nil
		}, func(_ elicitArgs, r textResult) tools.Projection { return tools.Projection{Content: r.Text} })
}

func described(a tools.ElicitationAnswer) string {
	raw, _ := json.Marshal(a.Content)
	return fmt.Sprintf("action=%s, content=%s", a.Action, raw)
}

func conformanceElicitTools() []tools.Definition {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []tools.Definition{
		eliciting("test_elicitation", "Please provide your information", map[string]any{
			"type":       "object",
			"properties": map[string]any{"username": str("User's response"), "email": str("User's email address")},
			"required":   []any{"username", "email"},
		}, func(a tools.ElicitationAnswer) string { return "User response: " + described(a) }),
		eliciting("test_elicitation_sep1034_defaults", "Please review the defaults", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":     map[string]any{"type": "string", "default": "John Doe"},
				"age":      map[string]any{"type": "integer", "default": 30},
				"score":    map[string]any{"type": "number", "default": 95.5},
				"status":   map[string]any{"type": "string", "enum": []any{"active", "inactive", "pending"}, "default": "active"},
				"verified": map[string]any{"type": "boolean", "default": true},
			},
		}, func(a tools.ElicitationAnswer) string { return "Elicitation completed: " + described(a) }),
		eliciting("test_elicitation_sep1330_enums", "Please pick", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"untitledSingle": map[string]any{"type": "string", "enum": []any{"option1", "option2", "option3"}},
				"titledSingle": map[string]any{"type": "string", "oneOf": []any{
					map[string]any{"const": "value1", "title": "First Option"}, map[string]any{"const": "value2", "title": "Second Option"}, map[string]any{"const": "value3", "title": "Third Option"}}},
				"legacyEnum":    map[string]any{"type": "string", "enum": []any{"opt1", "opt2", "opt3"}, "enumNames": []any{"Option One", "Option Two", "Option Three"}},
				"untitledMulti": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"option1", "option2", "option3"}}},
				"titledMulti": map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{
					map[string]any{"const": "value1", "title": "First Choice"}, map[string]any{"const": "value2", "title": "Second Choice"}, map[string]any{"const": "value3", "title": "Third Choice"}}}},
			},
		}, func(a tools.ElicitationAnswer) string { return "Elicitation completed: " + described(a) }),
	}
}
