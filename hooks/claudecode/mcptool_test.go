package claudecode

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

func TestMCPToolInputSubstitution(t *testing.T) {
	event := map[string]any{"session_id": "s1", "cwd": "/w", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "ls", "timeout": 5.0, "nested": map[string]any{"k": "v"}}}
	input := map[string]any{
		"cmd":     "${tool_input.command}",
		"whole":   "${tool_input.timeout}",
		"text":    "run ${tool_input.command} in ${cwd} (${tool_input.timeout}s) ${tool_input.missing}",
		"list":    []any{"${session_id}", 3.0},
		"object":  "${tool_input.nested}",
		"literal": "$HOME and ${not closed",
	}
	got := substituteInput(input, event)
	want := map[string]any{
		"cmd": "ls", "whole": 5.0, "text": "run ls in /w (5s) ", "list": []any{"s1", 3.0},
		"object": map[string]any{"k": "v"}, "literal": "$HOME and ${not closed",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

type fakeMCP struct {
	text string
	err  error
	args map[string]any
}

func (f *fakeMCP) CallMCPTool(_ context.Context, _, _ string, args map[string]any) (string, error) {
	f.args = args
	return f.text, f.err
}

func TestMCPToolTransportReadsTheToolTextLikeStdout(t *testing.T) {
	f := &fakeMCP{text: `{"decision":"block","reason":"no"}`}
	tr := &mcpToolTransport{server: "s", tool: "t", input: map[string]any{"p": "${tool_name}"}, caller: f}
	o, err := tr.call(context.Background(), nil, hooks.Session{}, []byte(`{"tool_name":"Write"}`))
	if err != nil || string(o.stdout) != f.text || o.exitCode != 0 || f.args["p"] != "Write" {
		t.Fatalf("outcome %+v, err %v, args %v", o, err, f.args)
	}
	f.err = errors.New("reported an error: boom")
	if _, err := tr.call(context.Background(), nil, hooks.Session{}, []byte(`{}`)); err == nil || err.Error() != "mcp_tool s/t: reported an error: boom" {
		t.Fatalf("err = %v", err)
	}
}
