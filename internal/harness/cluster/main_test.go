package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// The cluster every test in this package shares, started once by TestMain:
// the Temporal server on PostgreSQL and two worker hosts, a and b, each in
// its own network namespace. skipReason is set when it cannot run here.
var (
	cl         *Cluster
	hostA      *Host
	hostB      *Host
	tc         client.Client
	skipReason string
	started    time.Time
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	started = time.Now()
	switch {
	case testing.Short():
		skipReason = "cluster tests skipped in -short mode (they build and run the Temporal server on PostgreSQL)"
	case os.Getenv("FENIX_TEST_POSTGRES_DSN") == "":
		skipReason = "cluster tests need PostgreSQL: set FENIX_TEST_POSTGRES_DSN to a role that may create databases (.ci/run does)"
	default:
		if err := CheckNetNS(context.Background()); err != nil {
			skipReason = "cluster tests need Linux network namespaces (root and iproute2): " + err.Error()
		}
	}
	if skipReason != "" {
		fmt.Println("cluster:", skipReason)
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "fenix-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	code := 1
	defer func() {
		// Logs stay when something failed, for the report.
		if code == 0 {
			os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "cluster: logs kept in %s\n", dir)
		}
	}()
	if err := startCluster(ctx, dir); err != nil {
		if errorsIsNoCreateDB(err) {
			skipReason = "cluster tests need a PostgreSQL role that may create databases: " + err.Error()
			fmt.Println("cluster:", skipReason)
			return m.Run()
		}
		fmt.Fprintln(os.Stderr, "cluster:", err)
		if cl != nil {
			cl.Close()
		}
		return 1
	}
	code = m.Run()
	tc.Close()
	cl.Close()
	fmt.Printf("cluster: whole package wall time %s\n", time.Since(started).Round(time.Millisecond))
	return code
}

func startCluster(ctx context.Context, dir string) error {
	repo := testenv.RepoRoot()
	bin := filepath.Join(dir, "worker")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./worker")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build worker: %w\n%s", err, out)
	}
	var err error
	cl, err = Start(ctx, Config{
		RepoRoot: repo, PostgresDSN: os.Getenv("FENIX_TEST_POSTGRES_DSN"),
		WorkerBinary: bin, Dir: dir, Progress: os.Stdout,
	})
	if err != nil {
		return err
	}
	scripts := filepath.Join(repo, "examples", "agent_scripts.json")
	for _, spec := range []struct {
		name string
		dst  **Host
	}{{"a", &hostA}, {"b", &hostB}} {
		h, err := cl.AddHost(ctx, HostConfig{Name: spec.name, HostID: "host-" + spec.name, Env: []string{"FENIX_SCRIPT_FILE=" + scripts}})
		if err != nil {
			return err
		}
		*spec.dst = h
		fmt.Printf("cluster: host %s at %s (namespace %s), queue %s, Temporal at %s\n", h.Name, h.Link.Addr, h.Link.NetNS, h.Queue, h.TemporalAddress())
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	operatorTLS, err := cl.OperatorTLS()
	if err != nil {
		return err
	}
	tc, err = client.Dial(client.Options{HostPort: cl.Frontend, Namespace: cl.Namespace, Logger: worker.NewSDKLogger(logger),
		DataConverter: codec.NewDataConverter(nil), ConnectionOptions: client.ConnectionOptions{TLS: operatorTLS}})
	return err
}

func requireCluster(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

func assignment(workID string, toolCall map[string]any, allowed ...string) map[string]any {
	return map[string]any{
		"logical_work_id":  workID,
		"attempt_no":       1,
		"conversation_id":  "conv-cluster",
		"turn_id":          "turn-" + workID,
		"context_messages": []map[string]any{{"role": "user", "content": "cluster test"}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": allowed},
		"model_context":    map[string]any{"likely_model": "gpt-test"},
		"tool_call":        toolCall,
	}
}

func calculatorCall(callID, expression string) map[string]any {
	return map[string]any{"call_id": callID, "tool_name": "calculator", "arguments": map[string]any{"expression": expression}}
}

func execCall(callID, command string, timeoutSeconds int) map[string]any {
	return map[string]any{"call_id": callID, "tool_name": "exec_command",
		"arguments": map[string]any{"command_line": command, "timeout_seconds": timeoutSeconds}}
}

// start starts a workflow on the shared queue.
func start(t *testing.T, workflowType, id string, input any) {
	t.Helper()
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	_, err = tc.ExecuteWorkflow(context.Background(), startOptions(id), workflowType, json.RawMessage(raw))
	require.NoError(t, err)
}

func startOptions(id string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: id, TaskQueue: workflows.DefaultTaskQueue, WorkflowExecutionTimeout: 10 * time.Minute}
}

func jsonMarshal(v any) (json.RawMessage, error) { return json.Marshal(v) }

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// result waits up to limit for a workflow's result.
func result(t *testing.T, id string, limit time.Duration) contract.Result {
	t.Helper()
	res, err := tryResult(id, limit)
	require.NoError(t, err, "workflow %s has no result within %s", id, limit)
	return res
}

func tryResult(id string, limit time.Duration) (contract.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var res contract.Result
	err := tc.GetWorkflow(ctx, id, "").Get(ctx, &res)
	return res, err
}

func run(t *testing.T, id string, a map[string]any) contract.Result {
	t.Helper()
	start(t, workflows.ExecuteAssignmentWorkflow, id, a)
	return result(t, id, 2*time.Minute)
}

func history(t *testing.T, id string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	return events
}

func errorsIsNoCreateDB(err error) bool { return errors.Is(err, ErrNoCreateDB) }
