package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/tools/mcp"
)

// Servers reached over the network, as a Claude Code user lists them in
// .mcp.json: one over HTTP+SSE ("type": "sse", the 2024-11-05 transport
// many hosted servers still speak) and one over Streamable HTTP, both
// server-everything on loopback, behind the project's PreToolUse hook.
func TestRemoteMCPServersBehindHooksOnDevServer(t *testing.T) {
	servers := mcpservers.Require(t)
	project := t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{
		"hosted":   map[string]any{"type": "sse", "url": servers.StartEverythingSSE(t), "headers": map[string]string{"Authorization": "Bearer ${HOSTED_TOKEN:-none}"}},
		"streamed": map[string]any{"type": "http", "url": servers.StartEverythingHTTP(t)},
	}}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), raw, 0o644))
	writeClaudeProject(t, project, map[string]string{"no-destruction.sh": `#!/bin/sh
input=$(cat)
case "$input" in
  *"rm -rf"*) echo "destructive text may not leave this machine" >&2; exit 2 ;;
esac
exit 0
`}, `{"hooks": {"PreToolUse": [
  {"matcher": "mcp__.*__echo", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/no-destruction.sh"}]}
]}}`)

	w := startWorker(t, inProject(project))
	require.NotNil(t, w.MCP(), "the project's .mcp.json was not picked up")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))

	for _, server := range []struct{ name, transport string }{{"hosted", mcp.TransportSSE}, {"streamed", mcp.TransportHTTP}} {
		t.Run(server.transport, func(t *testing.T) {
			st := mcpStatus(w, server.name)
			require.True(t, st.Connected, "%+v", st)
			assert.Equal(t, server.transport, st.Type)
			tool := "mcp__" + server.name + "__echo"

			res, run := runAssignment(t, w.queue, mcpCall(server.name+"-echo", tool, map[string]any{"message": "hello"}, "mcp__"+server.name))
			require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
			assert.Equal(t, "Echo: hello", res.Output.Content)
			pre, ok := traceEntry(res, "pre_tool_use")
			require.True(t, ok, "the PreToolUse hook ran")
			assert.Equal(t, "continue", pre.Get("action"), "%+v", pre)
			assert.Contains(t, fmt.Sprint(pre.Get("hooks")), "no-destruction.sh", "the project's hook judged the call")
			assert.Equal(t, 1, auditCount(t, w.Audit(), run.GetID(), audit.EventToolCall))

			requireRejected(t, w.queue, mcpCall(server.name+"-rm", tool, map[string]any{"message": "rm -rf /"}, "mcp__"+server.name),
				fenixerr.TypeToolBlocked, "destructive text may not leave this machine")
		})
	}
}
