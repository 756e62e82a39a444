package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/internal/worker"
)

// The resources of the official everything server reach the agent
// through list_mcp_resources and read_mcp_resource, governed by a Claude
// Code project's settings under Claude Code's names for them: a
// PreToolUse hook on ReadMcpResourceTool that reads tool_input.uri keeps
// one document out, and a deny rule on ListMcpResourcesTool refuses the
// listing in a project that has one.
func TestMCPResourcesGovernedOnDevServer(t *testing.T) {
	project, _ := everythingProject(t, `{"hooks": {"PreToolUse": [{"matcher": "ReadMcpResourceTool", "hooks": [
  {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/internal-docs.sh"}]}]}}`)
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "internal-docs.sh"), []byte(`#!/bin/sh
input=$(cat)
case "$input" in *'"tool_name":"ReadMcpResourceTool"'*) ;; *) exit 0 ;; esac
case "$input" in
  *'"uri":"demo://resource/static/document/architecture.md"'*) echo "architecture notes stay internal" >&2; exit 2 ;;
esac
exit 0
`), 0o755))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))
	allowed := []string{"list_mcp_resources", "read_mcp_resource"}

	res, _ := runAssignment(t, w.queue, mcpCall("list", "list_mcp_resources", map[string]any{"server": "everything"}, allowed...))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, `"uri":"demo://resource/static/document/features.md"`)

	res, _ = runAssignment(t, w.queue, mcpCall("read", "read_mcp_resource",
		map[string]any{"server": "everything", "uri": "demo://resource/static/document/features.md"}, allowed...))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "# ", "the document's markdown")

	requireRejected(t, w.queue, mcpCall("read-internal", "read_mcp_resource",
		map[string]any{"server": "everything", "uri": "demo://resource/static/document/architecture.md"}, allowed...),
		fenixerr.TypeToolBlocked, "architecture notes stay internal")

	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(`{"permissions": {"deny": ["ListMcpResourcesTool"]}}`), 0o644))
	denied := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	require.NoError(t, denied.MCP().WaitReady(ctx))
	res, _ = runAssignment(t, denied.queue, mcpCall("list-denied", "list_mcp_resources", map[string]any{}, allowed...))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "ListMcpResourcesTool")
}

// everythingProject is a project whose .mcp.json names the official
// everything server (npm) and whose .claude/settings.json is settings.
func everythingProject(t *testing.T, settings string) (string, mcpservers.Servers) {
	t.Helper()
	servers := mcpservers.Require(t)
	return servers.EverythingProject(t, settings), servers
}

// Claude Code bounds an MCP tool call by MCP_TOOL_TIMEOUT (and a server's
// start by MCP_TIMEOUT), in milliseconds, which teams set in the settings
// files' env; Fenix's calls ran for its own ten minutes whatever they
// said. A settings file's MCP_TOOL_TIMEOUT of 2 s ends a 60 s operation of
// the everything server at about 2 s, with a result.
func TestMCPToolTimeoutFromTheSettingsBoundsACall(t *testing.T) {
	project, _ := everythingProject(t, `{"permissions": {"allow": ["mcp__everything"]}, "env": {"MCP_TOOL_TIMEOUT": "2000"}}`)
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))
	started := time.Now()
	res, _ := runAssignment(t, w.queue, mcpCall("long", "mcp__everything__trigger-long-running-operation",
		map[string]any{"duration": 60, "steps": 60}, "mcp__everything"))
	took := time.Since(started)
	require.Equal(t, contract.StatusFailed, res.Status, "%+v", res.Output)
	assert.Less(t, took, 30*time.Second, "the call ran past its MCP_TOOL_TIMEOUT: %+v", res.Error)
	assert.Equal(t, fenixerr.TypeToolTimeout, res.Error.ErrorType, "%+v", res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, "did not answer within 2s (MCP_TOOL_TIMEOUT)")
}
