package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/worker"
)

// envFileProject is a project whose SessionStart hook sets up the
// session's shell the way Claude Code's hooks reference shows: it appends
// exports to $CLAUDE_ENV_FILE (a variable, and the project's bin/ on
// PATH), after `delay` of setup work, and logs each time it runs.
func envFileProject(t *testing.T, delay string) string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the project's hook is a bash script")
	}
	project := filepath.Join(t.TempDir(), "env-project")
	for path, content := range map[string]string{
		".claude/settings.json": `{
  "hooks": {
    "SessionStart": [
      {"matcher": "startup|resume", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/setup-env.sh"}]}
    ]
  }
}
`,
		".claude/hooks/setup-env.sh": `#!/bin/bash
# Set up the project's toolchain for every Bash command of the session.
sleep ` + delay + `
if [ -n "$CLAUDE_ENV_FILE" ]; then
  echo 'export APP_ENV=staging' >> "$CLAUDE_ENV_FILE"
  echo "export PATH=\"\$PATH:$CLAUDE_PROJECT_DIR/bin\"" >> "$CLAUDE_ENV_FILE"
fi
echo "$(cat | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["session_id"], e["source"])')" >> "$CLAUDE_PROJECT_DIR/.claude/starts.log"
`,
		"bin/projtool": "#!/bin/sh\necho \"projtool ran with APP_ENV=$APP_ENV\"\n",
	} {
		full := filepath.Join(project, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o755))
	}
	return project
}

func sessionStarts(t *testing.T, project string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(project, ".claude", "starts.log"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(raw)), "\n")
}

// runCommandInConversation runs one exec_command call of a conversation
// and returns its result.
func runCommandInConversation(t *testing.T, queue, project, workID, conversation, command string) contract.Result {
	t.Helper()
	a := assignment(workID, map[string]any{"call_id": "call-" + workID, "tool_name": "exec_command", "arguments": map[string]any{"command_line": command}},
		"exec_command")
	a["conversation_id"], a["workspace_root"] = conversation, project
	res, _ := runAssignment(t, queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	return res
}

// What a project's SessionStart hook writes to $CLAUDE_ENV_FILE reaches
// every later command of the conversation, as in Claude Code: the call
// that started the session, the next one (answered from the worker's
// cache), one after the cache went stale (answered by the conversation's
// session workflow), while the hook ran once. Another conversation gets
// its own session and its own run of the hook.
func TestClaudeEnvFileReachesTheConversationsCommands(t *testing.T) {
	project := envFileProject(t, "0")
	// A 30 s idle timeout keeps the cache fresh for 3 s: room for the
	// next call on a loaded CI machine (1 s was not always), short enough
	// to wait out.
	w := sessionWorker(t, project, func(c *worker.Config) { c.SessionIdleTimeout = 30 * time.Second })

	res := runCommandInConversation(t, w.queue, project, "e1", "it-env-a", "projtool")
	assert.Contains(t, res.Output.Content, "projtool ran with APP_ENV=staging", "the first call: PATH and APP_ENV from the hook")
	exec, ok := traceEntry(res, "execute_tool")
	require.True(t, ok)
	assert.NotNil(t, exec.Get("session_env_bytes"), "the trace says the command ran the session environment: %v", exec.Fields)

	res = runCommandInConversation(t, w.queue, project, "e2", "it-env-a", `echo "APP_ENV=$APP_ENV"`)
	assert.Contains(t, res.Output.Content, "APP_ENV=staging")
	start, _ := traceEntry(res, "session_start")
	assert.Equal(t, true, start.Get("session_cached"), "%v", start.Fields)

	time.Sleep(3500 * time.Millisecond)
	res = runCommandInConversation(t, w.queue, project, "e3", "it-env-a", "projtool")
	assert.Contains(t, res.Output.Content, "projtool ran with APP_ENV=staging", "after the cache went stale, from the session workflow")
	start, _ = traceEntry(res, "session_start")
	assert.Equal(t, false, start.Get("session_cached"), "%v", start.Fields)

	res = runCommandInConversation(t, w.queue, project, "f1", "it-env-b", `echo "APP_ENV=$APP_ENV"`)
	assert.Contains(t, res.Output.Content, "APP_ENV=staging")
	assert.Equal(t, []string{"it-env-a startup", "it-env-b startup"}, sessionStarts(t, project))

	// The operator can see what the conversation's commands run first.
	out, code := runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "session", "show", "-conversation", "it-env-a")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Session of conversation it-env-a: running")
	assert.Contains(t, out, "SessionStart sources: startup")
	assert.Contains(t, out, "  export APP_ENV=staging")
	out, code = runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "session", "show", "-conversation", "it-env-none")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `conversation "it-env-none" has no session`)
}

// Two calls of a new conversation at once: one starts the session and
// runs the hook (which takes 2 s), the other waits for the hook's
// environment instead of running its command without it, as Claude Code
// runs no command before SessionStart ends.
func TestClaudeEnvFileConcurrentCallsWaitForTheStartingRun(t *testing.T) {
	project := envFileProject(t, "2")
	w := sessionWorker(t, project)

	var wg sync.WaitGroup
	results := make([]contract.Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runCommandInConversation(t, w.queue, project, fmt.Sprintf("c%d", i), "it-env-concurrent", `echo "APP_ENV=$APP_ENV"`)
		}()
	}
	wg.Wait()
	for i, res := range results {
		assert.Contains(t, res.Output.Content, "APP_ENV=staging", "call %d", i)
	}
	assert.Equal(t, []string{"it-env-concurrent startup"}, sessionStarts(t, project))
}

// An agent turn's commands, and its subagent's, run in the session
// environment: the subagent, which has no session of its own, reads its
// conversation's. The scripted model fails the turn if a command's
// output lacks the hook's APP_ENV.
func TestClaudeEnvFileReachesAgentTurnsAndSubagents(t *testing.T) {
	project := envFileProject(t, "0")
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"scripts": {
	  "lead": {"turns": [
	    {"tool_calls": [{"tool_name": "exec_command", "arguments": {"command_line": "echo \"lead APP_ENV=$APP_ENV\""}}]},
	    {"expect": {"contains": ["lead APP_ENV=staging"]},
	     "tool_calls": [{"tool_name": "spawn_subagent", "arguments": {"task": "Check the environment.", "profile": "checker", "allowed_tool_names": ["exec_command"]}}]},
	    {"expect": {"contains": ["checker saw staging"]}, "content": "Both saw staging."}
	  ]},
	  "checker": {"turns": [
	    {"tool_calls": [{"tool_name": "exec_command", "arguments": {"command_line": "projtool"}}]},
	    {"expect": {"contains": ["projtool ran with APP_ENV=staging"]}, "content": "checker saw staging"}
	  ]}
	}}`), 0o644))
	w := sessionWorker(t, project, withScripts(t, script))
	res := runTurn(t, w.queue, agentTurnRequest(t, "lead", map[string]any{
		"conversation_id":  "it-env-turn",
		"workspace_root":   project,
		"context_messages": []map[string]any{{"role": "user", "content": "Check the environment, with a helper."}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": []string{"exec_command", "spawn_subagent"}},
		"max_steps":        5,
	}))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "Both saw staging.", res.Output.Content)
	assert.Equal(t, []string{"it-env-turn startup"}, sessionStarts(t, project))
}
