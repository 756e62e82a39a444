package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// claudeProject copies the Claude Code fixtures (our own python3 and bash
// scripts, written the way users write theirs) to a temporary checkout: a
// project with .claude/settings.json, a plugin, and a Fenix-native file.
func claudeProject(t *testing.T) (project, plugin, fenixFile string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; the Claude Code guard fixtures are python3 and bash scripts")
	}
	root := t.TempDir()
	for _, name := range []string{"claude-project", "plugin", "fenix"} {
		require.NoError(t, os.CopyFS(filepath.Join(root, name), os.DirFS(filepath.Join(repoRoot, "hooks", "claudecode", "testdata", name))))
	}
	project = filepath.Join(root, "claude-project")
	require.NoError(t, os.WriteFile(filepath.Join(project, "README.md"), []byte("# demo\n"), 0o644))
	return project, filepath.Join(root, "plugin"), filepath.Join(root, "fenix", "hooks.json")
}

func traceEntry(res contract.Result, hook string) (contract.TraceEntry, bool) {
	for _, e := range res.Trace {
		if e.Hook == hook {
			return e, true
		}
	}
	return contract.TraceEntry{}, false
}

// A project's unchanged .claude/settings.json, a plugin's hooks.json and a
// Fenix-native hooks file govern ExecuteAssignment on the dev server: the
// guards block exactly what they would block in Claude Code, harmless
// calls go through, and the worker starts although the settings file is
// full of events and keys Fenix does not use.
func TestClaudeCodeSettingsGovernExecuteAssignment(t *testing.T) {
	project, plugin, fenixFile := claudeProject(t)
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project, plugin, fenixFile}
		c.DefaultWorkspaceRoot = project
	})
	tools := []string{"exec_command", "process_exec", "workspace_read", "workspace_write", "workspace_edit", "workspace_list"}
	run := func(t *testing.T, name, tool string, args map[string]any) contract.Result {
		t.Helper()
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": args}, tools...)
		a["workspace_root"] = project
		res, r := runAssignment(t, w.queue, a)
		if res.Status == contract.StatusFailed && res.Error != nil && res.Error.ErrorType == fenixerr.TypeToolBlocked {
			scheduled, _ := activityAttempts(history(t, r))
			assert.Zero(t, scheduled["ExecuteTool"], "a blocked call never executes")
		}
		return res
	}

	blocked := []struct {
		name, tool string
		args       map[string]any
		reason     string
	}{
		{"rm-rf", "exec_command", map[string]any{"command_line": "rm -rf /"}, "recursive forced delete"},
		{"rm-fr-chain", "exec_command", map[string]any{"command_line": "cd /tmp && rm -fr ./build"}, "recursive forced delete"},
		{"force-push", "exec_command", map[string]any{"command_line": "git push -f origin main"}, "force push"},
		{"background-rm", "process_exec", map[string]any{"command_line": "rm -rf /srv"}, "recursive forced delete"},
		{"sudo", "exec_command", map[string]any{"command_line": "sudo rm x"}, "no-sudo plugin"},
		{"shutdown", "exec_command", map[string]any{"command_line": "shutdown -h now"}, "would stop the host"},
		{"env-write", "workspace_write", map[string]any{"path": ".env", "content": "TOKEN=1"}, ".env holds secrets"},
		{"env-edit", "workspace_edit", map[string]any{"path": "config/.env.local", "old_string": "a", "new_string": "b"}, "holds secrets"},
		{"git-internals", "workspace_write", map[string]any{"path": ".git/hooks/pre-commit", "content": "evil"}, "managed by git"},
	}
	for _, tc := range blocked {
		t.Run("blocks "+tc.name, func(t *testing.T) {
			res := run(t, tc.name, tc.tool, tc.args)
			require.Equal(t, contract.StatusFailed, res.Status)
			assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
			assert.Contains(t, res.Error.LastErrorSummary, tc.reason)
		})
	}

	t.Run("lets ls through", func(t *testing.T) {
		res := run(t, "ls", "exec_command", map[string]any{"command_line": "ls -a"})
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Contains(t, res.Output.Content, "README.md")
	})
	t.Run("lets a source write through and adds the formatter reminder", func(t *testing.T) {
		res := run(t, "src-write", "workspace_write", map[string]any{"path": "src/app.py", "content": "print('hi')\n"})
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		post, ok := traceEntry(res, "post_tool_use")
		require.True(t, ok)
		assert.Equal(t, "app.py was written; run the formatter before committing.", post.Get("additional_context"))
	})
	t.Run("reads .env: only writes are guarded, as in Claude Code", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(project, ".env"), []byte("TOKEN=abc\n"), 0o600))
		res := run(t, "env-read", "workspace_read", map[string]any{"path": ".env"})
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	})
	t.Run("rewrites date to UTC", func(t *testing.T) {
		res := run(t, "date", "exec_command", map[string]any{"command_line": "date"})
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Contains(t, res.Output.Content, "UTC")
		pre, _ := traceEntry(res, "pre_tool_use")
		assert.Equal(t, true, pre.Get("args_mutated"))
		assert.Equal(t, "Dates in this project are UTC.", pre.Get("additional_context"))
	})
	t.Run("protects the guard scripts from the agent", func(t *testing.T) {
		before, err := os.ReadFile(filepath.Join(project, ".claude", "hooks", "bash-guard.py"))
		require.NoError(t, err)
		res := run(t, "disable-guard", "workspace_write", map[string]any{"path": ".claude/hooks/bash-guard.py", "content": "import sys; sys.exit(0)\n"})
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, fenixerr.TypeWorkspaceEscape, res.Error.ErrorType)
		assert.Equal(t, "protected_path", res.Error.Code)
		after, _ := os.ReadFile(filepath.Join(project, ".claude", "hooks", "bash-guard.py"))
		assert.Equal(t, string(before), string(after))
	})

	// The scripts saw Claude Code's stdin: Bash tool_response shapes in the
	// command log, the common fields and is_interrupt in the events log.
	raw, err := os.ReadFile(filepath.Join(project, ".claude", "logs", "commands.jsonl"))
	require.NoError(t, err)
	var sawUTC bool
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry))
		assert.Equal(t, false, entry["interrupted"], "%s", line)
		if entry["command"] == "date -u" {
			sawUTC = strings.Contains(fmt.Sprint(entry["stdout"]), "UTC")
		}
	}
	assert.True(t, sawUTC, "the command log holds the rewritten date -u and its stdout: %s", raw)

	raw, err = os.ReadFile(filepath.Join(project, ".claude", "logs", "events.jsonl"))
	require.NoError(t, err)
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		name, _ := ev["hook_event_name"].(string)
		counts[name]++
		assert.Equal(t, "default", ev["permission_mode"], line)
		path, _ := ev["transcript_path"].(string)
		require.NotEmpty(t, path, line)
		_, statErr := os.Stat(path)
		assert.NoError(t, statErr, "transcript_path %s is a real file", path)
		assert.True(t, strings.HasPrefix(path, w.dataDir), "transcript_path %s is under the worker's data directory", path)
		if name == "PostToolUseFailure" {
			assert.Equal(t, false, ev["is_interrupt"], line)
			assert.NotEmpty(t, ev["error"], line)
		}
	}
	// As in Claude Code, PostToolUseFailure is for a tool that ran and
	// failed (the protected-path write), not for a call a hook blocked.
	assert.Equal(t, 1, counts["PostToolUseFailure"], "only the call that ran and failed: %v", counts)
	// A session is the conversation (fenix-shape 6): every call here is
	// in conv-it, whose session has not ended, so no SessionEnd yet.
	assert.Zero(t, counts["SessionEnd"], "the conversation's session goes on: %v", counts)
}

// The SessionStart hook's plain stdout is context for the model, recorded
// in the trace.
func TestClaudeCodeSessionStartContextInTrace(t *testing.T) {
	project, _, _ := claudeProject(t)
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project // FENIX_WORKSPACE_BASES defaults to it
	})
	a := assignment("ctx", map[string]any{"call_id": "c", "tool_name": "calculator", "arguments": map[string]any{"expression": "1+1"}})
	a["workspace_root"] = project
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	start, ok := traceEntry(res, "session_start")
	require.True(t, ok)
	assert.Equal(t, "Project demo; the default branch is main; tests run with make test.", start.Get("additional_context"))
}

// An AgentTurn on the dev server governed by the project's unchanged
// .claude/settings.json: SessionStart's plain stdout and UserPromptSubmit's
// additionalContext reach the model's first call, and the Stop hook (which
// reads transcript_path) sends the first answer back once; the scripted
// model fails the turn if it is not sent what the hooks added.
func TestClaudeCodeStopAndPromptHooksGovernAgentTurn(t *testing.T) {
	project, _, _ := claudeProject(t)
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"scripts": {"claude": {"turns": [
	  {"expect": {"contains": ["end with the word VERIFIED", "the default branch is main"]}, "content": "2 + 2 is 4."},
	  {"expect": {"contains": ["end it with VERIFIED (transcript has 1 assistant messages)"]}, "content": "2 + 2 is 4. VERIFIED"}
	]}}}`), 0o644))
	w := startWorker(t, withScripts(t, script), func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project // FENIX_WORKSPACE_BASES defaults to it
	})
	res := runTurn(t, w.queue, agentTurnRequest(t, "claude", map[string]any{
		"workspace_root":   project,
		"context_messages": []map[string]any{{"role": "user", "content": "What is 2 + 2?"}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}},
		"max_steps":        4,
	}))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "2 + 2 is 4. VERIFIED", res.Output.Content)
	var stops []contract.TraceEntry
	for _, e := range res.Trace {
		if e.Hook == "stop" {
			stops = append(stops, e)
		}
	}
	require.Len(t, stops, 2)
	assert.Equal(t, true, stops[0].Get("continue"))
	assert.Equal(t, false, stops[1].Get("continue"))
	assert.Equal(t, true, stops[1].Get("stop_hook_active"), "the re-fire carries the loop guard")
	prompt, ok := traceEntry(res, "user_prompt_submit")
	require.True(t, ok)
	assert.Contains(t, prompt.Get("additional_context"), "VERIFIED")

	// A prompt the project's hook refuses ends the turn before any model call.
	res = runTurn(t, w.queue, agentTurnRequest(t, "claude", map[string]any{
		"logical_work_id":  "it-agent-deploy-" + t.Name(),
		"workspace_root":   project,
		"context_messages": []map[string]any{{"role": "user", "content": "Deploy to production now"}},
	}))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypePromptBlocked, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "release pipeline")
	_, called := traceEntry(res, "call_model")
	assert.False(t, called)
}

// A project's StopFailure hook, as a team writes one to page someone when
// the model's API fails, runs when a turn ends on a failed model call,
// with Claude Code's fields; it used to be skipped with a warning.
func TestClaudeCodeStopFailureHookHearsOfAFailedModelCall(t *testing.T) {
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "page.sh"),
		[]byte("#!/bin/sh\ncat > \"$CLAUDE_PROJECT_DIR/paged.json\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"hooks": {"StopFailure": [
	  {"matcher": "authentication_failed|billing_error", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/page.sh"}]}
	]}}`), 0o644))
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"scripts": {"badkey": {"turns": [
	  {"error": {"status": 401, "message": "Incorrect API key provided"}}
	]}}}`), 0o644))
	w := startWorker(t, withScripts(t, script), func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	res := runTurn(t, w.queue, agentTurnRequest(t, "badkey", map[string]any{
		"workspace_root":   project,
		"context_messages": []map[string]any{{"role": "user", "content": "What is 2 + 2?"}},
	}))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeModelProvider, res.Error.ErrorType)
	assert.Equal(t, fenixerr.CodeAuthenticationFailed, res.Error.Code)

	raw, err := os.ReadFile(filepath.Join(project, "paged.json"))
	require.NoError(t, err, "the StopFailure hook ran")
	var in map[string]any
	require.NoError(t, json.Unmarshal(raw, &in))
	assert.Equal(t, "StopFailure", in["hook_event_name"])
	assert.Equal(t, "authentication_failed", in["error"])
	assert.Contains(t, in["error_details"], "Incorrect API key provided")
	assert.Contains(t, in["last_assistant_message"], "API Error: ")
	assert.Equal(t, project, in["cwd"])
}

// A project's PreCompact hook that blocks (exit 2, or decision "block")
// keeps the conversation uncompacted, as Claude Code skips an automatic
// compaction a hook blocks: a team that must keep the whole transcript
// for review says so once. Before, the block was reported as a hook error
// and the compaction ran anyway.
func TestClaudeCodePreCompactHookCanBlockCompaction(t *testing.T) {
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "keep.sh"), []byte(`#!/bin/sh
if grep -q '"trigger":"auto"' && [ -e "$CLAUDE_PROJECT_DIR/keep-transcript" ]; then
  echo "the transcript is kept whole for review" >&2
  exit 2
fi
`), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"hooks": {"PreCompact": [
	  {"matcher": "auto", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/keep.sh"}]}
	]}}`), 0o644))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	round := func(id string) contract.PreparedRound {
		a := assignment(id, nil)
		delete(a, "tool_call")
		a["workspace_root"] = project
		a["context_messages"] = []map[string]any{
			{"role": "user", "content": "first question with many words in it"},
			{"role": "assistant", "content": "first answer with many words in it"},
			{"role": "user", "content": "second question"},
			{"role": "assistant", "content": "second answer"},
		}
		a["budget_hints"] = map[string]any{"advisory_hints": map[string]any{"recommended_compaction_threshold": 10}}
		var res contract.PreparedRound
		require.NoError(t, startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, id, a).Get(context.Background(), &res))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		return res
	}

	res := round("it-precompact-allowed")
	assert.True(t, res.Compacted, "the hook lets compaction run")

	require.NoError(t, os.WriteFile(filepath.Join(project, "keep-transcript"), nil, 0o644))
	res = round("it-precompact-blocked")
	assert.False(t, res.Compacted)
	assert.Len(t, res.Messages, 5, "the whole conversation, after the system prompt")
	compact, ok := traceEntry(contract.Result{Trace: res.Trace}, "compact_context")
	require.True(t, ok)
	assert.Contains(t, compact.Get("blocked_by"), "the transcript is kept whole for review")
	pre, ok := traceEntry(contract.Result{Trace: res.Trace}, "pre_compact")
	require.True(t, ok)
	assert.Empty(t, pre.Get("hook_errors"), "a block is the hook's answer, not its failure")
	assert.Contains(t, pre.Get("blocked"), "the transcript is kept whole for review")
	_, post := traceEntry(contract.Result{Trace: res.Trace}, "post_compact")
	assert.False(t, post)
}
