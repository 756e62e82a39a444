package worker

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every file the worker reads MCP servers from is handed to the
// workspaces as protected, absolute: a hook project's .mcp.json even
// before it exists, and each -mcp-config file, a relative one included.
func TestMCPConfigFiles(t *testing.T) {
	project, other := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(other)
	cfg := Config{HookSources: []string{project}, MCPConfig: "mcp.json" + string(filepath.ListSeparator) + "/etc/fenix/mcp.json"}
	got := mcpConfigFiles(cfg)
	want := []string{filepath.Join(project, ".mcp.json"), filepath.Join(other, "mcp.json"), "/etc/fenix/mcp.json"}
	if !slices.Equal(got, want) {
		t.Errorf("mcpConfigFiles = %q, want %q", got, want)
	}
}

// Claude Code's MCP_TIMEOUT and MCP_TOOL_TIMEOUT are milliseconds, read
// from the settings files' env before the worker's environment; a value
// that is no positive number (or more than a day) is ignored, loudly.
func TestMCPTimeoutsAreClaudeCodes(t *testing.T) {
	logs := &strings.Builder{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	environ := map[string]string{"MCP_TIMEOUT": "120000", "MCP_TOOL_TIMEOUT": "5000"}
	connect, call := mcpTimeouts(map[string]string{"MCP_TOOL_TIMEOUT": "90000"}, func(k string) string { return environ[k] }, logger)
	if connect != 2*time.Minute || call != 90*time.Second {
		t.Errorf("mcpTimeouts = %s, %s; want 2m0s (the worker's) and 1m30s (the settings')", connect, call)
	}
	connect, call = mcpTimeouts(map[string]string{"MCP_TIMEOUT": "soon", "MCP_TOOL_TIMEOUT": "-1"}, func(string) string { return "" }, logger)
	if connect != 0 || call != 0 {
		t.Errorf("mcpTimeouts of bad values = %s, %s; want the defaults", connect, call)
	}
	if !strings.Contains(logs.String(), "MCP_TIMEOUT is ignored") || !strings.Contains(logs.String(), "MCP_TOOL_TIMEOUT is ignored") {
		t.Errorf("no warning: %s", logs)
	}
}
