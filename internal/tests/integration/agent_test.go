package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// withScripts gives the worker the scripted model provider.
func withScripts(t *testing.T, path string) workerOption {
	p, err := scripted.Load(path)
	require.NoError(t, err)
	return func(c *worker.Config) { c.Model = &llm.Router{Scripted: p} }
}

func agentTurnRequest(t *testing.T, script string, extra map[string]any) map[string]any {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "examples", "agent_turn.json"))
	require.NoError(t, err)
	var req map[string]any
	require.NoError(t, json.Unmarshal(raw, &req))
	req["model_context"] = map[string]any{"likely_model": "scripted:" + script}
	req["logical_work_id"] = "it-agent-" + script + "-" + t.Name()
	for k, v := range extra {
		req[k] = v
	}
	return req
}

func runTurn(t *testing.T, queue string, req map[string]any) contract.Result {
	t.Helper()
	run := startWorkflow(t, queue, workflows.AgentTurnWorkflow, req["logical_work_id"].(string), req)
	var res contract.Result
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, &res))
	return res
}

func TestStarterAgentPrintsToolCallsLive(t *testing.T) {
	w := startWorker(t, withScripts(t, filepath.Join(repoRoot, "examples", "agent_scripts.json")))
	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "README.md"), []byte("# Example workspace\n"), 0o644))
	out, code := runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "agent", "-id", "it-starter-agent", "examples/agent_turn.json")
	require.Equal(t, 0, code, out)
	assert.True(t, containsAll(out,
		"step 1: the model calls workspace_read, calculator",
		"→ workspace_read", "→ calculator",
		"← The calculator returned 391.",
		"Status: completed",
		"17 * 23 = 391."), out)
}

func TestAgentTurnWithSubagentOnDevServer(t *testing.T) {
	w := startWorker(t, withScripts(t, filepath.Join(repoRoot, "examples", "agent_scripts.json")))
	res := runTurn(t, w.queue, agentTurnRequest(t, "delegating", nil))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "My researcher reports that 2 ** 10 = 1024.", res.Output.Content)
	sub := findTraceEntry(res.Trace, "subagent")
	assert.Equal(t, contract.StatusCompleted, sub.Get("status"))
	childID, _ := sub.Get("workflow_id").(string)
	require.NotEmpty(t, childID)

	// The child ran its own pipeline, hooks included, as a subagent.
	var child contract.Result
	require.NoError(t, server.Client().GetWorkflow(context.Background(), childID, "").Get(context.Background(), &child))
	assert.Equal(t, "2 ** 10 is 1024.", child.Output.Content)
	assert.Equal(t, "session_start", child.Trace[0].Hook)
	assert.Equal(t, 1, child.Metrics.ToolCalls)
}

func TestAgentTurnPermissionAnsweredByTheStarter(t *testing.T) {
	w := startWorker(t, withScripts(t, filepath.Join("..", "..", "..", "workflows", "testdata", "scripts", "agent.json")),
		func(c *worker.Config) { c.Hooks = []hooks.AgentHook{testtools.PolicyHook{}} })
	req := agentTurnRequest(t, "ask", map[string]any{"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}}})
	id := req["logical_work_id"].(string)
	run := startWorkflow(t, w.queue, workflows.AgentTurnWorkflow, id, req)

	require.Eventually(t, func() bool {
		out, code := runBinary(t, "starter", nil, "pending", id)
		return code == 0 && strings.Contains(out, "ask-1")
	}, 30*time.Second, 200*time.Millisecond)
	out, code := runBinary(t, "starter", nil, "approve", "-reason", "fine by me", id, "ask-1")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Allowed: call ask-1")

	var res contract.Result
	require.NoError(t, run.Get(context.Background(), &res))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "5 * 5 is 25.", res.Output.Content)
}

func TestAgentTurnContinuesAsNewOnTheDevServer(t *testing.T) {
	w := startWorker(t, withScripts(t, filepath.Join("..", "..", "..", "workflows", "testdata", "scripts", "agent.json")))
	req := agentTurnRequest(t, "long", map[string]any{
		"agent_context":                map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}},
		"continue_as_new_after_events": 40, // a five-step turn is about 50 events since fenix-shape 7
		"max_steps":                    10,
	})
	res := runTurn(t, w.queue, req)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Done after four steps.", res.Output.Content)
	assert.Equal(t, 5, res.Metrics.Steps, "metrics carried across runs")
	assert.Equal(t, 4, res.Metrics.ToolCalls)
	continued := findTraceEntry(res.Trace, "continued")
	require.NotEmpty(t, continued.Hook, "the final run continued from an earlier one")
	previous, _ := continued.Get("previous_run_ids").([]any)
	assert.NotEmpty(t, previous)
	t.Logf("runs: %d before the last", len(previous))
}
