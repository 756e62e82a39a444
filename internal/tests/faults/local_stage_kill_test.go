package faults

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
)

// In the fast mode the hook stages and Local tools run as local
// activities inside a workflow task. These tests kill the worker process
// in the middle of one and check what the next worker does with the
// workflow task the dead one held: it times out, runs again elsewhere,
// and re-runs only what was not yet recorded.

// TestWorkerSIGKILLDuringLocalHookStageNeverRerunsTheCommand kills the
// worker while a slow PostToolUse command hook runs after exec_command
// completed. The regular ExecuteTool activity is in history, so the next
// worker replays it: the command ran once, and the assignment completes.
func TestWorkerSIGKILLDuringLocalHookStageNeverRerunsTheCommand(t *testing.T) {
	t.Parallel()
	c := server.Client()
	spec := workerSpec{addr: server.HostPort, queue: newTaskQueue(), dataDir: t.TempDir(), workspace: t.TempDir()}
	// A user's slow audit hook: it blocks only its first run, so the
	// restarted worker's run returns at once.
	spec.hooksFile = writeHooksFile(t, `{"hooks": {"PostToolUse": [{"matcher": "exec_command", "hooks": [{"type": "command",
		"command": "if [ ! -e hook.started ]; then touch hook.started; sleep 60; fi", "timeout": 120}]}]}}`)
	first := startWorkerProc(t, spec)

	id := "faults-kill-local-hook"
	_, err := startAssignment(context.Background(), c, spec.queue, id, assignment("kill-local-hook", map[string]any{
		"call_id": "call-exec", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "echo ran >> runs.log"},
	}, "exec_command"))
	require.NoError(t, err)
	waitForFile(t, filepath.Join(spec.workspace, "hook.started"), 60*time.Second)
	killedAt := time.Now()
	first.kill(t)
	startWorkerProc(t, spec)

	res := awaitResult(t, c, id, 2*time.Minute)
	recovered := time.Since(killedAt)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, 1, countLines(t, filepath.Join(spec.workspace, "runs.log")), "exec_command ran exactly once")

	events := history(t, c, id)
	scheduled, started := activityAttempts(events)
	assert.Equal(t, 1, scheduled["ExecuteTool"], "ExecuteTool scheduled once")
	assert.Equal(t, []int32{1}, started["ExecuteTool"], "ExecuteTool started once, attempt 1")
	assert.Equal(t, 1, countLocalStages(t, events, "RunPostToolUseHooks"), "the PostToolUse verdict is recorded once")
	assert.NotZero(t, countEvents(events, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED),
		"the dead worker's workflow task timed out and ran again")
	assert.Equal(t, 1, auditRows(t, spec.dataDir, "call-exec"), "one TOOL_CALL audit row for the call")
	t.Logf("killed during the local PostToolUse stage; completed %s later; command runs: 1; workflow tasks timed out: %d",
		recovered.Round(100*time.Millisecond), countEvents(events, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT))
}

// TestWorkerSIGKILLDuringLocalToolRerunsItAtMostOnceMore kills the worker
// while an idempotent Local tool runs as a local activity: nothing of that
// workflow task was recorded, so the next worker runs the tool again —
// once — and the audit log still has one row for the call.
func TestWorkerSIGKILLDuringLocalToolRerunsItAtMostOnceMore(t *testing.T) {
	t.Parallel()
	c := server.Client()
	spec := workerSpec{addr: server.HostPort, queue: newTaskQueue(), dataDir: t.TempDir(), workspace: t.TempDir(), testTools: true}
	hold := filepath.Join(spec.workspace, "hold")
	require.NoError(t, os.WriteFile(hold, nil, 0o644))
	first := startWorkerProc(t, spec)

	id := "faults-kill-local-tool"
	_, err := startAssignment(context.Background(), c, spec.queue, id, assignment("kill-local-tool", map[string]any{
		"call_id": "call-lookup", "tool_name": "test_slow_lookup", "arguments": map[string]any{"log": "lookups.log", "hold": "hold"},
	}, "test_slow_lookup"))
	require.NoError(t, err)
	// The line, not the file: killed between the tool's create and its
	// write, the log would hold the rerun's line alone.
	waitForLine(t, filepath.Join(spec.workspace, "lookups.log"), 60*time.Second)
	killedAt := time.Now()
	first.kill(t)
	require.NoError(t, os.Remove(hold))
	startWorkerProc(t, spec)

	res := awaitResult(t, c, id, 2*time.Minute)
	recovered := time.Since(killedAt)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	runs := countLines(t, filepath.Join(spec.workspace, "lookups.log"))
	assert.Equal(t, 2, runs, "the local tool ran once more after the kill, and only once")

	events := history(t, c, id)
	scheduled, _ := activityAttempts(events)
	assert.Zero(t, scheduled["ExecuteTool"], "the Local tool ran as a local activity")
	assert.Equal(t, 1, countLocalStages(t, events, "ExecuteTool"), "its result is recorded once")
	assert.Equal(t, 1, auditRows(t, spec.dataDir, "call-lookup"), "one TOOL_CALL audit row for the call")
	t.Logf("killed during a local ExecuteTool; completed %s later; tool executions: %d", recovered.Round(100*time.Millisecond), runs)
}

func writeHooksFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hooks.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func waitForFile(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := os.Stat(path)
		return err == nil
	}, limit, 20*time.Millisecond, "%s never appeared", path)
}

// waitForLine waits until path holds a whole line.
func waitForLine(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(data), "\n")
	}, limit, 20*time.Millisecond, "%s never held a line", path)
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Count(string(data), "\n")
}

func countEvents(events []*historypb.HistoryEvent, types ...enumspb.EventType) int {
	n := 0
	for _, e := range events {
		for _, typ := range types {
			if e.GetEventType() == typ {
				n++
			}
		}
	}
	return n
}

// countLocalStages counts local-activity markers of one activity type.
func countLocalStages(t *testing.T, events []*historypb.HistoryEvent, activityType string) int {
	t.Helper()
	n := 0
	for _, e := range events {
		attrs := e.GetMarkerRecordedEventAttributes()
		if attrs == nil || attrs.GetMarkerName() != "LocalActivity" {
			continue
		}
		data := attrs.GetDetails()["data"].GetPayloads()
		if len(data) > 0 && strings.Contains(string(data[0].GetData()), `"ActivityType":"`+activityType+`"`) {
			n++
		}
	}
	return n
}

func auditRows(t *testing.T, dataDir, callID string) int {
	t.Helper()
	store, err := audit.OpenSQLite(context.Background(), filepath.Join(dataDir, "audit.db"))
	require.NoError(t, err)
	defer store.Close()
	n, err := store.Count(context.Background(), audit.Filter{Event: audit.EventToolCall, CallID: callID})
	require.NoError(t, err)
	return n
}
