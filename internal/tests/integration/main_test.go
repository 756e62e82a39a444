// Package integration runs Fenix against the real Temporal CLI dev server:
// workers, the starter and worker binaries, and the temporal CLI itself.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

var (
	server   *devserver.Server
	cliPath  string
	binDir   string
	repoRoot string
	queueSeq atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("integration: skipped in -short mode (needs the Temporal dev server)")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, devserver.Options{EnableUI: true}, "worker", "starter")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer env.Close()
	server, cliPath, binDir, repoRoot = env.Server, env.CLIPath, env.BinDir, env.RepoRoot
	return env.VerifyAll(m.Run())
}

// newTaskQueue isolates each test's worker.
func newTaskQueue(t *testing.T) string {
	return fmt.Sprintf("fenix-it-%d-%d", os.Getpid(), queueSeq.Add(1))
}

type testWorker struct {
	*worker.Worker
	queue     string
	workspace string
	dataDir   string
}

// workerOption adjusts a test worker's configuration.
type workerOption func(*worker.Config)

// inProject governs the worker by project's .claude/ (and .mcp.json) and
// makes project its default workspace, as a Claude Code user's project.
func inProject(project string) workerOption {
	return func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	}
}

func withTools(extra ...tools.Definition) workerOption {
	return func(c *worker.Config) {
		registry, err := testtools.WithBuiltins(extra...)
		if err != nil {
			panic(err)
		}
		c.Tools = registry
	}
}

func withHooksFile(path string) workerOption {
	return func(c *worker.Config) { c.HooksFile = path }
}

// verifyQueue fails the test when a run on its task queue executed a tool
// call without an allow (history/verify), naming the run, event and call.
func verifyQueue(t *testing.T, queue string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testenv.VerifyRuns(ctx, server.Client(), server.Namespace, fmt.Sprintf("TaskQueue = '%s'", queue)); err != nil {
		t.Error(err)
	}
}

// startWorker runs an in-process worker on its own task queue.
func startWorker(t *testing.T, opts ...workerOption) *testWorker {
	t.Helper()
	queue := newTaskQueue(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# Fenix\n"), 0o644))
	dataDir := t.TempDir()
	cfg := worker.Config{
		TaskQueue:            queue,
		DataDir:              dataDir,
		DefaultWorkspaceRoot: ws,
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// As the worker binary does (tools.WithFrontend): the agent's
		// commands and hooks never reach the dev server.
		HostConfig: tools.HostConfig{Unreachable: []string{server.HostPort}},
	}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := worker.New(server.Client(), cfg)
	require.NoError(t, err)
	// Registered first, so it runs last: after the worker stopped.
	t.Cleanup(func() { verifyQueue(t, queue) })
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return &testWorker{Worker: w, queue: queue, workspace: ws, dataDir: dataDir}
}

func assignment(workID string, toolCall map[string]any, allowed ...string) map[string]any {
	if len(allowed) == 0 {
		allowed = []string{"calculator", "workspace_read"}
	}
	return map[string]any{
		"logical_work_id":  workID,
		"attempt_no":       1,
		"conversation_id":  "conv-it",
		"turn_id":          "turn-it",
		"context_messages": []map[string]any{{"role": "user", "content": "integration test"}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": allowed},
		"model_context":    map[string]any{"likely_model": "gpt-test"},
		"tool_call":        toolCall,
	}
}

func startWorkflow(t *testing.T, queue, workflowType, id string, input any) client.WorkflowRun {
	t.Helper()
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	run, err := server.Client().ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 2 * time.Minute,
	}, workflowType, json.RawMessage(raw))
	require.NoError(t, err)
	return run
}

func runAssignment(t *testing.T, queue string, a map[string]any) (contract.Result, client.WorkflowRun) {
	t.Helper()
	run := startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, fmt.Sprintf("%s-%s", t.Name(), a["logical_work_id"]), a)
	var res contract.Result
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, &res))
	return res, run
}

// history returns a run's events.
func history(t *testing.T, run client.WorkflowRun) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	iter := server.Client().GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	return events
}

// activityAttempts counts scheduled activities and started attempts by
// type. Local activities (the pure stages by default) count too: their
// marker records the attempt they ended on.
func activityAttempts(events []*historypb.HistoryEvent) (scheduled map[string]int, started map[string][]int32) {
	scheduled = map[string]int{}
	started = map[string][]int32{}
	typeOf := map[int64]string{}
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			attrs := e.GetMarkerRecordedEventAttributes()
			if attrs.GetMarkerName() != "LocalActivity" {
				continue
			}
			var marker struct {
				ActivityType string
				Attempt      int32
			}
			if data := attrs.GetDetails()["data"].GetPayloads(); len(data) > 0 && json.Unmarshal(data[0].GetData(), &marker) == nil {
				scheduled[marker.ActivityType]++
				started[marker.ActivityType] = append(started[marker.ActivityType], marker.Attempt)
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			name := e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			typeOf[e.GetEventId()] = name
			scheduled[name]++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			attrs := e.GetActivityTaskStartedEventAttributes()
			name := typeOf[attrs.GetScheduledEventId()]
			started[name] = append(started[name], attrs.GetAttempt())
		}
	}
	return scheduled, started
}

// runBinary runs a built binary with the dev server's address.
func runBinary(t *testing.T, name string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), append([]string{"TEMPORAL_ADDRESS=" + server.HostPort, "FENIX_UI_URL=" + server.UIURL}, env...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), code
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// lockedBuffer collects a child process's output while a test reads it.
type lockedBuffer = testenv.Buffer

// waitForRunningActivity waits until an activity of the given type has
// started (heartbeating tools show up as pending with state STARTED).
func waitForRunningActivity(t *testing.T, run client.WorkflowRun, activityType string) {
	t.Helper()
	require.Eventually(t, func() bool {
		desc, err := server.Client().DescribeWorkflow(context.Background(), run.GetID(), run.GetRunID())
		if err != nil {
			return false
		}
		for _, pa := range desc.RawResponse.GetPendingActivities() {
			if pa.GetActivityType().GetName() == activityType && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "activity %s never started", activityType)
}
