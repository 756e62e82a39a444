package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
)

// An MCP server that writes bytes which are not UTF-8 to stderr and exits:
// its stderr is quoted in the error of a call to its tools. That error's
// text reached the stage's Temporal failure unchanged, which the worker
// cannot marshal (protobuf strings are UTF-8), so the workflow task that
// recorded the stage timed out again and again and the run never ended.
// Now the call fails with ToolUnavailableError naming the server, its
// stderr included.
func TestMCPServerWithBinaryStderrEndsWithAResult(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "broken.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nprintf 'bad \\377\\376 news\\n' >&2\nexit 3\n"), 0o755))
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"broken": map[string]any{"command": script}}})
	require.NoError(t, err)
	cfg := filepath.Join(dir, "mcp.json")
	require.NoError(t, os.WriteFile(cfg, raw, 0o644))
	w := startWorker(t, func(c *worker.Config) { c.MCPConfig = cfg; c.MCPStartWait = 5 * time.Second })
	require.Eventually(t, func() bool { return mcpStatus(w, "broken").LastError != "" }, 10*time.Second, 20*time.Millisecond)

	id := "bounds-mcp-binary-stderr"
	res := runBounded(t, w.queue, id, assignment(id, map[string]any{"call_id": "c1", "tool_name": "mcp__broken__t",
		"arguments": map[string]any{}}, "mcp__broken"))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolUnavailable, res.Error.ErrorType, errorType(res))
	assert.Contains(t, res.Error.LastErrorSummary, `MCP server "broken"`)
	assert.Contains(t, res.Error.LastErrorSummary, "bad \uFFFD news")
}
