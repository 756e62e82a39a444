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

// A project's guard, as a team writes one: it blocks the commands that
// name a word kept out of the committed settings, in settings.local.json's
// env. The guard got only its own file's env, so it blocked nothing.
const wordGuard = `{"env": {"TEAM": "infra"}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
	"command": "if [ -n \"$BLOCKED_WORD\" ] && grep -q \"$BLOCKED_WORD\"; then echo \"$TEAM does not $BLOCKED_WORD from an agent\" >&2; exit 2; fi"}]}]},
	"permissions": {"deny": ["Bash(touch:*)"]}}`

// TestManagedSettingsAndTheSessionsEnvOnDevServer: the files' env is one
// session's, so the project's guard sees settings.local.json's word; and
// a managed-settings.json with allowManagedHooksOnly and
// allowManagedPermissionRulesOnly runs its own hooks and rules alone —
// the project's guard and its deny rule no longer apply, the managed deny
// does, naming its file.
func TestManagedSettingsAndTheSessionsEnvOnDevServer(t *testing.T) {
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(wordGuard), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(`{"env": {"BLOCKED_WORD": "deploy"}}`), 0o644))
	run := func(t *testing.T, queue, name, line string) contract.Result {
		t.Helper()
		a := assignment(name, map[string]any{"call_id": name, "tool_name": "exec_command", "arguments": map[string]any{"command_line": line}}, "exec_command")
		a["workspace_root"] = project
		res, _ := runAssignment(t, queue, a)
		return res
	}

	w := startWorker(t, inProject(project))
	res := run(t, w.queue, "deploy", "echo deploy now")
	require.Equal(t, contract.StatusFailed, res.Status, "the guard did not see settings.local.json's env: %+v", res.Output)
	assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "infra does not deploy from an agent")
	res = run(t, w.queue, "build", "echo build")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	managed := filepath.Join(t.TempDir(), "managed-settings.json")
	require.NoError(t, os.WriteFile(managed, []byte(`{"allowManagedHooksOnly": true, "allowManagedPermissionRulesOnly": true,
		"permissions": {"deny": ["Bash(rm:*)"]}}`), 0o644))
	locked := startWorker(t, inProject(project), func(c *worker.Config) { c.HookSources = []string{managed, project} })
	res = run(t, locked.queue, "deploy-locked", "echo deploy now")
	require.Equal(t, contract.StatusCompleted, res.Status, "the project's hook ran under allowManagedHooksOnly: %+v", res.Error)
	res = run(t, locked.queue, "touch-locked", "touch made-by-agent")
	require.Equal(t, contract.StatusCompleted, res.Status, "the project's rule applied under allowManagedPermissionRulesOnly: %+v", res.Error)
	assert.FileExists(t, filepath.Join(project, "made-by-agent"))
	res = run(t, locked.queue, "rm-locked", "rm made-by-agent")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, `permission rule "Bash(rm:*)" in `+managed)
	assert.FileExists(t, filepath.Join(project, "made-by-agent"))
}
