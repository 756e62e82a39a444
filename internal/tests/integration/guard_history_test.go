package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// starterElsewhere is a starter environment without the worker's
// workspace settings: an operator's laptop, a CI job.
var starterElsewhere = []string{"FENIX_WORKSPACE_ROOT=", "FENIX_WORKSPACE_BASES="}

// waitListed waits until visibility lists n closed runs for the query.
func waitListed(t *testing.T, query string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: query + " AND ExecutionStatus != 'Running'"})
		return err == nil && len(resp.GetExecutions()) == n
	}, 30*time.Second, 200*time.Millisecond)
}

// TestPolicyDiffOfTheSamePolicyChangesNothingAnywhere: runs recorded with
// their workspace, replayed with the worker's own hooks file by a starter
// that does not have the worker's workspace settings, give no change and
// exit 0; the calls it cannot re-decide are listed as skipped, with why.
// Then `starter verify` over the same runs finds every executed call
// allowed.
func TestPolicyDiffOfTheSamePolicyChangesNothingAnywhere(t *testing.T) {
	policy := writePolicy(t, filepath.Join(t.TempDir(), "policy"), true, false)
	queue := newTaskQueue(t)
	w := startPolicyWorker(t, queue, policy)
	prefix := fmt.Sprintf("samepolicy-%d-", os.Getpid())
	conversation := "conv-" + prefix
	calls := []map[string]any{
		{"call_id": "calc-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"}},
		{"call_id": "read-1", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}},
	}
	for _, call := range calls {
		a := whatIfAssignment(call["call_id"].(string), conversation, call)
		a["workspace_root"] = w.workspace
		res, _ := runTo(t, queue, prefix+call["call_id"].(string), a)
		require.NotEmpty(t, res.Status)
	}
	narrow := fmt.Sprintf("ConversationId = '%s'", conversation)
	waitListed(t, narrow, len(calls))

	out, code := runBinary(t, "starter", starterElsewhere, "policy-diff", "-hooks-file", policy, "-query", narrow)
	t.Logf("starter policy-diff -hooks-file <the worker's> (exit %d):\n%s", code, out)
	require.Equal(t, 0, code, "the recorded policy must change nothing wherever it runs:\n%s", out)
	assert.Contains(t, out, "0 calls replayed, 0 newly blocked, 0 newly allowed, 0 unchanged (2 skipped: not re-decided faithfully here)")
	assert.Contains(t, out, "2 × the recorded workspace cannot be used here")
	assert.NotContains(t, out, "WorkspaceEscapeError")
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "verdicts by policy") {
			assert.LessOrEqual(t, len([]rune(line)), 120, "line too wide: %s", line)
		}
	}

	// Where the worker's settings are given, the same calls replay unchanged.
	out, code = runBinary(t, "starter", []string{"FENIX_WORKSPACE_ROOT=" + w.workspace}, "policy-diff", "-hooks-file", policy, "-query", narrow)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "2 calls replayed, 0 newly blocked, 0 newly allowed, 2 unchanged")

	out, code = runBinary(t, "starter", nil, "verify", "-query", fmt.Sprintf("TaskQueue = '%s'", queue), "-since", "1h")
	t.Logf("starter verify (exit %d):\n%s", code, out)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "2 runs checked, 1 execution (tool calls and subagent starts), 0 without an allow")
}

// TestRewindPastAWriteAndOfARunningRun: rewinding past a workspace_write
// that ran (idempotent, yet a rerun would overwrite the later edit) is
// refused until -allow-rerun; rewinding a run that waits for a permission
// decision is refused until -discard-pending, and then says it terminates
// the run.
func TestRewindPastAWriteAndOfARunningRun(t *testing.T) {
	policy := writePolicy(t, filepath.Join(t.TempDir(), "policy"), false, false)
	queue := newTaskQueue(t)
	w := startPolicyWorker(t, queue, policy)
	prefix := fmt.Sprintf("rewindwrite-%d-", os.Getpid())
	ctx := context.Background()

	write := assignment("write-1", map[string]any{"call_id": "write-1", "tool_name": "workspace_write",
		"arguments": map[string]any{"path": "notes.txt", "content": "v1"}}, "workspace_write")
	res, writeRun := runTo(t, queue, prefix+"write-1", write)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	notes := filepath.Join(w.workspace, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("v2, edited since"), 0o644))

	out, code := runBinary(t, "starter", nil, "rewind", prefix+"write-1", "-to", "pre_tool_use")
	t.Logf("starter rewind past a write (exit %d):\n%s", code, out)
	require.Equal(t, 1, code, out)
	assert.True(t, containsAll(out, "Would run again: workspace_write write-1 (event", "has side effects", "-allow-rerun"), out)
	assert.Equal(t, writeRun.GetRunID(), mustDescribe(t, prefix+"write-1"), "a refused rewind must not reset")
	got, err := os.ReadFile(notes)
	require.NoError(t, err)
	assert.Equal(t, "v2, edited since", string(got))

	// A run waiting for a permission decision.
	ask := whatIfAssignment("ask-1", "conv-"+prefix, map[string]any{"call_id": "ask-1", "tool_name": "calculator",
		"arguments": map[string]any{"expression": "3 * 3"}})
	askRun := startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, prefix+"ask-1", ask)
	waitPending := func(runID string) {
		require.Eventually(t, func() bool {
			v, err := server.Client().QueryWorkflow(ctx, prefix+"ask-1", runID, workflows.QueryPendingPermissions)
			var pending []workflows.PendingPermission
			return err == nil && v.Get(&pending) == nil && len(pending) == 1
		}, 30*time.Second, 100*time.Millisecond)
	}
	waitPending(askRun.GetRunID())
	out, code = runBinary(t, "starter", nil, "rewind", prefix+"ask-1", "-to", "pre_tool_use")
	t.Logf("starter rewind of a run waiting for permission (exit %d):\n%s", code, out)
	require.Equal(t, 1, code, out)
	assert.True(t, containsAll(out, "rewinding terminates it", "waiting for a permission decision on ask-1", "-discard-pending"), out)
	assert.Equal(t, askRun.GetRunID(), mustDescribe(t, prefix+"ask-1"))

	out, code = runBinary(t, "starter", nil, "rewind", prefix+"ask-1", "-to", "pre_tool_use", "-discard-pending", "-reason", "ask again")
	t.Logf("starter rewind -discard-pending (exit %d):\n%s", code, out)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "The run is still running: rewinding terminates it")
	desc, err := server.Client().DescribeWorkflow(ctx, prefix+"ask-1", askRun.GetRunID())
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, desc.RawResponse.GetWorkflowExecutionInfo().GetStatus())

	// The new run asks again; once allowed, it completes.
	newRunID := mustDescribe(t, prefix+"ask-1")
	require.NotEqual(t, askRun.GetRunID(), newRunID)
	waitPending(newRunID)
	handle, err := server.Client().UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: prefix + "ask-1", RunID: newRunID,
		UpdateName: workflows.UpdateDecidePermission, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.PermissionDecision{CallID: "ask-1", Decision: workflows.DecisionAllow, Reason: "fine"}}})
	require.NoError(t, err)
	require.NoError(t, handle.Get(ctx, nil))
	var rewound contract.Result
	require.NoError(t, server.Client().GetWorkflow(ctx, prefix+"ask-1", newRunID).Get(ctx, &rewound))
	require.Equal(t, contract.StatusCompleted, rewound.Status, "%+v", rewound.Error)
}
