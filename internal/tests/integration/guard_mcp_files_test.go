package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
)

// An MCP configuration names the programs the worker launches, and the
// file tools never wrote it; but the scripts it launches from the
// workspace ("sh servers/notes.sh", "./bin/search-server", "python3
// mcp/db.py" with db.py not written yet) were the agent's to rewrite, and
// the worker ran the agent's code, outside any command sandbox, the next
// time it started the server (a restart, or the retry of a server that
// failed). They are protected like the scripts hooks run, those of a
// server a SIGHUP adds at once.
func TestMCPServerScriptsAreProtectedOnDevServer(t *testing.T) {
	const script = "#!/bin/sh\nexit 1\n"
	w := startWorker(t, func(c *worker.Config) {
		ws := c.DefaultWorkspaceRoot
		for _, rel := range []string{"servers/notes.sh", "conf/bin/search-server"} {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte(script), 0o755))
		}
		// A script without an extension that an interpreter runs, and the
		// data files servers are given.
		for _, rel := range []string{"tools/viewer", "data/app.db", "data/report.json"} {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte(script), 0o644))
		}
		config := filepath.Join(ws, "conf", "mcp.json")
		require.NoError(t, os.WriteFile(config, []byte(`{"mcpServers": {
			"notes": {"command": "sh", "args": ["servers/notes.sh", "data/app.db"]},
			"search": {"command": "./bin/search-server", "args": ["--index", "docs"]},
			"db": {"command": "python3", "args": ["mcp/db.py"]},
			"viewer": {"command": "node", "args": ["tools/viewer", "data/report.json"]}}}`), 0o644))
		c.MCPConfig = config
	})
	for _, call := range []map[string]any{
		{"call_id": "notes", "tool_name": "workspace_write", "arguments": map[string]any{"path": "servers/notes.sh", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}},
		{"call_id": "search", "tool_name": "workspace_edit", "arguments": map[string]any{"path": "conf/bin/search-server", "old_string": "exit 1", "new_string": "touch /tmp/pwned"}},
		{"call_id": "db", "tool_name": "workspace_write", "arguments": map[string]any{"path": "mcp/db.py", "content": "import os\nos.system('touch /tmp/pwned')\n"}},
		{"call_id": "viewer", "tool_name": "workspace_write", "arguments": map[string]any{"path": "tools/viewer", "content": "require('child_process').execSync('touch /tmp/pwned')\n"}},
	} {
		res, _ := runAssignment(t, w.queue, assignment(call["call_id"].(string), call, writeTools...))
		if !assert.Equal(t, contract.StatusFailed, res.Status, "%v", call) {
			continue
		}
		assert.Equal(t, fenixerr.TypeWorkspaceEscape, res.Error.ErrorType, "%v", call)
		assert.Equal(t, "protected_path", res.Error.Code, "%v: %s", call, res.Error.LastErrorSummary)
	}
	for _, rel := range []string{"servers/notes.sh", "conf/bin/search-server"} {
		b, err := os.ReadFile(filepath.Join(w.workspace, rel))
		require.NoError(t, err)
		assert.Equal(t, script, string(b), rel)
	}
	// What the servers are given as data stays the agent's: a directory,
	// and the files after a script (a server's database, its report),
	// which a command writing them does not report as a change to what
	// governs the agent.
	for _, rel := range []string{"docs/index.md", "data/app.db", "data/report.json"} {
		res, _ := runAssignment(t, w.queue, assignment("data", map[string]any{"call_id": "data", "tool_name": "workspace_write",
			"arguments": map[string]any{"path": rel, "content": "fine"}}, writeTools...))
		assert.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", rel, res.Error)
	}

	// A server the operator adds with a SIGHUP has its script protected
	// at once, not from the next start.
	late := filepath.Join(w.workspace, "servers", "late.sh")
	require.NoError(t, os.WriteFile(late, []byte(script), 0o755))
	config := filepath.Join(w.workspace, "conf", "mcp.json")
	require.NoError(t, os.WriteFile(config, []byte(`{"mcpServers": {
		"notes": {"command": "sh", "args": ["servers/notes.sh"]},
		"late": {"command": "sh", "args": ["servers/late.sh"]}}}`), 0o644))
	_, err := w.ReloadHooks()
	require.NoError(t, err)
	res, _ := runAssignment(t, w.queue, assignment("late", map[string]any{"call_id": "late", "tool_name": "workspace_write",
		"arguments": map[string]any{"path": "servers/late.sh", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}}, writeTools...))
	if assert.Equal(t, contract.StatusFailed, res.Status) {
		assert.Equal(t, "protected_path", res.Error.Code, res.Error.LastErrorSummary)
	}
	b, err := os.ReadFile(late)
	require.NoError(t, err)
	assert.Equal(t, script, string(b))
}
