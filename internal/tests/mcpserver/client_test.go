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
	workflowpb "go.temporal.io/api/workflow/v1"
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
			// Aborted once the run surely reported its review, even on a
			// loaded machine. The pause lets the SDK send
			// notifications/cancelled (it does not await it) before the
			// driver closes the connection.
			call("test_sleep", map[string]any{"seconds": 60}, "abortAfterMs", 5000, "pauseMs", 1500),
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
	require.Equal(t, contract.StatusCanceled, res.Status, "the client's abort cancels the run")
	// The SDK aborts the request and sends notifications/cancelled at
	// once; whichever reaches the gateway first names the cancellation.
	assert.True(t, strings.Contains(res.Error.LastErrorSummary, "notifications/cancelled") ||
		strings.Contains(res.Error.LastErrorSummary, "aborted its HTTP request"), res.Error.LastErrorSummary)
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
// of a client that supports elicitation; with -elicit-approval allow,
// accept allows it and decline denies.
func TestApprovalByElicitation(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"workspace_list"}, ElicitApproval: mcpserver.ElicitAllow}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
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

// TestElicitationCannotApproveByDefault: the client is the agent whose
// call waits, so by default its accept is no approval (an agent could
// approve its own risky call): the call waits for an operator, and the
// client's decline still denies.
func TestElicitationCannotApproveByDefault(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"workspace_list"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	t.Run("accept", func(t *testing.T) {
		d := startDriver(t, map[string]any{"transport": "http", "url": url, "elicit": "accept",
			"steps": []any{call("workspace_list", map[string]any{"path": "."})}})
		asked := d.next(time.Minute, "elicit")
		assert.Contains(t, asked["message"], "starter approve")
		var deny []string
		for deny == nil {
			msg, _ := d.next(time.Minute, "progress")["message"].(string)
			if m := regexp.MustCompile("`starter approve (\\S+ \\S+)`").FindStringSubmatch(msg); m != nil && strings.Contains(msg, "not an approval") {
				deny = append([]string{"deny"}, strings.Fields(m[1])...)
			}
		}
		cmd := exec.Command(filepath.Join(env.BinDir, "starter"), deny...)
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Server.HostPort)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the operator's deny must still be open to decide: %s", out)
		r := d.result(time.Minute)
		assert.True(t, r.IsError, "the call ran on the client's own accept: %s", r.text())
	})
	t.Run("decline", func(t *testing.T) {
		d := startDriver(t, map[string]any{"transport": "http", "url": url, "elicit": "decline",
			"steps": []any{call("workspace_list", map[string]any{"path": "."})}})
		d.next(time.Minute, "elicit")
		r := d.result(time.Minute)
		assert.True(t, r.IsError)
		assert.Contains(t, r.text(), "declined by the MCP client's user")
	})
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
		approve = approveCommand(msg)
	}
	runStarter(t, approve...)
	r := d.result(time.Minute)
	assert.False(t, r.IsError, r.text())
	assert.Contains(t, r.text(), "README.md")
}

// approveCommand is the `starter approve WORKFLOW CALL` a waiting
// message names, as arguments, or nil.
func approveCommand(msg string) []string {
	if m := regexp.MustCompile("`starter (approve \\S+ \\S+)`").FindStringSubmatch(msg); m != nil {
		return strings.Fields(m[1])
	}
	return nil
}

// runStarter runs the starter binary against the dev server, as an
// operator would.
func runStarter(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.BinDir, "starter"), args...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Server.HostPort)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

// TestANewClientInANamedConversationRunsItsCalls: JSON-RPC request IDs are
// unique only within a session. A client that restarts (or a second one)
// in the same named conversation numbers its requests from zero again; its
// calls run, and never answer with an earlier session's recorded result.
// A call cut by a gateway restart still completes in Temporal.
func TestANewClientInANamedConversationRunsItsCalls(t *testing.T) {
	w := startWorker(t)
	cfg := mcpserver.Config{TaskQueue: w.queue, Allow: []string{"test_sleep", "workspace_write"}}
	headers := map[string]string{mcpserver.HeaderConversation: "named-conv"}
	ctx := context.Background()
	runsOf := func(id string) []*workflowpb.WorkflowExecutionInfo {
		resp, err := env.Server.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Server.Namespace, Query: "WorkflowId = '" + id + "'"})
		require.NoError(t, err)
		return resp.Executions
	}

	// Longer than the gateway's 5 s graceful shutdown, so the call is cut.
	sleep := []any{call("test_sleep", map[string]any{"seconds": 8})}
	url, stop := gateway(t, cfg, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	first := startDriver(t, map[string]any{"transport": "http", "url": url, "headers": headers, "steps": sleep})
	first.next(time.Minute, "progress") // the run is under way
	stop()
	require.NoError(t, first.cmd.Process.Kill())

	url2, _ := gateway(t, cfg, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	write := []any{call("workspace_write", map[string]any{"path": "log.txt", "content": "one\n"})}
	var ids []string
	for i := range 2 {
		d := startDriver(t, map[string]any{"transport": "http", "url": url2, "headers": headers, "steps": write})
		r := d.result(time.Minute)
		require.False(t, r.IsError, r.text())
		id := r.workflowID()
		require.True(t, strings.HasPrefix(id, "assignment-mcp-named-conv-"), id)
		ids = append(ids, id)
		b, err := os.ReadFile(filepath.Join(w.workspace, "log.txt"))
		require.NoError(t, err, "client %d: its write did not run", i+1)
		assert.Equal(t, "one\n", string(b))
		require.NoError(t, os.Remove(filepath.Join(w.workspace, "log.txt")))
	}
	assert.NotEqual(t, ids[0], ids[1], "the second client's call answered with the first one's run")
	for _, id := range ids {
		require.Len(t, runsOf(id), 1, id)
	}
	require.Eventually(t, func() bool {
		resp, err := env.Server.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Server.Namespace,
			Query: "ConversationId = 'named-conv' AND ToolName = 'test_sleep'"})
		return err == nil && len(resp.Executions) == 1 && resp.Executions[0].Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, time.Minute, 200*time.Millisecond, "the cut call completes in Temporal")
}
