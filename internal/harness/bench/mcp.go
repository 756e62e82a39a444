package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/tools/mcp"
	"github.com/fenixrt/fenix/workflows"
)

// MCP scenarios: an echo through server-everything (stdio), governed by
// Fenix, next to a bare workflow whose one activity makes the same call
// on the same server session.
const (
	ScenarioBareMCP       = "bare workflow, 1 activity calling MCP echo"
	ScenarioMCPFast       = "fenix mcp__everything__echo (fast)"
	ScenarioMCPRegular    = "fenix mcp__everything__echo (regular)"
	mcpServer             = "everything"
	mcpEchoMessage        = "bench"
	mcpAnswer             = "Echo: " + mcpEchoMessage
	bareMCPQueue          = "bench-bare-mcp"
	bareMCPWorkflowName   = "BenchBareMCPWorkflow"
	bareMCPActivityName   = "BenchMCPEcho"
	mcpScenarioToolName   = "mcp__" + mcpServer + "__echo"
	mcpScenarioAllowEntry = "mcp__" + mcpServer
)

func mcpScenarios() []scenario {
	call := map[string]any{"tool_name": mcpScenarioToolName, "arguments": map[string]any{"message": mcpEchoMessage}}
	return []scenario{
		{name: ScenarioBareMCP, run: bareMCP},
		{name: ScenarioMCPFast, floor: ScenarioBareMCP, run: mcpAssignment(call, stagesFast)},
		{name: ScenarioMCPRegular, floor: ScenarioBareMCP, run: mcpAssignment(call, stagesRegular)},
	}
}

// mcpConfig writes the .mcp.json the bench worker loads; ok is false (and
// the MCP scenarios are left out) when the npm servers are unavailable.
func mcpConfig(ctx context.Context, dir string) (path string, ok bool, err error) {
	servers, err := mcpservers.Install(ctx)
	if err != nil {
		return "", false, nil
	}
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		mcpServer: map[string]any{"command": servers.Node, "args": []string{servers.Entry("server-everything"), "stdio"}},
	}})
	if err != nil {
		return "", false, err
	}
	path = filepath.Join(dir, ".mcp.json")
	return path, true, os.WriteFile(path, raw, 0o600)
}

// BareMCPWorkflow runs one activity that makes the MCP call: the floor of
// a governed MCP call, which needs exactly that round trip.
func BareMCPWorkflow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var out string
	err := workflow.ExecuteActivity(ctx, bareMCPActivityName).Get(ctx, &out)
	return out, err
}

func newBareMCPWorker(c client.Client, m *mcp.Manager) worker.Worker {
	w := worker.New(c, bareMCPQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(BareMCPWorkflow, workflow.RegisterOptions{Name: bareMCPWorkflowName})
	w.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		res, err := m.Call(ctx, mcpServer, "echo", map[string]any{"message": mcpEchoMessage})
		if err != nil {
			return "", err
		}
		return res.Text(), nil
	}, activity.RegisterOptions{Name: bareMCPActivityName})
	return w
}

func bareMCP(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: nextID("bench-bare-mcp"), TaskQueue: bareMCPQueue}, bareMCPWorkflowName)
	if err != nil {
		return nil, err
	}
	var out string
	if err := run.Get(ctx, &out); err != nil {
		return run, err
	}
	if out != mcpAnswer {
		return run, fmt.Errorf("bare MCP echo answered %q, want %q", out, mcpAnswer)
	}
	return run, nil
}

func mcpAssignment(call map[string]any, stages string) func(context.Context, client.Client) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
		id := nextID("bench-mcp")
		a := baseAssignment(id, mcpScenarioAllowEntry)
		a["tool_call"] = call
		a["execution"] = map[string]any{"stages": stages}
		return runFenix(ctx, c, workflows.ExecuteAssignmentWorkflow, id, a, mcpAnswer)
	}
}
