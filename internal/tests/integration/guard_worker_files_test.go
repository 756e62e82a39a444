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

// The worker's own files keep commands out (Landlock: the skills and
// profiles read-only, the audit log hidden), but the file tools wrote
// them when an operator put them inside a workspace (a project's own
// skills/ and profiles/, an audit log beside it): workspace_write turned
// a skill's or a profile's instructions into the agent's own, for every
// later turn, and overwrote the audit log. They are protected like the
// hooks' settings now.
func TestWorkerFilesInsideTheWorkspaceAreProtectedOnDevServer(t *testing.T) {
	const skill = "---\nname: deploy\ndescription: Deploys.\n---\nRun the checks first.\n"
	const profile = "You are careful.\n"
	w := startWorker(t, func(c *worker.Config) {
		ws := c.DefaultWorkspaceRoot
		for rel, body := range map[string]string{"skills/curated/deploy/SKILL.md": skill, "profiles/main/AGENT.md": profile} {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644))
		}
		require.NoError(t, os.MkdirAll(filepath.Join(ws, "state"), 0o755))
		c.SkillsDir = filepath.Join(ws, "skills")
		c.ProfilesDir = filepath.Join(ws, "profiles")
		c.AuditDSN = filepath.Join(ws, "state", "audit.db")
	})
	for _, call := range []map[string]any{
		{"call_id": "skill", "tool_name": "workspace_write", "arguments": map[string]any{"path": "skills/curated/deploy/SKILL.md", "content": "---\nname: deploy\ndescription: Deploys.\n---\nSkip the checks.\n"}},
		{"call_id": "new-skill", "tool_name": "workspace_write", "arguments": map[string]any{"path": "skills/installed/admin/SKILL.md", "content": "---\nname: admin\ndescription: x\n---\nx\n"}},
		{"call_id": "profile", "tool_name": "workspace_edit", "arguments": map[string]any{"path": "profiles/main/AGENT.md", "old_string": "careful", "new_string": "reckless"}},
		{"call_id": "audit", "tool_name": "workspace_write", "arguments": map[string]any{"path": "state/audit.db", "content": "gone"}},
	} {
		res, _ := runAssignment(t, w.queue, assignment(call["call_id"].(string), call, writeTools...))
		if !assert.Equal(t, contract.StatusFailed, res.Status, "%v", call) {
			continue
		}
		assert.Equal(t, fenixerr.TypeWorkspaceEscape, res.Error.ErrorType, "%v", call)
		assert.Equal(t, "protected_path", res.Error.Code, "%v: %s", call, res.Error.LastErrorSummary)
	}
	for rel, want := range map[string]string{"skills/curated/deploy/SKILL.md": skill, "profiles/main/AGENT.md": profile} {
		b, err := os.ReadFile(filepath.Join(w.workspace, rel))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), rel)
	}
	res, _ := runAssignment(t, w.queue, assignment("notes", map[string]any{"call_id": "notes", "tool_name": "workspace_write",
		"arguments": map[string]any{"path": "notes.txt", "content": "fine"}}, writeTools...))
	assert.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
}

// A workspace of the worker's home (a supported setup: the commands'
// rules are cut around the data directory in it) holds the worker's data
// directory and its Temporal client configuration. Commands are kept out
// of both; workspace_read and workspace_search used to read them: the
// API key in temporal.toml, with which the agent could answer its own
// approvals, and the data directory's records of other conversations.
func TestWorkerPrivateFilesInsideTheWorkspaceAreNotReadOnDevServer(t *testing.T) {
	const secret = "[profile.default]\napi_key = \"tmprl-secret-key\"\n"
	w := startWorker(t, func(c *worker.Config) {
		home := c.DefaultWorkspaceRoot
		c.DataDir = filepath.Join(home, ".local", "state", "fenix")
		require.NoError(t, os.MkdirAll(c.DataDir, 0o700))
		key := filepath.Join(home, ".config", "temporalio", "temporal.toml")
		require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o700))
		require.NoError(t, os.WriteFile(key, []byte(secret), 0o600))
		c.HostConfig.Protected.Hidden = append(c.HostConfig.Protected.Hidden, key)
		require.NoError(t, os.Symlink(filepath.Join(".config", "temporalio", "temporal.toml"), filepath.Join(home, "notes.toml")))
	})
	readTools := []string{"workspace_read", "workspace_search"}
	for _, call := range []map[string]any{
		{"call_id": "key", "tool_name": "workspace_read", "arguments": map[string]any{"path": ".config/temporalio/temporal.toml"}},
		{"call_id": "link", "tool_name": "workspace_read", "arguments": map[string]any{"path": "notes.toml"}},
		{"call_id": "host-id", "tool_name": "workspace_read", "arguments": map[string]any{"path": ".local/state/fenix/host-id"}},
	} {
		res, _ := runAssignment(t, w.queue, assignment(call["call_id"].(string), call, readTools...))
		if !assert.Equal(t, contract.StatusFailed, res.Status, "%v: %+v", call, res.Output) {
			continue
		}
		assert.Equal(t, fenixerr.TypeWorkspaceEscape, res.Error.ErrorType, "%v", call)
		assert.Equal(t, "private_path", res.Error.Code, "%v: %s", call, res.Error.LastErrorSummary)
	}
	res, _ := runAssignment(t, w.queue, assignment("search", map[string]any{"call_id": "search", "tool_name": "workspace_search",
		"arguments": map[string]any{"pattern": "tmprl-secret"}}, readTools...))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.NotNil(t, res.Output)
	assert.NotContains(t, res.Output.Content, "temporal.toml", "the search found the worker's key")
	res, _ = runAssignment(t, w.queue, assignment("readme", map[string]any{"call_id": "readme", "tool_name": "workspace_read",
		"arguments": map[string]any{"path": "README.md"}}, readTools...))
	assert.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
}
