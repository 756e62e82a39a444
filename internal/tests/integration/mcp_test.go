package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/mcp"
	"github.com/fenixrt/fenix/workflows"
)

// mcpProject writes a project as a Claude Code user has it: a .mcp.json
// with the npm reference servers and a .claude/settings.json whose
// PreToolUse hooks match MCP tools by Claude Code's names.
func mcpProject(t *testing.T, servers mcpservers.Servers) string {
	t.Helper()
	project := t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": "node", "args": []string{servers.Entry("server-memory")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(project, "memory.jsonl")}},
		"everything": map[string]any{"command": "node", "args": []string{servers.Entry("server-everything"), "stdio"}},
	}}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), raw, 0o644))

	hooksDir := filepath.Join(project, ".claude", "hooks")
	require.NoError(t, os.MkdirAll(hooksDir, 0o755))
	// Claude Code's contract: the event on stdin, exit 2 blocks with stderr.
	require.NoError(t, os.WriteFile(filepath.Join(hooksDir, "memory-guard.sh"), []byte(`#!/bin/sh
input=$(cat)
case "$input" in
  *mcp__memory__delete_entities*) echo "deleting memories needs a human review" >&2; exit 2 ;;
esac
exit 0
`), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hooksDir, "ask-sum.sh"), []byte(`#!/bin/sh
cat >/dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"sums need a human"}}'
`), 0o755))
	settings := map[string]any{"hooks": map[string]any{"PreToolUse": []any{
		map[string]any{"matcher": "mcp__memory__.*", "hooks": []any{
			map[string]any{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/memory-guard.sh"}}},
		map[string]any{"matcher": "mcp__everything__get-sum", "hooks": []any{
			map[string]any{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/ask-sum.sh"}}},
	}}}
	raw, err = json.MarshalIndent(settings, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), raw, 0o644))
	return project
}

func startMCPWorker(t *testing.T, opts ...workerOption) (*testWorker, string) {
	t.Helper()
	servers := mcpservers.Require(t)
	project := mcpProject(t, servers)
	w := startWorker(t, append([]workerOption{func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	}}, opts...)...)
	require.NotNil(t, w.MCP(), "the project's .mcp.json was not picked up")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))
	return w, project
}

func mcpStatus(w *testWorker, name string) mcp.ServerStatus {
	for _, s := range w.MCP().Status() {
		if s.Name == name {
			return s
		}
	}
	return mcp.ServerStatus{}
}

// requireRejected runs an assignment that must fail with errType and a
// message containing want, without ExecuteTool ever being scheduled.
func requireRejected(t *testing.T, queue string, a map[string]any, errType, want string) (contract.Result, client.WorkflowRun) {
	t.Helper()
	res, run := runAssignment(t, queue, a)
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, errType, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, want)
	scheduled, _ := activityAttempts(history(t, run))
	assert.Zero(t, scheduled["ExecuteTool"], "a rejected call never executes")
	return res, run
}

func mcpCall(name, tool string, args map[string]any, allowed ...string) map[string]any {
	a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": args}, allowed...)
	return a
}

// The npm reference servers, configured by an unchanged .mcp.json and
// governed by an unchanged .claude/settings.json, on the dev server:
// allowed, blocked by an mcp__ matcher, approved, not visible, canceled.
func TestMCPServersGovernedOnDevServer(t *testing.T) {
	w, _ := startMCPWorker(t)

	t.Run("allowed call runs once, pinned to this host, audited", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, mcpCall("mem-write", "mcp__memory__create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "fenix", "entityType": "runtime", "observations": []any{"is durable"}}}}, "mcp__memory"))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

		res, run := runAssignment(t, w.queue, mcpCall("mem-read", "mcp__memory__read_graph", map[string]any{}, "mcp__memory__read_graph"))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Contains(t, res.Output.Content, "is durable")

		review, ok := traceEntry(res, "review_tool_call")
		require.True(t, ok)
		assert.Equal(t, tools.HostQueue(w.Host.ID), review.Get("task_queue"), "MCP calls run where the server process lives")
		assert.Equal(t, false, review.Get("idempotent"))
		scheduled, started := activityAttempts(history(t, run))
		assert.Equal(t, 1, scheduled["ExecuteTool"])
		assert.Equal(t, []int32{1}, started["ExecuteTool"])
		assert.Equal(t, 1, auditCount(t, w.Audit(), run.GetID(), audit.EventToolCall))
	})

	t.Run("blocked by the mcp__memory__.* hook, never executed", func(t *testing.T) {
		requireRejected(t, w.queue, mcpCall("mem-delete", "mcp__memory__delete_entities", map[string]any{"entityNames": []any{"fenix"}}, "mcp__memory"),
			fenixerr.TypeToolBlocked, "deleting memories needs a human review")
	})

	t.Run("not visible outside allowed_tool_names", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, mcpCall("echo-hidden", "mcp__everything__echo", map[string]any{"message": "x"}, "mcp__memory"))
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, fenixerr.TypeToolNotVisible, res.Error.ErrorType)
	})

	t.Run("schema of the server's tool enforced at review", func(t *testing.T) {
		requireRejected(t, w.queue, mcpCall("sum-bad", "mcp__everything__get-sum", map[string]any{"a": "two", "b": 3}, "mcp__everything"),
			fenixerr.TypeValidation, "at /a")
	})

	t.Run("approved with decide_permission", func(t *testing.T) {
		id := "it-mcp-ask-" + t.Name()
		run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, mcpCall("sum", "mcp__everything__get-sum", map[string]any{"a": 2, "b": 3}, "mcp__everything"))
		require.Eventually(t, func() bool {
			v, err := server.Client().QueryWorkflow(context.Background(), id, "", workflows.QueryPendingPermissions)
			var pending []workflows.PendingPermission
			return err == nil && v.Get(&pending) == nil && len(pending) == 1
		}, 30*time.Second, 50*time.Millisecond)
		handle, err := server.Client().UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: workflows.UpdateDecidePermission, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{workflows.PermissionDecision{CallID: "call-sum", Decision: "allow", Reason: "reviewed"}},
		})
		require.NoError(t, err)
		require.NoError(t, handle.Get(context.Background(), nil))
		var res contract.Result
		require.NoError(t, run.Get(context.Background(), &res))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Equal(t, "The sum of 2 and 3 is 5.", res.Output.Content)
	})

	t.Run("canceled mid-call: progress reported, notifications/cancelled sent", func(t *testing.T) {
		before := mcpStatus(w, "everything").CancelsSent
		id := "it-mcp-cancel-" + t.Name()
		run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, mcpCall("long", "mcp__everything__trigger-long-running-operation",
			map[string]any{"duration": 120, "steps": 240}, "mcp__everything"))
		var progress []string
		require.Eventually(t, func() bool {
			v, err := server.Client().QueryWorkflow(context.Background(), id, "", workflows.QueryReports)
			var reports []contract.Report
			if err != nil || v.Get(&reports) != nil {
				return false
			}
			progress = progress[:0]
			for _, r := range reports {
				if r.OutputChunk != nil && r.OutputChunk.Stream == "progress" {
					progress = append(progress, r.OutputChunk.Text)
				}
			}
			return len(progress) > 0
		}, 30*time.Second, 100*time.Millisecond, "no progress report reached the workflow")
		assert.True(t, strings.HasPrefix(progress[0], "progress 1/240"), "%q", progress)

		sent := time.Now()
		require.NoError(t, server.Client().SignalWorkflow(context.Background(), id, "", workflows.SignalCancel, workflows.CancelRequest{Reason: "operator stop"}))
		var res contract.Result
		require.NoError(t, run.Get(context.Background(), &res))
		elapsed := time.Since(sent)
		assert.Equal(t, contract.StatusCanceled, res.Status)
		assert.Equal(t, "execute_tool", res.Error.Stage)
		assert.Less(t, elapsed, 10*time.Second)
		var canceled bool
		for _, e := range history(t, run) {
			canceled = canceled || e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED
		}
		assert.True(t, canceled, "the in-flight MCP call was canceled, not abandoned")
		assert.Equal(t, before+1, mcpStatus(w, "everything").CancelsSent, "notifications/cancelled written to the server")
		t.Logf("cancel signal to canceled result: %s", elapsed)
	})
}

// A scripted model calls an MCP tool inside AgentTurn; the call goes
// through review and execution like a built-in one.
func TestMCPToolInsideAgentTurn(t *testing.T) {
	scripts := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(scripts, []byte(`{"scripts": {"mcp": {"turns": [
		{"tool_calls": [{"tool_name": "mcp__everything__echo", "arguments": {"message": "hello from the model"}}]},
		{"content": "The server echoed my greeting."}
	]}}}`), 0o644))
	w, _ := startMCPWorker(t, withScripts(t, scripts))
	req := agentTurnRequest(t, "mcp", map[string]any{
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator", "mcp__everything"}},
	})
	res := runTurn(t, w.queue, req)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "The server echoed my greeting.", res.Output.Content)
	var sawEcho bool
	for _, e := range res.Trace {
		if e.Hook == "project_tool_result" && e.Get("tool_name") == "mcp__everything__echo" {
			sawEcho = e.Get("content") == "Echo: hello from the model"
		}
	}
	assert.True(t, sawEcho, "the MCP tool's projection is in the turn's trace")
}

// mcp_tool hook handlers (Claude Code's fifth handler type) call the
// configured servers: a PreToolUse policy kept as files and read through
// server-filesystem denies by tool name, and SessionStart's echo through
// server-everything becomes context. A tool with no policy file makes the
// hook fail (isError), which is non-blocking.
func TestMCPToolHookHandlers(t *testing.T) {
	servers := mcpservers.Require(t)
	project := t.TempDir()
	policies := filepath.Join(project, "policies")
	require.NoError(t, os.MkdirAll(policies, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(policies, "mcp__everything__get-env.json"),
		[]byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"the environment is private"}}`), 0o644))
	cfg := map[string]any{"mcpServers": map[string]any{
		"policy":     map[string]any{"command": "node", "args": []string{servers.Entry("server-filesystem"), policies}},
		"everything": map[string]any{"command": "node", "args": []string{servers.Entry("server-everything"), "stdio"}},
	}}
	raw, _ := json.Marshal(cfg)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), raw, 0o644))
	settings := map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{
			"type": "mcp_tool", "server": "everything", "tool": "echo", "input": map[string]any{"message": "session ${session_id} starts"}}}}},
		"PreToolUse": []any{map[string]any{"matcher": "mcp__everything__.*", "hooks": []any{map[string]any{
			"type": "mcp_tool", "server": "policy", "tool": "read_text_file",
			"input": map[string]any{"path": policies + "/${tool_name}.json"}}}}},
		// A DLP hook as one is written for Claude Code: it hands back the
		// MCP tool's content blocks with the code masked.
		"PostToolUse": []any{map[string]any{"matcher": "mcp__everything__echo", "hooks": []any{map[string]any{"type": "command",
			"command": `grep -q 4242 && echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedMCPToolOutput":[{"type":"text","text":"Echo: the code is [MASKED]"}]}}' || true`}}}},
	}}
	raw, _ = json.Marshal(settings)
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), raw, 0o644))
	w := startWorker(t, inProject(project))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))

	res, _ := requireRejected(t, w.queue, mcpCall("env", "mcp__everything__get-env", map[string]any{}, "mcp__everything"),
		fenixerr.TypeToolBlocked, "the environment is private")
	start, ok := traceEntry(res, "session_start")
	require.True(t, ok)
	assert.Equal(t, "Echo: session conv-it starts", start.Get("additional_context"), "${session_id} is the session (the conversation)")

	res, _ = runAssignment(t, w.queue, mcpCall("echo", "mcp__everything__echo", map[string]any{"message": "allowed"}, "mcp__everything"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Echo: allowed", res.Output.Content)

	// The model reads the masked blocks' text, not their JSON.
	res, _ = runAssignment(t, w.queue, mcpCall("echo-code", "mcp__everything__echo", map[string]any{"message": "the code is 4242"}, "mcp__everything"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Echo: the code is [MASKED]", res.Output.Content)
}

// policy-diff reviews recorded MCP calls against the servers' own tools
// (started from -mcp-config) and replays the candidate's mcp__ matchers:
// an echo newly blocked, a memory read unchanged (not "unsupported").
func TestPolicyDiffReplaysMCPCalls(t *testing.T) {
	w, project := startMCPWorker(t)
	conversation := "conv-mcp-diff-" + fmt.Sprint(time.Now().UnixNano())
	for _, c := range []struct{ id, tool string }{{"diff-read", "mcp__memory__read_graph"}, {"diff-echo", "mcp__everything__echo"}} {
		args := map[string]any{}
		if c.tool == "mcp__everything__echo" {
			args["message"] = "x"
		}
		a := mcpCall(c.id, c.tool, args, "mcp__memory", "mcp__everything")
		a["conversation_id"] = conversation
		res, _ := runAssignment(t, w.queue, a)
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	}
	candidate := filepath.Join(t.TempDir(), "candidate.json")
	require.NoError(t, os.WriteFile(candidate, []byte(`{"hooks": {"PreToolUse": [{"matcher": "mcp__everything__.*",
		"hooks": [{"type": "command", "command": "echo 'the everything server is retired' >&2; exit 2"}]}]}}`), 0o644))
	narrow := fmt.Sprintf("ConversationId = '%s'", conversation)
	require.Eventually(t, func() bool {
		resp, err := server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: narrow + " AND ExecutionStatus != 'Running'"})
		return err == nil && len(resp.GetExecutions()) == 2
	}, 30*time.Second, 200*time.Millisecond)

	out, code := runBinary(t, "starter", nil, "policy-diff", "-hooks-file", candidate,
		"-mcp-config", filepath.Join(project, ".mcp.json"), "-query", narrow, "-json")
	require.Equal(t, 1, code, out)
	var report struct {
		Changes []struct {
			Change string `json:"change"`
			Tool   string `json:"tool_name"`
		} `json:"changes"`
		Summary struct {
			Replayed  int `json:"replayed"`
			Unchanged int `json:"unchanged"`
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &report), out)
	require.Len(t, report.Changes, 1, out)
	assert.Equal(t, "newly_blocked", report.Changes[0].Change, out)
	assert.Contains(t, out, "mcp__everything__echo")
	assert.Equal(t, 2, report.Summary.Replayed, out)
	assert.Equal(t, 1, report.Summary.Unchanged, "the memory read is reviewed against the server's tools, not found unsupported: %s", out)

	// A candidate whose settings deny the server by its command: the
	// server does not start, so its call is refused at review.
	echoCommand, err := json.Marshal([]string{"node", mcpservers.Require(t).Entry("server-everything"), "stdio"})
	require.NoError(t, err)
	denying := filepath.Join(t.TempDir(), "denying.json")
	require.NoError(t, os.WriteFile(denying, []byte(`{"deniedMcpServers": [{"serverCommand": `+string(echoCommand)+`}]}`), 0o644))
	out, code = runBinary(t, "starter", nil, "policy-diff", "-hooks-file", denying,
		"-mcp-config", filepath.Join(project, ".mcp.json"), "-query", narrow, "-json")
	require.Equal(t, 1, code, out)
	report.Changes = nil
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &report), out)
	require.Len(t, report.Changes, 1, out)
	assert.Equal(t, "newly_blocked", report.Changes[0].Change, out)
	assert.Equal(t, "mcp__everything__echo", report.Changes[0].Tool, out)
	assert.Equal(t, 1, report.Summary.Unchanged, out)
}

// Claude Code answers a server's roots/list with the directory it works
// in, and the official filesystem server takes its allowed directories
// from a client's roots: a project's .mcp.json that names no directory
// works under Claude Code in the project. Fenix offered no roots, so the
// server had nothing to serve ("Server cannot operate: No allowed
// directories available"); it now gives the worker's workspace, and the
// server reads there and nowhere else.
func TestFilesystemServerWorksInTheWorkspaceItsRootsName(t *testing.T) {
	servers := mcpservers.Require(t)
	project := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("ship on friday\n"), 0o644))
	outside := filepath.Join(t.TempDir(), "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("not yours\n"), 0o644))
	raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"files": map[string]any{"command": "node", "args": []string{servers.Entry("server-filesystem")}},
	}})
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), raw, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{}`), 0o644))
	w := startWorker(t, inProject(project))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))

	res, _ := runAssignment(t, w.queue, mcpCall("roots-dirs", "mcp__files__list_allowed_directories", map[string]any{}, "mcp__files"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	real, err := filepath.EvalSymlinks(project)
	require.NoError(t, err)
	assert.Contains(t, res.Output.Content, real)
	res, _ = runAssignment(t, w.queue, mcpCall("roots-read", "mcp__files__read_text_file", map[string]any{"path": filepath.Join(project, "notes.txt")}, "mcp__files"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "ship on friday")
	res, _ = runAssignment(t, w.queue, mcpCall("roots-outside", "mcp__files__read_text_file", map[string]any{"path": outside}, "mcp__files"))
	assert.NotContains(t, fmt.Sprintf("%+v %+v", res.Output, res.Error), "not yours")
}
