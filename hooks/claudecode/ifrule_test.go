package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// The "if" field's permission rules, as the hooks reference's Bash table
// describes them.
func TestIfRule(t *testing.T) {
	tests := []struct {
		rule string
		tool string
		args map[string]any
		want bool
	}{
		{"Bash(git *)", "exec_command", map[string]any{"command_line": "FOO=bar git push"}, true},
		{"Bash(git *)", "exec_command", map[string]any{"command_line": "npm test && git push"}, true},
		{"Bash(git *)", "exec_command", map[string]any{"command_line": "npm test"}, false},
		{"Bash(git *)", "exec_command", map[string]any{"command_line": "git"}, true},
		{"Bash(rm *)", "exec_command", map[string]any{"command_line": "echo $(rm -rf /)"}, true},
		{"Bash(rm *)", "exec_command", map[string]any{"command_line": "echo `rm -rf /`"}, true},
		{"Bash(rm *)", "exec_command", map[string]any{"command_line": "echo $(date)"}, false},
		{"Bash(git push *)", "exec_command", map[string]any{"command_line": "echo $(date)"}, true},
		{"Bash(npm run test:*)", "exec_command", map[string]any{"command_line": "npm run test -- --watch"}, true},
		{"Bash(npm run test:*)", "exec_command", map[string]any{"command_line": "npm run build"}, false},
		{"Bash(rm *)", "exec_command", map[string]any{"command_line": "if [ -x"}, true}, // unparseable: run
		{"Bash(rm *)", "process_exec", map[string]any{"command_line": "rm -rf x"}, true},
		{"Bash", "exec_command", map[string]any{"command_line": "anything"}, true},
		{"Bash(rm *)", "workspace_write", map[string]any{"path": "rm"}, false}, // another tool
		{"Edit(*.ts)", "workspace_edit", map[string]any{"path": "src/a.ts"}, true},
		{"Edit(*.ts)", "workspace_edit", map[string]any{"path": "src/a.go"}, false},
		{"Write(src/**)", "workspace_write", map[string]any{"path": "src/deep/a.go"}, true},
		{"Write(./src/**)", "workspace_write", map[string]any{"path": "lib/a.go"}, false},
		{"Read(.env)", "workspace_read", map[string]any{"path": "config/.env"}, true},
		{"Read(//srv/ws/secrets/**)", "workspace_read", map[string]any{"path": "secrets/k"}, true},
		{"Read(/secrets/**)", "workspace_read", map[string]any{"path": "secrets/k"}, true},
		{"WebFetch(domain:example.com)", "web_fetch", map[string]any{"url": "https://example.com/x"}, true},
		{"WebFetch(domain:example.com)", "web_fetch", map[string]any{"url": "https://evil.com/example.com"}, false},
		{"WebFetch(domain:*.example.com)", "web_fetch", map[string]any{"url": "https://api.example.com/"}, true},
		{"Agent(review*)", "spawn_subagent", map[string]any{"task": "x", "profile": "reviewer"}, true},
		{"exec_command(git *)", "exec_command", map[string]any{"command_line": "git log"}, true}, // Fenix names work too
	}
	for _, tc := range tests {
		rule, err := parseIfRule(tc.rule, "/srv/ws")
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		names := append(append([]string{}, ToolNames(tc.tool)...), tc.tool)
		if got := rule.matches(names, tc.tool, tc.args, "/srv/ws"); got != tc.want {
			t.Errorf("%s on %s %v = %v, want %v", tc.rule, tc.tool, tc.args, got, tc.want)
		}
	}
	if _, err := parseIfRule("Bash(git *) && Edit", ""); err == nil {
		t.Error("a compound rule parsed")
	}
}

// A handler with "if" runs only for matching tool calls, and never on
// events that are not tool events.
func TestIfFieldFiltersHandlers(t *testing.T) {
	dir := t.TempDir()
	h := scriptHook(t, dir, "PreToolUse", `echo "no force pushes" >&2; exit 2`, claude, func(c *cmdHook) { c.If = "Bash(git push *)" })
	r := registryOf(h)
	ev := commandPreEvent(dir)
	for cmd, want := range map[string]bool{"git push --force": true, "git status": false, "ls && git push origin main": true} {
		ev.ToolInput = map[string]any{"command_line": cmd}
		if got := r.RunPreToolUse(context.Background(), ev).Blocked(); got != want {
			t.Errorf("%s: blocked = %v, want %v", cmd, got, want)
		}
	}
	start := scriptHook(t, dir, "SessionStart", `echo ran > "$FENIX_HOOKS_DIR/ran"`, func(c *cmdHook) { c.If = "Bash(git *)"; c.Dir = dir })
	registryOf(start).RunSessionStart(context.Background(), hooks.SessionStartEvent{Session: hooks.Session{WorkspaceRoot: dir}})
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a handler with \"if\" ran on SessionStart")
	}
}

func TestTranscriptJSONL(t *testing.T) {
	w, err := NewTranscriptWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := hooks.Session{SessionID: "agent-turn-c1/t1", WorkspaceRoot: "/srv/ws"}
	msgs := []contract.Message{
		{Role: contract.RoleSystem, Content: "You are Fenix."},
		{Role: contract.RoleUser, Content: "List the files"},
		{Role: contract.RoleAssistant, Content: "Looking.", ToolCalls: []contract.ToolCall{{CallID: "c1", ToolName: "exec_command", Arguments: map[string]any{"command_line": "ls"}}}},
		{Role: contract.RoleTool, ToolCallID: "c1", Content: "README.md"},
		{Role: contract.RoleAssistant, Content: "One file: README.md"},
	}
	path, err := w.Write(s, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != w.Dir || strings.Contains(filepath.Base(path), "/") {
		t.Errorf("path %s", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 5 {
		t.Fatalf("%d lines", len(lines))
	}
	types := []string{"system", "user", "assistant", "user", "assistant"}
	for i, l := range lines {
		if l["type"] != types[i] || l["sessionId"] != s.SessionID || l["uuid"] == "" {
			t.Errorf("line %d = %v", i, l)
		}
		if i > 0 && l["parentUuid"] != lines[i-1]["uuid"] {
			t.Errorf("line %d parent = %v", i, l["parentUuid"])
		}
	}
	blocks := lines[2]["message"].(map[string]any)["content"].([]any)
	use := blocks[1].(map[string]any)
	if use["type"] != "tool_use" || use["name"] != "Bash" || use["input"].(map[string]any)["command"] != "ls" {
		t.Errorf("tool_use block = %v", use)
	}
	result := lines[3]["message"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if result["type"] != "tool_result" || result["tool_use_id"] != "c1" || result["content"] != "README.md" {
		t.Errorf("tool_result block = %v", result)
	}
	// Rewriting the same transcript keeps the file; a session without one
	// still gets a readable, empty file.
	again, err := w.Write(s, msgs)
	if err != nil || again != path {
		t.Errorf("rewrite: %s, %v", again, err)
	}
	empty, err := w.Ensure("other-session")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(empty); err != nil || info.Size() != 0 {
		t.Errorf("empty transcript: %v, %v", info, err)
	}
}
