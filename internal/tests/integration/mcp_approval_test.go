package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
)

// TestProjectMCPServersFollowTheSettingsApprovals: a project checked out
// with its .mcp.json and the approvals Claude Code's prompt wrote
// (enabledMcpjsonServers in settings.local.json) and a rejection the
// team shares (disabledMcpjsonServers): the worker starts only the
// approved server, and a call to the others is refused naming the tool
// and the setting.
func TestProjectMCPServersFollowTheSettingsApprovals(t *testing.T) {
	servers := mcpservers.Require(t)
	project := t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": "node", "args": []string{servers.Entry("server-memory")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(project, "memory.jsonl")}},
		"everything": map[string]any{"command": "node", "args": []string{servers.Entry("server-everything"), "stdio"}},
		"filesystem": map[string]any{"command": "node", "args": []string{servers.Entry("server-filesystem"), "/"}},
	}}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), raw, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"),
		[]byte(`{"disabledMcpjsonServers": ["filesystem"], "permissions": {"allow": ["mcp__memory", "mcp__everything", "mcp__filesystem"]}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"),
		[]byte(`{"enabledMcpjsonServers": ["memory"]}`), 0o644))

	w := startWorker(t, inProject(project))
	require.NotNil(t, w.MCP())
	require.NoError(t, w.MCP().WaitReady(t.Context()))
	var started []string
	for _, st := range w.MCP().Status() {
		started = append(started, st.Name)
	}
	assert.Equal(t, []string{"memory"}, started, "only the approved server starts")

	allowed := []string{"mcp__memory", "mcp__everything", "mcp__filesystem"}
	res, _ := runAssignment(t, w.queue, mcpCall("approved", "mcp__memory__read_graph", map[string]any{}, allowed...))
	assert.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	for tool, setting := range map[string]string{"mcp__everything__echo": "enabledMcpjsonServers", "mcp__filesystem__read_text_file": "disabledMcpjsonServers"} {
		res, _ := runAssignment(t, w.queue, mcpCall("refused-"+tool, tool, map[string]any{"message": "hi", "path": "/etc/hostname"}, allowed...))
		require.Equal(t, contract.StatusFailed, res.Status, "%s ran", tool)
		t.Logf("%s: %s: %s", tool, res.Error.ErrorType, res.Error.LastErrorSummary)
		assert.Equal(t, fenixerr.TypePermissionDenied, res.Error.ErrorType)
		assert.Contains(t, res.Error.LastErrorSummary, tool)
		assert.Contains(t, res.Error.LastErrorSummary, setting, "the refusal names the setting that kept the server out")
	}
}
