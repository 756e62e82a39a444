package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/providers"
	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
)

// judgeRequest is what the model endpoint received for one prompt hook.
type judgeRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// TestClaudeCodePromptHooksAskTheWorkersModel: a project's prompt hook
// ("type": "prompt", as Claude Code users write them) is evaluated by the
// worker's model over its OpenAI-compatible API; its {"ok": false} ends
// the call before it runs, and {"ok": true} lets it through.
// judgeEndpoint serves an OpenAI-compatible chat completions endpoint
// whose answer to a prompt is decide's, and returns a router with it as
// the default model (judge-small), with scripted models served by
// scripted, and the requests it received.
func judgeEndpoint(t *testing.T, scripted llm.Provider, decide func(prompt string) string) (*llm.Router, func() []judgeRequest) {
	t.Helper()
	return judgeWithTools(t, scripted, func(req judgeRequest) map[string]any {
		return map[string]any{"role": "assistant", "content": decide(req.Messages[len(req.Messages)-1].Content)}
	})
}

// judgeWithTools is judgeEndpoint whose answer is a whole assistant
// message (content or tool_calls), chosen from the whole request.
func judgeWithTools(t *testing.T, scripted llm.Provider, answer func(judgeRequest) map[string]any) (*llm.Router, func() []judgeRequest) {
	t.Helper()
	var mu sync.Mutex
	var asked []judgeRequest
	url := judgeServer(t, func(req judgeRequest) map[string]any {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return answer(req)
	})
	router := judgeRouter(t, url)
	router.Scripted = scripted
	return router, func() []judgeRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]judgeRequest(nil), asked...)
	}
}

// settingsProject is a project directory whose .claude/settings.json
// holds settings, as a user's project would.
func settingsProject(t *testing.T, settings string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(settings), 0o644))
	return dir
}

// judgeRouter is the worker's model router with the judge at url as its
// OpenAI-compatible provider and judge-small as the default model, as
// FENIX_OPENAI_BASE_URL and FENIX_MODEL would make it.
func judgeRouter(t *testing.T, url string) *llm.Router {
	t.Helper()
	router, err := providers.FromEnv(func(k string) string { return judgeEnv(url)[k] })
	require.NoError(t, err)
	return router
}

func judgeEnv(url string) map[string]string {
	return map[string]string{"FENIX_OPENAI_BASE_URL": url + "/v1", "FENIX_MODEL": "judge-small"}
}

// judgeServer serves OpenAI-compatible chat completions answered by
// answer, and returns its base URL.
func judgeServer(t *testing.T, answer func(judgeRequest) map[string]any) string {
	t.Helper()
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req judgeRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": answer(req)}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(endpoint.Close)
	return endpoint.URL
}

// TestClaudeCodePromptHooksAskTheWorkersModel: a project's prompt hook
// ("type": "prompt", as Claude Code users write them) is evaluated by the
// worker's model over its OpenAI-compatible API; its {"ok": false} ends
// the call before it runs, and {"ok": true} lets it through.
func TestClaudeCodePromptHooksAskTheWorkersModel(t *testing.T) {
	router, asked := judgeEndpoint(t, nil, func(prompt string) string {
		if strings.Contains(prompt, "rm -rf") {
			return `{"ok": false, "reason": "the judge refuses recursive deletes"}`
		}
		return `{"ok": true}`
	})

	project := settingsProject(t, `{
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "model": "haiku",
      "prompt": "Review this shell command. Refuse anything that deletes files recursively. $ARGUMENTS"}]}]
  }
}`)
	require.NoError(t, os.WriteFile(filepath.Join(project, "README.md"), []byte("# project\n"), 0o644))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
		c.Model = router
	})
	run := func(name, command string) contract.Result {
		a := assignment("prompt-hook-"+name, map[string]any{"call_id": "call-" + name, "tool_name": "exec_command", "arguments": map[string]any{"command_line": command}}, "exec_command")
		a["workspace_root"] = project
		res, r := runAssignment(t, w.queue, a)
		if res.Status != contract.StatusCompleted {
			scheduled, _ := activityAttempts(history(t, r))
			assert.Zero(t, scheduled["ExecuteTool"], "a refused call never executes")
		}
		return res
	}

	res := run("rm", "rm -rf build")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "the judge refuses recursive deletes")
	assert.Equal(t, fenixerr.TypeHookHalt, res.Error.ErrorType, "ok: false on PreToolUse ends the turn, as in Claude Code")

	res = run("ls", "ls")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "README.md")

	requests := asked()
	require.Len(t, requests, 2, "one model call per PreToolUse")
	assert.Equal(t, "judge-small", requests[0].Model, "Claude's alias haiku goes to the worker's default model")
	assert.Equal(t, llm.HookPromptSystem, requests[0].Messages[0].Content)
	assert.Contains(t, requests[0].Messages[1].Content, `"tool_name":"Bash"`)
	assert.Contains(t, requests[0].Messages[1].Content, `"command":"rm -rf build"`)
}

// TestClaudeCodePromptStopHookKeepsTheTurnGoing: a prompt Stop hook that
// finds the work unfinished sends its reason back to the agent, whose turn
// takes another step; once satisfied, the turn ends.
func TestClaudeCodePromptStopHookKeepsTheTurnGoing(t *testing.T) {
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"scripts": {"claude": {"turns": [
	  {"content": "Done."},
	  {"expect": {"contains": ["Say which tests you ran."]}, "content": "Done. Tests ran: go test ./..."}
	]}}}`), 0o644))
	turns, err := scripted.Load(script)
	require.NoError(t, err)
	router, asked := judgeEndpoint(t, turns, func(prompt string) string {
		if strings.Contains(prompt, "Tests ran") {
			return `{"ok": true}`
		}
		return `{"ok": false, "reason": "Say which tests you ran."}`
	})
	project := settingsProject(t, `{
  "hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "Did the assistant say which tests it ran? $ARGUMENTS"}]}]}
}`)
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
		c.Model = router
	})
	res := runTurn(t, w.queue, agentTurnRequest(t, "claude", map[string]any{
		"workspace_root":   project,
		"context_messages": []map[string]any{{"role": "user", "content": "Fix the build."}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}},
		"max_steps":        4,
	}))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Done. Tests ran: go test ./...", res.Output.Content)
	require.Len(t, asked(), 2, "the Stop hook asked once per stop")
}

// TestClaudeCodeAgentHookReadsTheWorkspaceBeforeItDecides: an "agent"
// handler's model reads the workspace with read-only tools, then decides:
// a push waits for a test report that says nothing failed.
func TestClaudeCodeAgentHookReadsTheWorkspaceBeforeItDecides(t *testing.T) {
	router, asked := judgeWithTools(t, nil, func(req judgeRequest) map[string]any {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" {
			return map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "workspace_read", "arguments": `{"path":"TEST_REPORT"}`}}}}
		}
		if strings.Contains(last.Content, " 0 failed") {
			return map[string]any{"role": "assistant", "content": `{"ok": true}`}
		}
		return map[string]any{"role": "assistant", "content": `{"ok": false, "reason": "TEST_REPORT shows failing tests: fix them before pushing"}`}
	})
	project := settingsProject(t, `{
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "agent",
    "prompt": "Before anything is pushed, read TEST_REPORT and refuse if a test failed. $ARGUMENTS"}]}]}
}`)
	require.NoError(t, os.WriteFile(filepath.Join(project, "TEST_REPORT"), []byte("40 passed, 2 failed\n"), 0o644))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
		c.Model = router
	})
	push := func(name string) contract.Result {
		a := assignment("agent-hook-"+name, map[string]any{"call_id": "call-" + name, "tool_name": "exec_command", "arguments": map[string]any{"command_line": "echo pushed"}}, "exec_command")
		a["workspace_root"] = project
		res, _ := runAssignment(t, w.queue, a)
		return res
	}
	res := push("red")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeHookHalt, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "TEST_REPORT shows failing tests")

	require.NoError(t, os.WriteFile(filepath.Join(project, "TEST_REPORT"), []byte("42 passed, 0 failed\n"), 0o644))
	res = push("green")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "pushed")

	requests := asked()
	require.Len(t, requests, 4, "two model turns per hook: read, then decide")
	assert.Equal(t, llm.HookAgentSystem, requests[0].Messages[0].Content)
	var offered []string
	for _, tool := range requests[0].Tools {
		offered = append(offered, tool.Function.Name)
	}
	assert.ElementsMatch(t, []string{"workspace_read", "workspace_list", "workspace_search"}, offered, "read-only tools only")
}

// TestPolicyDiffReasksPromptHooks: a what-if of a candidate policy with a
// prompt hook asks the model, as the worker would, so a stricter prompt
// shows the recorded allow becoming a block.
func TestPolicyDiffReasksPromptHooks(t *testing.T) {
	endpoint := judgeServer(t, func(req judgeRequest) map[string]any {
		if strings.HasPrefix(req.Messages[len(req.Messages)-1].Content, "Stricter judge") {
			return map[string]any{"role": "assistant", "content": `{"ok": false, "reason": "the stricter judge refuses echo"}`}
		}
		return map[string]any{"role": "assistant", "content": `{"ok": true}`}
	})
	project := func(prompt string) string {
		return settingsProject(t, `{
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "`+prompt+` $ARGUMENTS"}]}]}
}`)
	}
	recorded, candidate := project("Judge this command."), project("Stricter judge: judge this command.")
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{recorded}
		c.DefaultWorkspaceRoot = recorded
		c.Model = judgeRouter(t, endpoint)
	})
	conversation := fmt.Sprintf("conv-policy-diff-prompt-%d", os.Getpid())
	a := assignment("policy-diff-prompt", map[string]any{"call_id": "call-echo", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "echo hi"}}, "exec_command")
	a["workspace_root"], a["conversation_id"] = recorded, conversation
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	narrow := fmt.Sprintf("ConversationId = '%s'", conversation)
	require.Eventually(t, func() bool {
		resp, err := server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: narrow + " AND ExecutionStatus != 'Running'"})
		return err == nil && len(resp.GetExecutions()) == 1
	}, 30*time.Second, 200*time.Millisecond)

	env := []string{"FENIX_WORKSPACE_ROOT=" + recorded}
	for k, v := range judgeEnv(endpoint) {
		env = append(env, k+"="+v)
	}
	out, code := runBinary(t, "starter", env, "policy-diff", "-hooks-file", candidate, "-query", narrow, "-wide")
	require.Equal(t, 1, code, "the stricter prompt changes the call's verdict: %s", out)
	assert.Contains(t, out, "allow → block")
	assert.Contains(t, out, "the stricter judge refuses echo")

	out, _ = runBinary(t, "starter", []string{"FENIX_WORKSPACE_ROOT=" + recorded}, "policy-diff", "-hooks-file", candidate, "-query", narrow, "-wide")
	assert.Contains(t, out, "prompt handler skipped: this worker has no model", "without a model the what-if says what it leaves out")
}
