package claudecode

import (
	"github.com/fenixrt/fenix/hooks"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/tools"
)

const aliasRoot = "/srv/ws"

// Claude Code's tool_input shapes, and the round trip back: a hook that
// echoes tool_input as updatedInput must leave the call unchanged, and the
// result must pass the tool's own schema.
func TestToolInputMapsBothWays(t *testing.T) {
	registry := tools.Builtin()
	tests := []struct {
		tool   string
		args   map[string]any
		claude map[string]any
	}{
		{"exec_command", map[string]any{"command_line": "npm test", "timeout_seconds": float64(30), "cwd": "web"},
			map[string]any{"command": "npm test", "timeout": float64(30000), "cwd": "web"}},
		{"process_exec", map[string]any{"command_line": "npm start", "port": float64(3000)},
			map[string]any{"command": "npm start", "port": float64(3000), "run_in_background": true}},
		// The env argument shows as the assignments a Claude Code agent
		// would write before the command.
		{"exec_command", map[string]any{"command_line": "ls", "env": map[string]any{"NODE_ENV": "test", "LD_PRELOAD": "./evil.so", "MSG": "it's ok"}},
			map[string]any{"command": `LD_PRELOAD=./evil.so MSG='it'\''s ok' NODE_ENV=test ls`,
				"env": map[string]any{"NODE_ENV": "test", "LD_PRELOAD": "./evil.so", "MSG": "it's ok"}}},
		{"workspace_read", map[string]any{"path": "src/main.go"},
			map[string]any{"file_path": "/srv/ws/src/main.go"}},
		{"workspace_write", map[string]any{"path": ".env", "content": "A=1"},
			map[string]any{"file_path": "/srv/ws/.env", "content": "A=1"}},
		{"workspace_edit", map[string]any{"path": "a.go", "old_string": "x", "new_string": "y", "replace_all": true},
			map[string]any{"file_path": "/srv/ws/a.go", "old_string": "x", "new_string": "y", "replace_all": true}},
		{"workspace_list", map[string]any{"path": "src", "recursive": true},
			map[string]any{"path": "/srv/ws/src", "pattern": "**/*"}},
		{"workspace_search", map[string]any{"pattern": "TODO", "regex": true, "case_insensitive": true, "path": "src", "max_results": float64(5)},
			map[string]any{"pattern": "TODO", "regex": true, "-i": true, "path": "/srv/ws/src", "head_limit": float64(5), "output_mode": "content"}},
		{"web_fetch", map[string]any{"url": "https://example.com"},
			map[string]any{"url": "https://example.com", "prompt": ""}},
		{"web_search", map[string]any{"query": "temporal"},
			map[string]any{"query": "temporal"}},
		{"spawn_subagent", map[string]any{"task": "find the bug\nin a.go", "profile": "explorer"},
			map[string]any{"prompt": "find the bug\nin a.go", "description": "find the bug", "subagent_type": "explorer"}},
	}
	for _, tc := range tests {
		got := hookToolInput(DialectClaude, tc.tool, hooks.CloneArgs(tc.args), aliasRoot)
		if !reflect.DeepEqual(got, tc.claude) {
			t.Errorf("%s: tool_input = %v, want %v", tc.tool, got, tc.claude)
		}
		back := fenixArgs(DialectClaude, tc.tool, got, aliasRoot)
		if !reflect.DeepEqual(back, tc.args) {
			t.Errorf("%s: updatedInput echoed back = %v, want the original %v", tc.tool, back, tc.args)
		}
		if def, ok := registry.Lookup(tc.tool); ok {
			if err := def.Validate(back); err != nil {
				t.Errorf("%s: mapped-back arguments fail the schema: %v", tc.tool, err)
			}
		}
		// The Fenix dialect passes arguments through untouched.
		if got := hookToolInput(DialectFenix, tc.tool, hooks.CloneArgs(tc.args), aliasRoot); !reflect.DeepEqual(got, tc.args) {
			t.Errorf("%s: fenix tool_input = %v", tc.tool, got)
		}
	}
}

// A script's own updatedInput, written the way Claude Code users write
// it, becomes Fenix arguments the tool schema then checks as usual.
func TestUpdatedInputIsValidatedByTheToolSchema(t *testing.T) {
	registry := tools.Builtin()
	tests := []struct {
		tool    string
		updated map[string]any
		want    map[string]any
		invalid string
	}{
		{tool: "exec_command", updated: map[string]any{"command": "npm test -- --ci", "description": "Run tests", "timeout": float64(1500)},
			want: map[string]any{"command_line": "npm test -- --ci", "timeout_seconds": float64(2)}},
		{tool: "workspace_write", updated: map[string]any{"file_path": "/srv/ws/safe/out.txt", "content": "ok"},
			want: map[string]any{"path": "safe/out.txt", "content": "ok"}},
		{tool: "workspace_write", updated: map[string]any{"file_path": "/etc/passwd", "content": "x"},
			want: map[string]any{"path": "/etc/passwd", "content": "x"}}, // the workspace refuses it when the tool runs
		{tool: "workspace_search", updated: map[string]any{"pattern": "fo+", "output_mode": "files_with_matches"},
			want: map[string]any{"pattern": "fo+", "regex": true}},
		{tool: "workspace_search", updated: map[string]any{"pattern": "x", "multiline": true}, invalid: "multiline"},
		{tool: "exec_command", updated: map[string]any{"cmd": "ls"}, invalid: "cmd"},
	}
	for _, tc := range tests {
		got := fenixArgs(DialectClaude, tc.tool, tc.updated, aliasRoot)
		def, _ := registry.Lookup(tc.tool)
		err := def.Validate(got)
		if tc.invalid != "" {
			if err == nil || !strings.Contains(err.Error(), tc.invalid) {
				t.Errorf("%s %v: err = %v, want a schema error naming %q", tc.tool, tc.updated, err, tc.invalid)
			}
			continue
		}
		if !reflect.DeepEqual(got, tc.want) || err != nil {
			t.Errorf("%s %v: args %v (err %v), want %v", tc.tool, tc.updated, got, err, tc.want)
		}
	}
}

func TestToolResponseShapes(t *testing.T) {
	tests := []struct {
		tool string
		args map[string]any
		raw  string
		want map[string]any
	}{
		{"exec_command", map[string]any{"command_line": "ls"}, `{"stdout":"a\n","stderr":"","status":"exited","exit_status":0}`,
			map[string]any{"stdout": "a\n", "stderr": "", "interrupted": false, "isImage": false, "exit_code": float64(0), "status": "exited"}},
		{"exec_command", map[string]any{"command_line": "sleep 9"}, `{"stdout":"","stderr":"","status":"timed_out","exit_status":-1}`,
			map[string]any{"stdout": "", "stderr": "", "interrupted": true, "isImage": false, "exit_code": float64(-1), "status": "timed_out"}},
		{"workspace_write", map[string]any{"path": "a.txt", "content": "x"}, `{"path":"a.txt","bytes":1,"created":true}`,
			map[string]any{"type": "create", "filePath": "/srv/ws/a.txt", "success": true}},
		{"workspace_edit", map[string]any{"path": "a.go", "old_string": "x", "new_string": "y"}, `{"path":"a.go","replacements":1}`,
			map[string]any{"filePath": "/srv/ws/a.go", "oldString": "x", "newString": "y", "replaceAll": false, "replacements": float64(1), "success": true}},
		{"web_fetch", map[string]any{"url": "https://e.com"}, `{"final_url":"https://e.com/","status_code":200,"status":"200 OK","content":"hi","bytes":2}`,
			map[string]any{"url": "https://e.com/", "code": float64(200), "codeText": "200 OK", "result": "hi", "bytes": float64(2)}},
	}
	for _, tc := range tests {
		raw := hookToolResponse(DialectClaude, tc.tool, json.RawMessage(tc.raw), tc.args, "content", aliasRoot)
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: tool_response = %v, want %v", tc.tool, got, tc.want)
		}
	}
	read := hookToolResponse(DialectClaude, "workspace_read", json.RawMessage(`{"path":"a","content":"l1\nl2\n"}`), map[string]any{"path": "a"}, "", aliasRoot)
	var r struct {
		File struct {
			FilePath string `json:"filePath"`
			Content  string `json:"content"`
			NumLines int    `json:"numLines"`
		} `json:"file"`
	}
	if err := json.Unmarshal(read, &r); err != nil || r.File.FilePath != filepath.Join(aliasRoot, "a") || r.File.NumLines != 2 {
		t.Errorf("Read response = %s", read)
	}
	if got := hookToolResponse(DialectFenix, "exec_command", json.RawMessage(`{"stdout":"x"}`), nil, "", aliasRoot); string(got) != `{"stdout":"x"}` {
		t.Errorf("fenix response = %s, want the raw result", got)
	}
}

// updatedToolOutput in a tool's Claude Code output shape becomes the text
// the model sees.
func TestUpdatedToolOutputToContent(t *testing.T) {
	tests := []struct {
		tool string
		out  any
		want string
	}{
		{"exec_command", map[string]any{"stdout": "[redacted]", "stderr": "", "interrupted": false}, "[redacted]"},
		{"exec_command", map[string]any{"stdout": "out", "stderr": "err"}, "out\nerr"},
		{"workspace_read", map[string]any{"type": "text", "file": map[string]any{"content": "safe"}}, "safe"},
		{"web_fetch", map[string]any{"result": "summary"}, "summary"},
		{"calculator", map[string]any{"value": float64(4)}, `{"value":4}`},
		{"exec_command", "plain", "plain"},
	}
	for _, tc := range tests {
		got, err := outputContent(DialectClaude, tc.tool, tc.out)
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %q (%v), want %q", tc.tool, tc.out, got, err, tc.want)
		}
	}
}

func TestSubagentResponseIsItsAnswer(t *testing.T) {
	raw := hookToolResponse(DialectClaude, "spawn_subagent", nil, map[string]any{"task": "x"}, "found 3 bugs", aliasRoot)
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got["status"] != "completed" || agentText(got) != "found 3 bugs" {
		t.Errorf("Agent tool_response = %s", raw)
	}
}

// A hook sees a path that climbs out as the agent wrote it, made absolute
// but not cleaned, so its own ".." check fires; the workspace still
// decides.
func TestHooksSeePathsAsWritten(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "dotdot.py")
	if err := os.WriteFile(script, []byte(`#!/usr/bin/env python3
import json, sys
p = json.load(sys.stdin)["tool_input"]["file_path"]
if ".." in p.split("/"):
    print("refusing a path that climbs out: " + p, file=sys.stderr)
    sys.exit(2)
`), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newCommandHook(t, cmdHook{Matcher: "Write", Command: script, Dialect: DialectClaude})
	ev := hooks.PreToolUseEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "workspace_write",
		ToolInput: map[string]any{"path": "../x", "content": "a"}}
	action, err := h.PreToolUse(context.Background(), ev)
	want := "refusing a path that climbs out: " + dir + "/../x"
	if err != nil || action.Kind != hooks.KindBlock || action.Reason != want {
		t.Errorf("action = %+v, %v; want a block with %q", action, err, want)
	}
	if got := hookToolInput(DialectFenix, "workspace_write", ev.ToolInput, dir)["path"]; got != "../x" {
		t.Errorf("fenix dialect path = %v", got)
	}
	// A path that stays in is shown cleaned, as the workspace opens it: a
	// guard allowing writes under src/ sees src/../.gitconfig as the
	// .gitconfig it is.
	in := map[string]any{"path": "src/../.gitconfig", "content": "a"}
	if got := hookToolInput(DialectClaude, "workspace_write", in, dir)["file_path"]; got != filepath.Join(dir, ".gitconfig") {
		t.Errorf("file_path of src/../.gitconfig = %v, want %s", got, filepath.Join(dir, ".gitconfig"))
	}
}
