package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/pgtest"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// TestSharedContextStoreKeepsWhatOpenRunsUse runs a worker on the
// PostgreSQL context store: a run's offloaded transcript is stored there
// under the run's workflow ID, survives a collection (retention zero) while
// the run is open, and is collected once the run has ended.
func TestSharedContextStoreKeepsWhatOpenRunsUse(t *testing.T) {
	dsn := pgtest.Schema(t)
	w := startWorker(t, func(c *worker.Config) {
		c.Contexts = worker.ContextStoreConfig{Store: dsn, GCInterval: -1}
	})
	store, ok := w.ContextStore().(*contextstore.Postgres)
	require.True(t, ok, "FENIX_CONTEXT_STORE=postgres://... opens the PostgreSQL store, got %T", w.ContextStore())

	// A transcript over the 64 KiB offload threshold, and a tool call that
	// keeps the run open until the test lets it finish.
	big := strings.Repeat("the kernel sends a long conversation ", 3000)
	a := assignment("ctx-gc", map[string]any{
		"call_id": "call-wait", "tool_name": "exec_command",
		"arguments": map[string]any{"command_line": "while [ ! -f release ]; do sleep 0.1; done; echo released", "timeout_seconds": 120},
	}, "exec_command")
	a["context_messages"] = []map[string]any{{"role": "user", "content": big}}
	id := "ctx-gc-" + w.queue
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, a)
	require.Eventually(t, func() bool { return store.Stats().Puts > 0 }, 30*time.Second, 50*time.Millisecond, "the transcript is offloaded to the store")
	ctx := context.Background()
	usage, err := store.Usage(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, usage.Blobs, int64(1))
	require.GreaterOrEqual(t, usage.Refs, int64(1), "the put is recorded under the run's workflow ID")

	// Open: nothing the run references goes, even with no retention.
	require.Eventually(t, func() bool {
		runs, err := openRunsContain(ctx, w, id)
		return err == nil && runs
	}, 10*time.Second, 100*time.Millisecond, "visibility lists the run as running")
	res, err := w.CollectContexts(ctx, 0)
	require.NoError(t, err)
	assert.False(t, res.Skipped)
	assert.Zero(t, res.DeletedBlobs, "an open run's blobs are kept: %+v", res)

	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "release"), nil, 0o644))
	var out contract.Result
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, contract.StatusCompleted, out.Status, "%+v", out.Error)
	assert.Contains(t, out.Output.Content, "released")

	// Closed: a collection with no retention deletes what only it used.
	require.Eventually(t, func() bool {
		running, err := openRunsContain(ctx, w, id)
		return err == nil && !running
	}, 10*time.Second, 100*time.Millisecond, "visibility no longer lists the run as running")
	before, err := store.Usage(ctx)
	require.NoError(t, err)
	res, err = w.CollectContexts(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, before.Blobs, res.DeletedBlobs, "every blob of the closed run is collected: %+v", res)
	after, err := store.Usage(ctx)
	require.NoError(t, err)
	assert.Zero(t, after.Blobs)
	assert.Zero(t, after.Refs)
	assert.Equal(t, res.DeletedBlobs, store.Stats().GCDeletedBlobs)
}

func openRunsContain(ctx context.Context, w *testWorker, id string) (bool, error) {
	runs, err := w.OpenRuns(ctx)
	return slices.Contains(runs, id), err
}
