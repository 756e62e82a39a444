package worker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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
