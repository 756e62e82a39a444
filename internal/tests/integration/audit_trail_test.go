package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
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
