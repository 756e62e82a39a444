package mcpserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/mcpserver"
)

func toolNames(e event) []string {
	var names []string
	for _, tool := range e["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	return names
}

// runResult reads the recorded result of a call's workflow.
func runResult(t *testing.T, workflowID string) contract.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.Result
	require.NoError(t, env.Server.Client().GetWorkflow(ctx, workflowID, "").Get(ctx, &res))
	return res
}

// stdio is a driver configuration that runs `starter mcp` as Claude Code
// does: a child process speaking stdio.
func stdio(w *testWorker, allow string, steps ...any) map[string]any {
	return map[string]any{
		"transport": "stdio",
		"command":   filepath.Join(env.BinDir, "starter"),
		"args":      []string{"mcp", "-task-queue", w.queue, "-allow", allow},
		"env":       map[string]string{"TEMPORAL_ADDRESS": env.Server.HostPort, "TEMPORAL_NAMESPACE": env.Server.Namespace},
		"steps":     steps,
	}
}

// TestStdioWithTheTypeScriptClient: `starter mcp` as Claude Code runs it
// (a child process speaking stdio), listing the worker's tools through the
// allow-list, an allowed call and a call a hook blocks.
func TestStdioWithTheTypeScriptClient(t *testing.T) {
	w := startWorker(t)
	d := startDriver(t, stdio(w, "calculator,workspace_*,test_sleep",
		step("list"),
		call("calculator", map[string]any{"expression": "6 * 7"}),
		call("workspace_read", map[string]any{"path": "secret.txt"}),
		call("calculator", map[string]any{"expression": "1 +"}),
	))
	connected := d.next(30*time.Second, "connected")
	assert.Equal(t, "fenix", connected["server"].(map[string]any)["name"])

	names := toolNames(d.next(30*time.Second, "tools"))
	assert.Contains(t, names, "test_sleep", "the worker's own tools are listed, not a built-in set")
	assert.Contains(t, names, "workspace_read")
	assert.NotContains(t, names, "exec_command", "the allow-list filters")

	ok := d.result(time.Minute)
	assert.False(t, ok.IsError, ok.text())
	assert.Contains(t, ok.text(), "42")
	require.True(t, strings.HasPrefix(ok.workflowID(), "assignment-mcp-stdio-"), ok.workflowID())
	res := runResult(t, ok.workflowID())
	assert.Equal(t, contract.StatusCompleted, res.Status)
	var hooks []string
	for _, e := range res.Trace {
		hooks = append(hooks, e.Hook)
	}
	// No PreToolUse hook matches the calculator, so the lean review
	// (fenix-shape 5) leaves that stage out; the blocked call below has one.
	assert.Subset(t, hooks, []string{"review_tool_call", "prepare_turn", "execute_tool", "post_tool_use", "finalize_output"}, "the run went through the pipeline")
	assert.NotContains(t, hooks, "pre_tool_use", "no PreToolUse hook matches the calculator")

	blocked := d.result(time.Minute)
	assert.True(t, blocked.IsError)
	assert.Contains(t, blocked.text(), "secrets are off limits", "the hook's reason")
	blockedRun := runResult(t, blocked.workflowID())
	assert.Equal(t, contract.StatusFailed, blockedRun.Status)
	var blockedHooks []string
	for _, e := range blockedRun.Trace {
		blockedHooks = append(blockedHooks, e.Hook)
	}
	assert.Contains(t, blockedHooks, "pre_tool_use", "the guard's PreToolUse stage ran for workspace_read")

	invalid := d.result(time.Minute)
	assert.True(t, invalid.IsError)
	assert.Contains(t, invalid.text(), "calculator")
	d.next(30*time.Second, "done")
}

// TestHTTPWithTheTypeScriptClient: the Streamable HTTP endpoint with a
// bearer token, progress from the reports, and a call the client cancels
// (notifications/cancelled) cancelling its run.
func TestHTTPWithTheTypeScriptClient(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"calculator", "test_sleep"}},
		mcpserver.HTTPOptions{Addr: "127.0.0.1:0", Token: "tok-123"})

	refused := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{step("list")}})
	fatal := <-refused.events
	assert.Equal(t, "fatal", fatal.kind(), "no token, no session")
	assert.Contains(t, fatal["message"], "bearer token")

	d := startDriver(t, map[string]any{
		"transport": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer tok-123"},
		"steps": []any{
			step("list"),
			call("calculator", map[string]any{"expression": "2 + 2"}),
			// The pause lets the SDK send notifications/cancelled (it does not
			// await it) before the driver closes the connection.
			call("test_sleep", map[string]any{"seconds": 60}, "abortAfterMs", 2500, "pauseMs", 1500),
		},
	})
	connected := d.next(30*time.Second, "connected")
	assert.NotEmpty(t, connected["sessionId"], "the server issued Mcp-Session-Id")
	assert.ElementsMatch(t, []string{"calculator", "test_sleep"}, toolNames(d.next(30*time.Second, "tools")))
	ok := d.result(time.Minute)
	assert.False(t, ok.IsError, ok.text())
	assert.Contains(t, ok.text(), "4")

	// Reports arrive as progress while the tool runs: started, then the
	// review naming the tool.
	for msg := ""; !strings.Contains(msg, "tool_reviewed test_sleep"); {
		msg, _ = d.next(30*time.Second, "progress")["message"].(string)
	}
	aborted := d.next(time.Minute, "call_error")
	assert.Contains(t, aborted["message"], "abort")

	// The cancelled run is found by its ID prefix: the client never saw a
	// result carrying it.
	id := findRun(t, connected["sessionId"].(string), ok.workflowID())
	res := runResult(t, id)
	require.Equal(t, contract.StatusCanceled, res.Status, "notifications/cancelled cancels the run")
	assert.Contains(t, res.Error.LastErrorSummary, "notifications/cancelled")
	d.next(30*time.Second, "done")
}

// findRun finds the session's one ExecuteAssignment run other than skip.
func findRun(t *testing.T, session, skip string) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		resp, err := env.Server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Server.Namespace,
			Query: "WorkflowId STARTS_WITH 'assignment-mcp-" + session + "-'"})
		if err != nil {
			return false
		}
		for _, e := range resp.Executions {
			if e.Execution.WorkflowId != skip {
				id = e.Execution.WorkflowId
				return true
			}
		}
		return false
	}, 20*time.Second, 200*time.Millisecond)
	return id
}

// TestApprovalByElicitation: a call a hook parks for permission is asked
// of a client that supports elicitation; accept allows it, decline denies.
func TestApprovalByElicitation(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"workspace_list"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	for _, answer := range []string{"accept", "decline"} {
		t.Run(answer, func(t *testing.T) {
			d := startDriver(t, map[string]any{"transport": "http", "url": url, "elicit": answer,
				"steps": []any{call("workspace_list", map[string]any{"path": "."})}})
			asked := d.next(time.Minute, "elicit")
			assert.Contains(t, asked["message"], "workspace_list")
			r := d.result(time.Minute)
			if answer == "accept" {
				assert.False(t, r.IsError, r.text())
				assert.Contains(t, r.text(), "README.md")
			} else {
				assert.True(t, r.IsError)
				assert.Contains(t, r.text(), "declined by the MCP client's user")
			}
		})
	}
}

// TestApprovalByStarterWhileProgressSaysSo: a client without elicitation
// is told in a progress notification to run `starter approve`, and the
// call completes once someone does.
func TestApprovalByStarterWhileProgressSaysSo(t *testing.T) {
	w := startWorker(t)
	d := startDriver(t, stdio(w, "workspace_list", call("workspace_list", map[string]any{"path": "."})))
	var approve []string
	for approve == nil {
		msg, _ := d.next(time.Minute, "progress")["message"].(string)
		if m := regexp.MustCompile("`starter (approve \\S+ \\S+)`").FindStringSubmatch(msg); m != nil {
			approve = strings.Fields(m[1])
		}
	}
	cmd := exec.Command(filepath.Join(env.BinDir, "starter"), approve...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Server.HostPort)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	r := d.result(time.Minute)
	assert.False(t, r.IsError, r.text())
	assert.Contains(t, r.text(), "README.md")
}

// TestRetryAfterGatewayRestartGetsTheRecordedResult: a call in flight when
// the gateway stops completes in Temporal; the client reconnects to a new
// gateway, retries the same request in the same named conversation and
// gets that run's result, not a second execution.
func TestRetryAfterGatewayRestartGetsTheRecordedResult(t *testing.T) {
	w := startWorker(t)
	cfg := mcpserver.Config{TaskQueue: w.queue, Allow: []string{"test_sleep"}}
	headers := map[string]string{mcpserver.HeaderConversation: "retry-conv"}
	// Longer than the gateway's 5 s graceful shutdown, so the call is cut.
	steps := []any{call("test_sleep", map[string]any{"seconds": 8})}

	url, stop := gateway(t, cfg, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	first := startDriver(t, map[string]any{"transport": "http", "url": url, "headers": headers, "steps": steps})
	first.next(time.Minute, "progress") // the run is under way
	stop()
	// The client lost its server mid-call (the SDK keeps trying to resume
	// the stream of a server that is gone); it gives up and reconnects.
	require.NoError(t, first.cmd.Process.Kill())

	url2, _ := gateway(t, cfg, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	second := startDriver(t, map[string]any{"transport": "http", "url": url2, "headers": headers, "steps": steps})
	r := second.result(time.Minute)
	assert.False(t, r.IsError, r.text())
	assert.Contains(t, r.text(), "Slept 8 seconds")
	id := r.workflowID()
	require.True(t, strings.HasPrefix(id, "assignment-mcp-retry-conv-"), id)

	ctx := context.Background()
	resp, err := env.Server.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Server.Namespace, Query: "WorkflowId = '" + id + "'"})
	require.NoError(t, err)
	require.Len(t, resp.Executions, 1, "one run: the retry did not execute again")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, resp.Executions[0].Status)
	assert.Equal(t, r.Meta[mcpserver.MetaRunID], resp.Executions[0].Execution.RunId)

	// Once the run is closed, a retry still reads it (reject-duplicate).
	third := startDriver(t, map[string]any{"transport": "http", "url": url2, "headers": headers, "steps": steps})
	again := third.result(time.Minute)
	assert.Equal(t, r.Meta[mcpserver.MetaRunID], again.Meta[mcpserver.MetaRunID])
}
