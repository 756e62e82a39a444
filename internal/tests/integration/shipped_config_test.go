package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"gopkg.in/yaml.v3"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// shippedDynamicConfig is deploy/temporal/dynamicconfig/fenix.yaml as
// dev-server flags.
func shippedDynamicConfig(t *testing.T) []string {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "temporal", "dynamicconfig", "fenix.yaml"))
	require.NoError(t, err)
	var cfg map[string][]struct {
		Value any `yaml:"value"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	var args []string
	for key, values := range cfg {
		require.Len(t, values, 1, key)
		args = append(args, "--dynamic-config-value", fmt.Sprintf("%s=%v", key, values[0].Value))
	}
	return args
}

// The workflow IDs Fenix builds from an assignment's identifiers, at the
// sizes it accepts (contract.MaxIDBytes), fit the server configuration it
// ships. fenix.yaml set limit.maxIDLength to 255, below Temporal's default
// of 1000: a subagent's ID (its parent's logical_work_id and the model's
// call ID) over it failed the parent's workflow task with
// BadStartChildExecutionAttributes, again on every retry, and the turn
// never ended; the child itself, given identifiers over MaxIDBytes, ended
// with InvalidAssignmentError.
func TestLongestIdentifiersFitTheShippedServerConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{CLIPath: cliPath, ExtraArgs: shippedDynamicConfig(t)})
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()

	callID := strings.Repeat("c", contract.MaxIDBytes)
	raw, err := json.Marshal(map[string]any{"scripts": map[string]any{
		"delegating": map[string]any{"turns": []any{
			map[string]any{"tool_calls": []any{map[string]any{"call_id": callID, "tool_name": "spawn_subagent",
				"arguments": map[string]any{"task": "Work out 6 * 7.", "profile": "researcher", "allowed_tool_names": []string{"calculator"}}}}},
			map[string]any{"content": "delegated"}}},
		"researcher": map[string]any{"turns": []any{map[string]any{"content": "42"}}},
	}})
	require.NoError(t, err)
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, raw, 0o644))
	queue := newTaskQueue(t)
	cfg := worker.Config{TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: t.TempDir(),
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		HostConfig: tools.HostConfig{Unreachable: []string{srv.HostPort}}}
	withScripts(t, script)(&cfg)
	w, err := worker.New(srv.Client(), cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start())
	defer w.Stop()

	req := agentTurnRequest(t, "delegating", map[string]any{
		"logical_work_id": strings.Repeat("l", contract.MaxIDBytes),
		"agent_context":   map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator", "spawn_subagent"}},
	})
	input, err := json.Marshal(req)
	require.NoError(t, err)
	id := "longest-ids"
	run, err := srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowExecutionTimeout: time.Minute},
		workflows.AgentTurnWorkflow, json.RawMessage(input))
	require.NoError(t, err)
	getCtx, getCancel := context.WithTimeout(ctx, 30*time.Second)
	defer getCancel()
	var res contract.Result
	if err := run.Get(getCtx, &res); err != nil {
		why := ""
		iter := srv.Client().GetWorkflowHistory(ctx, id, "", false, 0)
		for iter.HasNext() {
			e, herr := iter.Next()
			if herr != nil {
				break
			}
			if f := e.GetWorkflowTaskFailedEventAttributes(); f != nil {
				why = fmt.Sprintf("; workflow task failed: %s %.200s", f.Cause, f.GetFailure().GetMessage())
			}
		}
		_ = srv.Client().TerminateWorkflow(context.Background(), id, "", "test gave up")
		t.Fatalf("no result: %v%s", err, why)
	}
	require.Equal(t, contract.StatusCompleted, res.Status, errorType(res))
	assert.Equal(t, "delegated", res.Output.Content)
	// The server accepted the child's start, and the child ended with a
	// result of its own.
	sub := findTraceEntry(res.Trace, "subagent")
	childID, _ := sub.Get("workflow_id").(string)
	require.NotEmpty(t, childID)
	var child contract.Result
	require.NoError(t, srv.Client().GetWorkflow(ctx, childID, "").Get(getCtx, &child))
	// Its identifiers, its parent's and the call's, fit contract.MaxIDBytes
	// (contract.ChildID); they were the two joined, 513 bytes, and the
	// child ended with InvalidAssignmentError.
	require.Equal(t, contract.StatusCompleted, child.Status, errorType(child))
	assert.Equal(t, "42", child.Output.Content)
}
