package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
)

// ensureHosts restarts a host worker an earlier test left stopped, and
// waits until both hosts poll the shared queue: after a server restart or
// a cut link a worker's gRPC connection can sit in reconnect backoff for
// a while, and a load test started then would find one host silent.
func ensureHosts(t *testing.T) {
	t.Helper()
	for _, h := range []*Host{hostA, hostB} {
		if !h.WorkerRunning() {
			require.NoError(t, h.StartWorker(context.Background()), "restart host %s's worker", h.Name)
		}
	}
	require.Eventually(t, func() bool {
		resp, err := tc.DescribeTaskQueue(context.Background(), "fenix", enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			return false
		}
		polling := map[string]bool{}
		for _, p := range resp.GetPollers() {
			if h := hostOfIdentity(p.GetIdentity()); h != nil && time.Since(p.GetLastAccessTime().AsTime()) < 10*time.Second {
				polling[h.Name] = true
			}
		}
		return polling[hostA.Name] && polling[hostB.Name]
	}, 2*time.Minute, 250*time.Millisecond, "both hosts poll the shared queue")
}

// hostOfIdentity maps a worker identity ("pid@hostname@...") to its host.
func hostOfIdentity(identity string) *Host {
	pid, _, _ := strings.Cut(identity, "@")
	for _, h := range []*Host{hostA, hostB} {
		if strconv.Itoa(h.WorkerPID()) == pid {
			return h
		}
	}
	return nil
}

// hostOfResource is the host a resource ID (<kind>_<host-id>_<hex>) names.
func hostOfResource(id string) *Host {
	parts := strings.Split(id, "_")
	if len(parts) != 3 {
		return nil
	}
	for _, h := range []*Host{hostA, hostB} {
		if h.ID == parts[1] {
			return h
		}
	}
	return nil
}

func otherHost(h *Host) *Host {
	if h == hostA {
		return hostB
	}
	return hostA
}

func hostName(h *Host) string {
	if h == nil {
		return "?"
	}
	return h.Name
}

// toolRanOn is the host whose worker started ExecuteTool (a regular
// activity), from the ActivityTaskStarted event's identity.
func toolRanOn(events []*historypb.HistoryEvent) *Host {
	scheduled := map[int64]string{}
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			attrs := e.GetActivityTaskStartedEventAttributes()
			if scheduled[attrs.GetScheduledEventId()] == "ExecuteTool" {
				return hostOfIdentity(attrs.GetIdentity())
			}
		}
	}
	return nil
}

// firstWorkflowTaskOn is the host that completed the run's first workflow
// task, the one that reviewed the call and scheduled the tool.
func firstWorkflowTaskOn(events []*historypb.HistoryEvent) *Host {
	for _, e := range events {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			return hostOfIdentity(e.GetWorkflowTaskCompletedEventAttributes().GetIdentity())
		}
	}
	return nil
}

// toolAttempts lists the attempts ExecuteTool was started with.
func toolAttempts(events []*historypb.HistoryEvent) []int32 {
	scheduled := map[int64]string{}
	var attempts []int32
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			attrs := e.GetActivityTaskStartedEventAttributes()
			if scheduled[attrs.GetScheduledEventId()] == "ExecuteTool" {
				attempts = append(attempts, attrs.GetAttempt())
			}
		}
	}
	return attempts
}

// toolHeartbeatTimeout is ExecuteTool's heartbeat timeout as scheduled.
func toolHeartbeatTimeout(events []*historypb.HistoryEvent) time.Duration {
	for _, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "ExecuteTool" {
			return a.GetHeartbeatTimeout().AsDuration()
		}
	}
	return 0
}

// commandRunID is the command_run_id a completed exec_command reported.
func commandRunID(t *testing.T, res contract.Result) string {
	t.Helper()
	for _, r := range res.Reports {
		if r.ToolInvocation == nil {
			continue
		}
		if meta, ok := r.ToolInvocation.ResponsePayload["metadata"].(map[string]any); ok {
			if id, ok := meta["command_run_id"].(string); ok && id != "" {
				return id
			}
		}
	}
	t.Fatalf("no command_run_id in the reports: %+v", res.Reports)
	return ""
}

// auditStore opens the cluster's audit log (PostgreSQL, shared by the hosts).
func auditStore(t *testing.T) audit.Store {
	t.Helper()
	store, err := audit.OpenPostgres(context.Background(), cl.FenixDSN())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

func auditCount(t *testing.T, store audit.Store, sessionID, event string) int {
	t.Helper()
	n, err := store.Count(context.Background(), audit.Filter{SessionID: sessionID, Event: event})
	require.NoError(t, err)
	return n
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, 30*time.Second, 50*time.Millisecond, "the command wrote its PID to %s", path)
	return pid
}

func markerPath(h *Host, name string) string { return filepath.Join(h.Workspace, name) }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// percentiles formats p50/p95/max of durations.
func percentiles(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	sorted := append([]time.Duration(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	at := func(p float64) time.Duration {
		i := int(p*float64(len(sorted))+0.999999) - 1
		return sorted[max(0, min(i, len(sorted)-1))]
	}
	return fmt.Sprintf("p50 %s, p95 %s, max %s", at(0.5).Round(time.Millisecond), at(0.95).Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
}
