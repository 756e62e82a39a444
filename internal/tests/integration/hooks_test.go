package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// writeHookSettings writes a Claude Code-style settings file with real
// shell-script hooks: a fail-closed guard on workspace_read that blocks
// anything mentioning "secret" (exit 2), and a hook that asks for
// permission before every calculator call.
func writeHookSettings(t *testing.T) string {
	dir := t.TempDir()
	scripts := map[string]string{
		"guard.sh": `#!/bin/sh
input=$(cat)
case "$input" in
  *secret*) echo "secrets are off limits" >&2; exit 2 ;;
esac
exit 0
`,
		"ask.sh": `#!/bin/sh
cat >/dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"calculator needs a human"}}'
`,
	}
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	settings := map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{
			map[string]any{"matcher": "workspace_read", "hooks": []any{
				map[string]any{"type": "command", "command": filepath.Join(dir, "guard.sh"), "timeout": 5, "fail_closed": true},
			}},
			map[string]any{"matcher": "calculator", "hooks": []any{
				map[string]any{"type": "command", "command": filepath.Join(dir, "ask.sh"), "timeout": 5},
			}},
		},
	}}
	raw, _ := json.Marshal(settings)
	path := filepath.Join(dir, "hooks.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

// writeClaudeProject lays out a Claude Code project in dir (a fresh one
// when empty): each script under .claude/hooks/ (executable), and
// settings as .claude/settings.json. It returns the project directory.
func writeClaudeProject(t *testing.T, dir string, scripts map[string]string, settings string) string {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "project")
	}
	hooksDir := filepath.Join(dir, ".claude", "hooks")
	require.NoError(t, os.MkdirAll(hooksDir, 0o755))
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(hooksDir, name), []byte(body), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(settings), 0o644))
	return dir
}

// shellIn runs script with /bin/sh in dir, outside any worker: what
// someone else does to a project, or a command of a worker that cannot
// confine it.
func shellIn(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func auditCount(t *testing.T, store audit.Store, sessionID, event string) int {
	n, err := store.Count(context.Background(), audit.Filter{SessionID: sessionID, Event: event})
	require.NoError(t, err)
	return n
}

func TestCommandHookBlockEndsTheCallWithoutExecutingIt(t *testing.T) {
	w := startWorker(t, withHooksFile(writeHookSettings(t)))
	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "secret.txt"), []byte("hunter2"), 0o644))
	res, run := runAssignment(t, w.queue, assignment("blocked", map[string]any{
		"call_id": "call-secret", "tool_name": "workspace_read", "arguments": map[string]any{"path": "secret.txt"},
	}))

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "secrets are off limits")
	scheduled, _ := activityAttempts(history(t, run))
	assert.Zero(t, scheduled["ExecuteTool"], "a blocked call never executes")
	assert.Equal(t, 1, auditCount(t, w.Audit(), run.GetID(), audit.EventToolFailure))
	assert.Equal(t, 1, auditCount(t, w.Audit(), run.GetID(), audit.EventSessionStop))

	// The same guard lets an ordinary read through.
	res, run = runAssignment(t, w.queue, assignment("allowed", map[string]any{
		"call_id": "call-readme", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"},
	}))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, 1, auditCount(t, w.Audit(), run.GetID(), audit.EventToolCall))
}

func TestPermissionRequiredResumesOnDecidePermissionFromTheCLI(t *testing.T) {
	w := startWorker(t, withHooksFile(writeHookSettings(t)))
	id := "it-permission-" + t.Name()
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, assignment("ask", map[string]any{
		"call_id": "call-ask", "tool_name": "calculator", "arguments": map[string]any{"expression": "20 + 22"},
	}))

	require.Eventually(t, func() bool {
		v, err := server.Client().QueryWorkflow(context.Background(), id, "", workflows.QueryPendingPermissions)
		var pending []workflows.PendingPermission
		return err == nil && v.Get(&pending) == nil && len(pending) == 1
	}, 30*time.Second, 100*time.Millisecond)

	// An unknown call ID is rejected by the validator, the workflow keeps waiting.
	out, err := exec.Command(cliPath, "workflow", "update", "execute", "--address", server.HostPort,
		"--workflow-id", id, "--name", workflows.UpdateDecidePermission,
		"--input", `{"call_id":"call-nope","decision":"allow"}`).CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), `call-nope`)
	assert.Contains(t, string(out), `is waiting for a permission decision (pending: call-ask)`)

	out, err = exec.Command(cliPath, "workflow", "update", "execute", "--address", server.HostPort,
		"--workflow-id", id, "--name", workflows.UpdateDecidePermission,
		"--input", `{"call_id":"call-ask","decision":"allow","reason":"looks fine"}`).CombinedOutput()
	require.NoError(t, err, "%s", out)

	var res contract.Result
	require.NoError(t, run.Get(context.Background(), &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "The calculator returned 42.", res.Output.Content)
	assert.Equal(t, 1, auditCount(t, w.Audit(), id, audit.EventToolCall))
}

func TestPermissionRequiredIsDeniedOnTimeout(t *testing.T) {
	w := startWorker(t, withHooksFile(writeHookSettings(t)))
	a := assignment("ask-timeout", map[string]any{
		"call_id": "call-ask", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"},
	})
	a["approval"] = map[string]any{"timeout_seconds": 2}
	res, run := runAssignment(t, w.queue, a)

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypePermissionDenied, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "no decision within 2s")
	scheduled, _ := activityAttempts(history(t, run))
	assert.Zero(t, scheduled["ExecuteTool"])
	assert.Equal(t, 1, auditCount(t, w.Audit(), run.GetID(), audit.EventToolFailure))
}

// TestAuditLogInPostgres runs a worker whose audit log is PostgreSQL
// (FENIX_TEST_POSTGRES_DSN; .ci/run starts one) and counts its rows.
func TestAuditLogInPostgres(t *testing.T) {
	dsn := os.Getenv("FENIX_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("FENIX_TEST_POSTGRES_DSN is not set: no PostgreSQL to test the audit store against (.ci/run sets one up)")
	}
	w := startWorker(t, func(c *worker.Config) { c.AuditDSN = dsn })
	res, run := runAssignment(t, w.queue, assignment("pg-audit", map[string]any{
		"tool_name": "calculator", "arguments": map[string]any{"expression": "8 * 8"},
	}))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	store, err := audit.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer store.Close()
	assert.Equal(t, "postgres", store.Dialect())
	// The database outlives test runs: count this run's rows only.
	for _, event := range []string{audit.EventToolCall, audit.EventSessionStop} {
		n, err := store.Count(context.Background(), audit.Filter{SessionID: run.GetID(), RunID: run.GetRunID(), Event: event})
		require.NoError(t, err)
		assert.Equal(t, 1, n, "%s rows of run %s", event, run.GetRunID())
	}
}

// A project's settings "env" is what Claude Code gives every process of
// a session: its hooks and its Bash commands. settings.local.json's value
// wins over settings.json's; a hook reads the same variables. Before,
// only the hooks got them and commands ran without (a warning said so).
func TestSettingsEnvReachesHooksAndCommands(t *testing.T) {
	project := writeClaudeProject(t, "", map[string]string{
		// Like a user's stage guard: deploys only where the project says
		// it is a staging checkout.
		"stage-guard.sh": `#!/bin/sh
input=$(cat)
case "$input" in
  *deploy*) [ "$PROJECT_STAGE" = staging ] || { echo "deploys run from staging checkouts only (PROJECT_STAGE=$PROJECT_STAGE)" >&2; exit 2; } ;;
esac
exit 0
`,
	}, `{"env": {"PROJECT_STAGE": "dev", "NODE_ENV": "development"},
	  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/stage-guard.sh"}]}]}}`)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(`{"env": {"NODE_ENV": "test"}}`), 0o644))
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "settings-env")

	res := run(t, "exec_command", `echo "stage=$PROJECT_STAGE node=$NODE_ENV"`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "stage=dev node=test")

	res = run(t, "exec_command", "echo deploy")
	require.Equal(t, contract.StatusFailed, res.Status, "%+v", res.Output)
	require.NotNil(t, res.Error)
	assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "PROJECT_STAGE=dev", "the hook read the settings env")
}
