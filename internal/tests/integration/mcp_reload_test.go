package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/internal/worker"
)

// An operator who removes a server from .mcp.json (an agent was abusing
// it) and sends SIGHUP expects it gone: the reload used to accept the
// file but leave the server serving until the worker's next start. Now
// the reload stops it, its tools are refused at once, a server put back
// starts, and an unchanged server's process runs on — on the dev server,
// with the npm reference servers.
func TestSIGHUPReconfiguresMCPServers(t *testing.T) {
	w, project := startMCPWorker(t)
	echo := func(id string) contract.Result {
		res, _ := runAssignment(t, w.queue, mcpCall(id, "mcp__everything__echo", map[string]any{"message": "still here"}, "mcp__everything"))
		return res
	}
	require.Equal(t, contract.StatusCompleted, echo("echo-before").Status)
	memoryPID, everythingPID := mcpStatus(w, "memory").PID, mcpStatus(w, "everything").PID
	require.NotZero(t, memoryPID)
	require.NotZero(t, everythingPID)

	path := filepath.Join(project, ".mcp.json")
	original, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]map[string]any
	require.NoError(t, json.Unmarshal(original, &cfg))
	delete(cfg["mcpServers"], "everything")
	without, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, without, 0o644))
	_, err = w.ReloadHooks()
	require.NoError(t, err)

	res := echo("echo-removed")
	require.Equal(t, contract.StatusFailed, res.Status, "the removed server still served: %+v", res.Output)
	t.Logf("a call to the removed server: %s: %s", res.Error.ErrorType, res.Error.LastErrorSummary)
	assert.Zero(t, mcpStatus(w, "everything").Name, "the removed server is still configured")
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(everythingPID, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Error(t, syscall.Kill(everythingPID, 0), "the removed server's process %d still runs", everythingPID)
	assert.Equal(t, memoryPID, mcpStatus(w, "memory").PID, "the unchanged server was restarted")

	require.NoError(t, os.WriteFile(path, original, 0o644))
	_, err = w.ReloadHooks()
	require.NoError(t, err)
	res = echo("echo-back")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "still here")
	assert.Equal(t, memoryPID, mcpStatus(w, "memory").PID, "the unchanged server was restarted")
}

// A worker whose project had no .mcp.json yet used to have no MCP
// manager at all: a SIGHUP after the operator added one could not start
// its servers before the next start. It keeps an empty one now.
func TestSIGHUPStartsTheServersOfANewMCPConfig(t *testing.T) {
	servers := mcpservers.Require(t)
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{}`), 0o644))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	read := func(id string) contract.Result {
		res, _ := runAssignment(t, w.queue, mcpCall(id, "mcp__memory__read_graph", map[string]any{}, "mcp__memory"))
		return res
	}
	require.Equal(t, contract.StatusFailed, read("graph-before").Status)

	cfg := map[string]any{"mcpServers": map[string]any{"memory": map[string]any{"command": "node", "args": []string{servers.Entry("server-memory")},
		"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}}}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), raw, 0o644))
	_, err = w.ReloadHooks()
	require.NoError(t, err)
	res := read("graph-after")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
}
