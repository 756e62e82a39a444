package claudecode

import (
	"strings"
	"testing"
)

// The matcher rules of Claude Code's hooks reference: the characters of a
// matcher decide between match-all, an exact list and a JavaScript regex.
func TestMatcherSemantics(t *testing.T) {
	tests := []struct {
		matcher string
		name    string
		want    bool
	}{
		{"", "Bash", true},
		{"*", "Bash", true},
		{"  ", "Bash", true},
		// Exact strings and lists.
		{"Bash", "Bash", true},
		{"Bash", "BashOutput", false},
		{"Bash", "bash", false}, // case-sensitive
		{"Edit|Write", "Write", true},
		{"Edit|Write", "Read", false},
		{"Edit, Write", "Write", true}, // a comma list
		{"Edit,Write", "Edit", true},
		{" Edit ,  MultiEdit | Write ", "MultiEdit", true},
		{"Edit, Write", "Edit, Write", false}, // the list, not the literal text
		{"mcp__memory", "mcp__memory__create_entities", false},
		{"exec_command", "exec_command_v2", false},
		// Anything else is an unanchored JavaScript regex.
		{"Notebook.*", "NotebookEdit", true},
		{"^Notebook", "MyNotebook", false},
		{"Edit", "MultiEdit", false},  // exact, not a regex
		{"Edit.*", "MultiEdit", true}, // unanchored regex
		{"mcp__memory__.*", "mcp__memory__create_entities", true},
		{"mcp__.*__write.*", "mcp__fs__write_file", true},
		{"mcp__.*__write.*", "mcp__fs__read_file", false},
		{"^(Bash|Write)$", "Write", true},
		{"^(?!Read$).*", "Write", true}, // a lookahead, which Go's regexp lacks
		{"^(?!Read$).*", "Read", false},
	}
	for _, tc := range tests {
		m, err := CompileMatcher(tc.matcher)
		if err != nil {
			t.Fatalf("%q: %v", tc.matcher, err)
		}
		if got := m.Match(tc.name); got != tc.want {
			t.Errorf("matcher %q on %q = %v, want %v", tc.matcher, tc.name, got, tc.want)
		}
	}
}

func TestMatcherMatchesAnyAlias(t *testing.T) {
	m, err := CompileMatcher("Task")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Match(ToolNames("spawn_subagent")...) {
		t.Error("the older name Task must still match spawn_subagent (Agent)")
	}
	if m.Match(ToolNames("exec_command")...) {
		t.Error("Task matched Bash")
	}
}

func TestMatcherInvalidRegex(t *testing.T) {
	_, err := CompileMatcher("exec(")
	if err == nil || !strings.Contains(err.Error(), "JavaScript regular expression") {
		t.Errorf("err = %v", err)
	}
}

// A tool is matched by its Claude Code names in a Claude Code file and by
// its Fenix name in a Fenix file; tools Claude Code has no equivalent of
// keep their Fenix names in both.
func TestToolNamesPerDialect(t *testing.T) {
	tests := []struct {
		dialect Dialect
		tool    string
		want    string
	}{
		{DialectClaude, "exec_command", "Bash"},
		{DialectClaude, "process_exec", "Bash"},
		{DialectClaude, "workspace_read", "Read"},
		{DialectClaude, "workspace_write", "Write"},
		{DialectClaude, "workspace_edit", "Edit,MultiEdit"},
		{DialectClaude, "workspace_list", "Glob"},
		{DialectClaude, "workspace_search", "Grep"},
		{DialectClaude, "web_fetch", "WebFetch"},
		{DialectClaude, "web_search", "WebSearch"},
		{DialectClaude, "spawn_subagent", "Agent,Task"},
		{DialectClaude, "calculator", "calculator"},
		{DialectFenix, "exec_command", "exec_command"},
		{DialectFenix, "workspace_edit", "workspace_edit"},
	}
	for _, tc := range tests {
		if got := strings.Join(toolNamesFor(tc.dialect, tc.tool), ","); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.dialect, tc.tool, got, tc.want)
		}
	}
	if got := FenixToolsFor("Bash"); strings.Join(got, ",") != "exec_command,process_exec" {
		t.Errorf("FenixToolsFor(Bash) = %v", got)
	}
}
