package faults

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/childproc"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/workflows"
)

var (
	// server is the shared in-memory dev server; the restart scenario
	// starts its own file-backed one.
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
		fmt.Println("faults: skipped in -short mode (needs the Temporal dev server and the worker binary)")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, devserver.Options{}, "worker", testWorkerCommand)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer env.Close()
	server, cliPath, binDir, repoRoot = env.Server, env.CLIPath, env.BinDir, env.RepoRoot
	return env.VerifyAll(m.Run())
}

// newTaskQueue isolates each scenario's workers.
func newTaskQueue() string {
	return fmt.Sprintf("fenix-faults-%d-%d", os.Getpid(), queueSeq.Add(1))
}

func assignment(workID string, toolCall map[string]any, allowed ...string) map[string]any {
	return map[string]any{
		"logical_work_id":  workID,
		"attempt_no":       1,
		"conversation_id":  "conv-faults",
		"turn_id":          "turn-faults",
		"context_messages": []map[string]any{{"role": "user", "content": "fault test"}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": allowed},
		"model_context":    map[string]any{"likely_model": "gpt-test"},
		"tool_call":        toolCall,
	}
}

func calculatorCall(callID, expression string) map[string]any {
	return map[string]any{"call_id": callID, "tool_name": "calculator", "arguments": map[string]any{"expression": expression}}
}

// startAssignment starts ExecuteAssignment with id on queue.
func startAssignment(ctx context.Context, c client.Client, queue, id string, a map[string]any) (client.WorkflowRun, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 5 * time.Minute,
	}, workflows.ExecuteAssignmentWorkflow, json.RawMessage(raw))
}

// awaitAfterStart starts an assignment and waits up to a minute for its result.
func awaitAfterStart(t *testing.T, c client.Client, queue, id string, a map[string]any) contract.Result {
	t.Helper()
	_, err := startAssignment(context.Background(), c, queue, id, a)
	require.NoError(t, err)
	return awaitResult(t, c, id, time.Minute)
}

// awaitResult waits up to limit for a workflow's result.
func awaitResult(t *testing.T, c client.Client, id string, limit time.Duration) contract.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var res contract.Result
	err := c.GetWorkflow(ctx, id, "").Get(ctx, &res)
	require.NoError(t, err, "workflow %s has no result within %s", id, limit)
	return res
}

// history returns a workflow's events.
func history(t *testing.T, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	iter := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	return events
}

// activityAttempts counts scheduled activities and started attempts by type.
func activityAttempts(events []*historypb.HistoryEvent) (scheduled map[string]int, started map[string][]int32) {
	scheduled = map[string]int{}
	started = map[string][]int32{}
	typeOf := map[int64]string{}
	for _, e := range events {
		switch e.GetEventType() {
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

func traceHooks(trace []contract.TraceEntry) []string {
	out := make([]string, len(trace))
	for i, e := range trace {
		out[i] = e.Hook
	}
	return out
}

// waitForRunningActivity waits until an activity of the given type has
// started on a worker.
func waitForRunningActivity(t *testing.T, c client.Client, id, activityType string, limit time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		desc, err := c.DescribeWorkflow(context.Background(), id, "")
		if err != nil {
			return false
		}
		for _, pa := range desc.RawResponse.GetPendingActivities() {
			if pa.GetActivityType().GetName() == activityType && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	}, limit, 50*time.Millisecond, "activity %s of %s never started within %s", activityType, id, limit)
}

// lockedBuffer collects a child process's output while a test reads it.
type lockedBuffer = testenv.Buffer

// workerProc is the worker binary running as its own OS process.
type workerProc struct {
	*childproc.Process
	logs *lockedBuffer
}

// testWorkerCommand is the worker with the test tools registered.
const testWorkerCommand = "internal/harness/testtools/testworker"

// workerSpec is what a worker process is started with; starting the same
// spec again is a restart on the same data directory (same host ID).
type workerSpec struct {
	addr      string
	queue     string
	dataDir   string
	workspace string
	// hooksFile is passed as -hooks-file when set.
	hooksFile string
	// testTools runs the test worker (with test_sleep, test_slow_lookup)
	// instead of ./worker.
	testTools bool
	// env adds environment variables (NAME=value).
	env []string
}

// startWorkerProc starts the worker binary and waits until it polls. It
// is SIGKILLed at cleanup if still running.
func startWorkerProc(t *testing.T, s workerSpec) *workerProc {
	t.Helper()
	args := []string{"-task-queue", s.queue, "-data-dir", s.dataDir, "-workspace-root", s.workspace}
	if s.hooksFile != "" {
		args = append(args, "-hooks-file", s.hooksFile)
	}
	binary := filepath.Join(binDir, "worker")
	if s.testTools {
		binary = filepath.Join(binDir, filepath.Base(testWorkerCommand))
	} else {
		args = append(args, "-log-format", "text", "-log-level", "info", "-http-addr", "off")
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+s.addr, "TEMPORAL_NAMESPACE=default")
	cmd.Env = append(cmd.Env, s.env...)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	proc, err := childproc.Start(cmd)
	require.NoError(t, err)
	p := &workerProc{Process: proc, logs: logs}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("worker %d logs:\n%s", p.PID(), tail(logs.String(), 6000))
		}
	})
	deadline := time.After(60 * time.Second)
	for !strings.Contains(logs.String(), "fenix worker started") {
		select {
		case <-p.Done():
			t.Fatalf("worker exited before it started (%v); logs:\n%s", p.Err(), logs.String())
		case <-deadline:
			t.Fatalf("worker did not start within 60s; logs:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p
}

// kill SIGKILLs the worker (only the worker process, not its command
// groups) and waits for it to be gone.
func (p *workerProc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.Signal(syscall.SIGKILL))
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("worker %d still running 10s after SIGKILL", p.PID())
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *workerProc) stop(t *testing.T) {
	t.Helper()
	if !p.Running() {
		return
	}
	require.NoError(t, p.Signal(syscall.SIGTERM))
	select {
	case <-p.Done():
		var exitErr *exec.ExitError
		if errors.As(p.Err(), &exitErr) {
			t.Errorf("worker exited with %v on SIGTERM; logs:\n%s", p.Err(), tail(p.logs.String(), 4000))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("worker did not exit within 30s of SIGTERM; logs:\n%s", tail(p.logs.String(), 4000))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// percentile returns the p-th percentile (0..100) of sorted durations,
// nearest-rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}
