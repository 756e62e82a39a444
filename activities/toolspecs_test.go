package activities

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fenixrt/fenix/tools"
)

// staticSource serves fixed dynamic tools, as an MCP manager does.
type staticSource []tools.Definition

func (s staticSource) Tool(name string) (tools.Definition, bool, error) {
	for _, d := range s {
		if d.Name == name {
			return d, true, nil
		}
	}
	return tools.Definition{}, false, nil
}

func (s staticSource) Definitions() []tools.Definition { return s }

// AgentTurn offers the model every tool an "mcp__<server>" entry grants,
// with the server's own schema, beside the built-ins it names.
func TestToolSpecsExpandMCPServerEntries(t *testing.T) {
	var src staticSource
	for _, name := range []string{"mcp__memory__read_graph", "mcp__memory__create_entities", "mcp__other__x"} {
		d, err := tools.DefineDynamic(tools.DynamicSpec{
			Spec:   tools.Spec{Name: name, Description: "d " + name},
			Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			Execute: func(context.Context, *tools.Env, map[string]any) (json.RawMessage, error) {
				return json.RawMessage(`{}`), nil
			},
			Project: func(map[string]any, json.RawMessage) (tools.Projection, error) { return tools.Projection{}, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, d)
	}
	a := &Activities{Tools: tools.Builtin().WithSources(src)}
	specs := a.toolSpecs([]string{"calculator", "mcp__memory", "mcp__memory__read_graph", SubagentToolName})
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	want := []string{SubagentToolName, "calculator", "mcp__memory__read_graph", "mcp__memory__create_entities"}
	if len(names) != len(want) {
		t.Fatalf("tools offered = %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("tools offered = %v, want %v", names, want)
		}
	}
	if string(specs[2].Parameters) != `{"type":"object","properties":{"q":{"type":"string"}}}` {
		t.Errorf("schema = %s, want the server's inputSchema", specs[2].Parameters)
	}
}
