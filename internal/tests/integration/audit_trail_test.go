package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// lockAuditDB takes the SQLite audit database's write lock, as any process
// that can open the file (an agent's shell running as the worker's user)
// can, and returns the function that releases it.
func lockAuditDB(t *testing.T, dataDir string) func() {
	t.Helper()
	ctx := context.Background()
	store, err := audit.OpenSQLite(ctx, filepath.Join(dataDir, "audit.db"))
	require.NoError(t, err)
	conn, err := store.DB().Conn(ctx)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "BEGIN EXCLUSIVE")
	require.NoError(t, err)
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		_, err := conn.ExecContext(ctx, "ROLLBACK")
		assert.NoError(t, err)
		conn.Close()
		store.Close()
	}
	t.Cleanup(release)
	return release
}

// A tool call's result must not reach the kernel before its audit row is
// committed: a write that fails (here the database is locked longer than
// the hook's write timeout and SQLite's busy timeout) fails the
// PostToolUse stage, which is retried until the row is stored, instead of
// being a non-blocking hook error that lets the call go unrecorded.
func TestToolCallWaitsForItsAuditRowWhenTheStoreIsLocked(t *testing.T) {
	w := startWorker(t)
	release := lockAuditDB(t, w.dataDir)
	id := "it-audit-locked-" + t.Name()
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, assignment("audit-locked", map[string]any{
		"call_id": "call-locked", "tool_name": "calculator", "arguments": map[string]any{"expression": "6 * 7"},
	}))
	time.Sleep(6500 * time.Millisecond)
	release()

	var res contract.Result
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, 1, auditCount(t, w.Audit(), id, audit.EventToolCall), "the completed call has its audit row")
	assert.Equal(t, 1, auditCount(t, w.Audit(), id, audit.EventSessionStop))
}

// writeScripts writes a scripted-model file holding one script.
func writeScripts(t *testing.T, name string, turns []map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"scripts": map[string]any{name: map[string]any{"turns": turns}}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

// A model that names a call of a later step like one of an earlier step
// (providers that number calls per answer do; so can a model that wants
// its second call to leave no trace) still gets one audit row per call:
// the second call is not folded into the first's row.
func TestReusedCallIDAcrossStepsIsAuditedTwice(t *testing.T) {
	scripts := writeScripts(t, "reuse", []map[string]any{
		{"tool_calls": []map[string]any{{"call_id": "call_0", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}}},
		{"tool_calls": []map[string]any{{"call_id": "call_0", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}}},
		{"content": "done"},
	})
	w := startWorker(t, withScripts(t, scripts))
	req := agentTurnRequest(t, "reuse", map[string]any{
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator", "workspace_read"}},
	})
	res := runTurn(t, w.queue, req)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, 2, res.Metrics.ToolCalls)

	rows, err := w.Audit().Query(context.Background(), audit.Filter{SessionID: req["logical_work_id"].(string), Event: audit.EventToolCall})
	require.NoError(t, err)
	var tools, ids []string
	for _, r := range rows {
		tools, ids = append(tools, r.ToolName), append(ids, r.CallID)
	}
	assert.Equal(t, []string{"calculator", "workspace_read"}, tools, "one TOOL_CALL row per executed call")
	assert.Equal(t, []string{"call_0", "call_0#2"}, ids)
	renamed := findTraceEntry(res.Trace, "reused_call_ids")
	assert.NotEmpty(t, renamed.Hook, "the rename is in the trace")
}

// A tool's error is redacted like its result: an upstream that answers an
// error quoting what it read (an MCP tool's isError text, a failed fetch)
// must not put a secret into history, the audit log or the model's
// observation just because the call failed.
func TestToolErrorIsRedactedLikeItsResult(t *testing.T) {
	const secret = "AKIAIOSFODNN7EXAMPLE"
	leaky := tools.Define(tools.Spec{Name: "test_leaky_error", Timeout: 10 * time.Second},
		func(context.Context, *tools.Env, struct{}) (struct{}, error) {
			return struct{}{}, fenixerr.Runtime("upstream refused: config has aws_access_key_id=%s", secret).
				WithTool("test_leaky_error").WithCause(errors.New("body: " + secret))
		}, func(struct{}, struct{}) tools.Projection { return tools.Projection{} })
	w := startWorker(t, withTools(leaky))
	res, run := runAssignment(t, w.queue, assignment("leaky-error", map[string]any{
		"call_id": "call-leaky", "tool_name": "test_leaky_error", "arguments": map[string]any{},
	}, "test_leaky_error"))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.NotContains(t, res.Error.LastErrorSummary, secret)
	assert.Contains(t, res.Error.LastErrorSummary, "[REDACTED:")

	rows, err := w.Audit().Query(context.Background(), audit.Filter{SessionID: run.GetID(), Event: audit.EventToolFailure})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.NotContains(t, rows[0].Error, secret)

	raw, err := json.Marshal(history(t, run))
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(raw), secret), "the secret is in the run's history")
}

// A run an operator terminates runs no further stage, so nothing of the
// run writes its end: the worker's sweep records a RUN_ENDED row with who
// ended it and why, once however many sweeps see it.
func TestATerminatedRunIsAudited(t *testing.T) {
	w := startWorker(t, func(c *worker.Config) { c.EndedRunsSweepInterval = 300 * time.Millisecond })
	id := "audit-terminated-" + w.queue
	a := assignment(id, map[string]any{"call_id": "c1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "sleep 60"}}, "exec_command")
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, a)
	waitForRunningActivity(t, run, "ExecuteTool")
	ctx := context.Background()
	require.NoError(t, server.Client().TerminateWorkflow(ctx, id, run.GetRunID(), "runaway build, stopped by on-call"))

	var rows []audit.Row
	require.Eventually(t, func() bool {
		var err error
		rows, err = w.Audit().Query(ctx, audit.Filter{SessionID: id, Event: audit.EventRunEnded})
		require.NoError(t, err)
		return len(rows) > 0
	}, 30*time.Second, 200*time.Millisecond, "no RUN_ENDED row for the terminated run")
	r := rows[0]
	assert.Equal(t, run.GetRunID(), r.RunID)
	assert.Equal(t, "terminated", r.Status)
	assert.Contains(t, r.Error, "runaway build, stopped by on-call")
	assert.Contains(t, r.Error, "terminated by ")
	assert.Equal(t, "exec_command", r.ToolName)
	assert.Equal(t, a["conversation_id"], r.ConversationID)
	time.Sleep(time.Second) // three more sweeps
	assert.Equal(t, 1, auditCount(t, w.Audit(), id, audit.EventRunEnded), "recorded once")
	assert.Equal(t, 0, auditCount(t, w.Audit(), id, audit.EventSessionStop), "no stage ran after the terminate")
}
