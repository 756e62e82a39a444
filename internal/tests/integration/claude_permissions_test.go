package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// permissionProject writes a project the way users write theirs: a
// .claude/settings.json with permissions, keys Fenix does not act on, and
// python3 and bash guards that find themselves through $CLAUDE_PROJECT_DIR.
func permissionProject(t *testing.T, permissions string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; the guard scripts are python3 and bash")
	}
	project := t.TempDir()
	files := map[string]string{
		"README.md": "# demo\n",
		".env":      "TOKEN=abc\n",
		".claude/settings.json": `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": ` + permissions + `,
  "statusLine": {"type": "command", "command": "echo fenix"},
  "enabledPlugins": {"formatter@acme": true},
  "automaticCodeReview": true,
  "hooks": {
    "PreToolUse": [
      {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/path_guard.py"}]},
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/allow_ls.sh"}]},
      {"matcher": "Read", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/read_log.py"}]}
    ],
    "Setup": [{"hooks": [{"type": "command", "command": "true"}]}]
  }
}`,
		// Refuses paths that climb out of the project; prints a JSON
		// allow too, which cannot override exit 2 and gives no reason for
		// a block it did not make, so stderr is the reason.
		".claude/hooks/path_guard.py": `import json, os, sys
data = json.load(sys.stdin)
path = data["tool_input"].get("file_path", "")
if ".." in path.split(os.sep):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "an allow cannot override exit 2"}}))
    print("path climbs out of " + os.environ["CLAUDE_PROJECT_DIR"] + ": " + path, file=sys.stderr)
    sys.exit(2)
`,
		".claude/hooks/allow_ls.sh": `#!/usr/bin/env bash
input=$(cat)
case "$input" in
  *'"command":"ls'*|*'"command": "ls'*)
    echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ls only reads"}}' ;;
esac
exit 0
`,
		".claude/hooks/read_log.py": `import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "reads.log"), "a") as f:
    f.write(data["tool_input"]["file_path"] + "\n")
`,
	}
	for name, body := range files {
		path := filepath.Join(project, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o755))
	}
	return project
}

func hookDecisions(e contract.TraceEntry) []map[string]any {
	var out []map[string]any
	list, _ := e.Get("hooks").([]any)
	for _, d := range list {
		if m, ok := d.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// The brief's project: deny Read(./.env), ask Bash(git push:*), allow
// Bash(ls:*) govern workspace_read and exec_command on the dev server as
// Claude Code would, with the verdict, its rule and its file in the trace;
// hooks see paths as written and exit 2's stderr is the reason.
func TestClaudeCodePermissionsGovernToolCalls(t *testing.T) {
	project := permissionProject(t, `{"deny": ["Read(./.env)"], "ask": ["Bash(git push:*)"], "allow": ["Bash(ls:*)"]}`)
	settings := filepath.Join(project, ".claude", "settings.json")
	var log lockedBuffer
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
		c.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	tools := []string{"exec_command", "workspace_read", "workspace_write"}
	call := func(name, tool string, args map[string]any) map[string]any {
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": args}, tools...)
		a["workspace_root"] = project
		return a
	}
	pre := func(t *testing.T, res contract.Result) contract.TraceEntry {
		t.Helper()
		e, ok := traceEntry(res, "pre_tool_use")
		require.True(t, ok, "trace: %v", res.Trace)
		return e
	}

	t.Run("keys and events Fenix does not act on warn once at load", func(t *testing.T) {
		for _, key := range []string{`\"statusLine\"`, `\"enabledPlugins\"`, `\"automaticCodeReview\"`, `\"Setup\"`} {
			assert.Equal(t, 1, strings.Count(log.String(), key), "%s in\n%s", key, log.String())
		}
		assert.NotContains(t, log.String(), `\"permissions\"`)
	})

	t.Run("deny Read(./.env) refuses workspace_read .env", func(t *testing.T) {
		res, run := runAssignment(t, w.queue, call("env-read", "workspace_read", map[string]any{"path": ".env"}))
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
		assert.Contains(t, res.Error.LastErrorSummary, `permission rule "Read(./.env)" in `+settings)
		scheduled, _ := activityAttempts(history(t, run))
		assert.Zero(t, scheduled["ExecuteTool"])
		e := pre(t, res)
		assert.Equal(t, "permissions", e.Get("decided_by"))
		assert.Equal(t, map[string]any{"decision": "deny", "rule": "Read(./.env)", "source": settings}, e.Get("permission_rule"))
		// The Read hook ran and saw the absolute path, as in Claude Code.
		logged, err := os.ReadFile(filepath.Join(project, "reads.log"))
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(project, ".env")+"\n", string(logged))
	})

	t.Run("other reads run", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("readme", "workspace_read", map[string]any{"path": "README.md"}))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Nil(t, pre(t, res).Get("permission_rule"))
	})

	t.Run("allow Bash(ls:*) and the hook's explicit allow are recorded; unmatched hooks are not listed", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("ls", "exec_command", map[string]any{"command_line": "ls -a"}))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Contains(t, res.Output.Content, "README.md")
		e := pre(t, res)
		allowHook := `PreToolUse command "$CLAUDE_PROJECT_DIR"/.claude/hooks/allow_ls.sh`
		assert.Equal(t, allowHook, e.Get("decided_by"))
		assert.Equal(t, map[string]any{"decision": "allow", "rule": "Bash(ls:*)", "source": settings}, e.Get("permission_rule"))
		var names []string
		for _, d := range hookDecisions(e) {
			names = append(names, fmt.Sprint(d["hook"]))
			if d["hook"] == allowHook {
				assert.Equal(t, "allow", d["kind"])
				assert.Equal(t, "ls only reads", d["reason"])
			}
		}
		assert.Contains(t, names, "permissions")
		for _, n := range names {
			assert.NotContains(t, n, "read_log.py", "a Read hook did not run for exec_command")
			assert.NotContains(t, n, "path_guard.py")
		}
	})

	t.Run("ask Bash(git push:*) goes through decide_permission", func(t *testing.T) {
		ctx := context.Background()
		id := fmt.Sprintf("perm-push-%d", time.Now().UnixNano())
		run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, call("push", "exec_command", map[string]any{"command_line": "git push origin main"}))
		pending := awaitPermission(t, run)
		assert.Contains(t, pending.Permission, `permission rule "Bash(git push:*)" in `+settings)
		assert.Equal(t, "permissions", pending.RequestedBy)
		decidePermission(t, run, workflows.PermissionDecision{CallID: "call-push", Decision: workflows.DecisionDeny, Reason: "not today"})
		var res contract.Result
		require.NoError(t, run.Get(ctx, &res))
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, fenixerr.TypePermissionDenied, res.Error.ErrorType)
		e := pre(t, res)
		assert.Equal(t, "permissions", e.Get("decided_by"))
		assert.Equal(t, map[string]any{"decision": "permission_required", "rule": "Bash(git push:*)", "source": settings}, e.Get("permission_rule"))
	})

	t.Run("the hook sees ../x as written and exit 2's stderr is the reason", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("climb", "workspace_write", map[string]any{"path": "../x", "content": "a"}))
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
		assert.Contains(t, res.Error.LastErrorSummary, "path climbs out of "+project+": "+project+"/../x")
		assert.NotContains(t, res.Error.LastErrorSummary, "cannot override", "exit 2 blocks whatever the JSON says")
		_, err := os.Stat(filepath.Join(filepath.Dir(project), "x"))
		assert.True(t, os.IsNotExist(err))
	})

	t.Run("expected refusals are logged at info, not error", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("guard-write", "workspace_write", map[string]any{"path": ".claude/hooks/allow_ls.sh", "content": "exit 0\n"}))
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, "protected_path", res.Error.Code)
		assert.True(t, containsAll(log.String(), `level=INFO msg="tool call refused" stage=execute_tool tool=workspace_write`, "code=protected_path"), log.String())
		assert.NotContains(t, log.String(), "level=ERROR")
	})
}

// On the dev server, through the worker's own registry: a deny rule sees
// the command the shell runs, plan mode refuses every tool not marked
// read-only and runs the read-only ones, and workspace_search leaves out
// what a Read deny rule hides.
func TestClaudeCodePermissionsJudgeWhatRuns(t *testing.T) {
	project := permissionProject(t, `{"defaultMode": "plan", "deny": ["Read(./.env)", "Bash(rm *)"]}`)
	w := startWorker(t, inProject(project))
	call := func(name, tool string, args map[string]any) map[string]any {
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": args},
			"exec_command", "memory_write", "workspace_read", "workspace_search")
		a["workspace_root"] = project
		return a
	}
	refusedBy := func(t *testing.T, res contract.Result, rule string) {
		t.Helper()
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
		e, ok := traceEntry(res, "pre_tool_use")
		require.True(t, ok, "trace: %v", res.Trace)
		rr, _ := e.Get("permission_rule").(map[string]any)
		assert.Equal(t, rule, rr["rule"], "%v", e.Get("permission_rule"))
	}

	t.Run("an escaped rm behind a wrapper is rm", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("escaped-rm", "exec_command", map[string]any{"command_line": `timeout 5 \rm -f README.md`}))
		refusedBy(t, res, "Bash(rm *)")
		_, err := os.Stat(filepath.Join(project, "README.md"))
		assert.NoError(t, err)
	})
	t.Run("plan mode refuses a tool Claude Code has no name for", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("memory", "memory_write", map[string]any{"key": "notes", "content": "x"}))
		refusedBy(t, res, "defaultMode plan")
	})
	t.Run("plan mode runs a read-only tool", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("readme", "workspace_read", map[string]any{"path": "README.md"}))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	})
	t.Run("a search leaves out what Read(./.env) hides", func(t *testing.T) {
		res, _ := runAssignment(t, w.queue, call("search", "workspace_search", map[string]any{"pattern": "TOKEN"}))
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.NotContains(t, res.Output.Content, "abc")
		assert.Contains(t, res.Output.Content, "(1 entry hidden by permission rules)")
	})
}

// policy-diff replays recorded calls under a candidate whose permission
// rules would refuse them.
func TestPolicyDiffReplaysPermissionRules(t *testing.T) {
	recorded := permissionProject(t, `{"allow": ["Bash(ls:*)"]}`)
	candidate := permissionProject(t, `{"deny": ["Read(./.env)"], "allow": ["Bash(ls:*)"]}`)
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{recorded}
		c.DefaultWorkspaceRoot = recorded
	})
	conversation := fmt.Sprintf("conv-permdiff-%d", time.Now().UnixNano())
	a := assignment("env", map[string]any{"call_id": "call-env", "tool_name": "workspace_read", "arguments": map[string]any{"path": ".env"}}, "workspace_read")
	a["workspace_root"], a["conversation_id"] = recorded, conversation
	res, run := runTo(t, w.queue, conversation+"-env", a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	narrow := fmt.Sprintf("ConversationId = '%s'", conversation)
	require.Eventually(t, func() bool {
		out, code := runBinary(t, "starter", nil, "policy-diff", "-hooks-file", recorded, "-workspace-root", recorded, "-query", narrow)
		return code == 0 && strings.Contains(out, "1 calls replayed, 0 newly blocked, 0 newly allowed, 1 unchanged")
	}, 30*time.Second, 500*time.Millisecond)
	out, code := runBinary(t, "starter", nil, "policy-diff", "-hooks-file", candidate, "-workspace-root", recorded, "-query", narrow)
	t.Logf("starter policy-diff -hooks-file %s -query %q (exit %d):\n%s", candidate, narrow, code, out)
	require.Equal(t, 1, code, out)
	assert.True(t, containsAll(out, "allow → block", "workspace_read", `block: hook "permissions"`, "1 newly blocked"), out)
	// The default table fits 120 columns; -wide names the run.
	out, code = runBinary(t, "starter", nil, "policy-diff", "-hooks-file", candidate, "-workspace-root", recorded, "-query", narrow, "-wide")
	require.Equal(t, 1, code, out)
	assert.True(t, containsAll(out, "allow → block", run.GetID()), out)
	out, code = runBinary(t, "starter", nil, "policy-diff", "-hooks-file", candidate, "-workspace-root", recorded, "-query", narrow, "-json")
	require.Equal(t, 1, code, out)
	assert.Contains(t, out, `denied by permission rule \"Read(./.env)\" in `+filepath.Join(candidate, ".claude", "settings.json"))
}

// awaitPermission waits until the run waits for exactly one permission
// decision and returns it.
func awaitPermission(t *testing.T, run client.WorkflowRun) workflows.PendingPermission {
	t.Helper()
	var pending []workflows.PendingPermission
	require.Eventually(t, func() bool {
		v, err := server.Client().QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), workflows.QueryPendingPermissions)
		return err == nil && v.Get(&pending) == nil && len(pending) == 1
	}, 30*time.Second, 100*time.Millisecond)
	return pending[0]
}

// decidePermission answers the run's decide_permission update.
func decidePermission(t *testing.T, run client.WorkflowRun, d workflows.PermissionDecision) {
	t.Helper()
	require.NoError(t, tryDecide(run, d))
}

// tryDecide sends decide_permission and returns the run's refusal.
func tryDecide(run client.WorkflowRun, d workflows.PermissionDecision) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := server.Client().UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
		UpdateName: workflows.UpdateDecidePermission, WaitForStage: client.WorkflowUpdateStageCompleted, Args: []any{d}})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// A project locked down with dontAsk and an allow list: a variable that
// changes what an allowed command runs (PATH to the project's own "ls",
// on the command line or through the call's env argument) makes the call
// one no allow rule approves, so it is refused and the fake ls never
// runs; NODE_ENV, which Claude Code lets allow rules look past, does not.
// Nor is an allowed ls a way to overwrite a file.
func TestClaudeCodeAllowListIsNotWidenedByTheEnvironment(t *testing.T) {
	project := t.TempDir()
	for path, content := range map[string]string{
		".claude/settings.json": `{"permissions": {"defaultMode": "dontAsk", "allow": ["Bash(ls:*)"]}}`,
		"bin/ls":                "#!/bin/sh\ntouch \"$(dirname \"$0\")/../hijacked\"\n",
	} {
		full := filepath.Join(project, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o755))
	}
	w := startWorker(t, inProject(project))
	run := func(name string, args map[string]any) contract.Result {
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": "exec_command", "arguments": args}, "exec_command")
		a["workspace_root"] = project
		res, _ := runAssignment(t, w.queue, a)
		return res
	}
	res := run("plain", map[string]any{"command_line": "ls"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	res = run("node-env", map[string]any{"command_line": "NODE_ENV=test ls"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	for name, args := range map[string]map[string]any{
		"path-prefix": {"command_line": "PATH=./bin:/usr/bin:/bin ls"},
		"path-export": {"command_line": "export PATH=./bin:/usr/bin:/bin; ls"},
		"path-env":    {"command_line": "ls", "env": map[string]any{"PATH": "./bin:/usr/bin:/bin"}},
	} {
		res := run(name, args)
		require.Equal(t, contract.StatusFailed, res.Status, name)
		assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, name)
		assert.Contains(t, res.Error.LastErrorSummary, "it sets PATH", name)
	}
	_, err := os.Stat(filepath.Join(project, "hijacked"))
	assert.True(t, os.IsNotExist(err), "the project's fake ls never ran")

	res = run("redirect", map[string]any{"command_line": "ls > .claude/settings.json"})
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "it writes its output to .claude/settings.json")
	settings, err := os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	require.NoError(t, err)
	assert.Contains(t, string(settings), "dontAsk", "the settings were not overwritten")
	res = run("quiet", map[string]any{"command_line": "ls 2>/dev/null"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
}

// A team's settings as Claude Code reads them today: its Read and Edit
// deny rules hold for the files of the shell commands it recognizes and,
// as one directory segment, at any depth; under dontAsk an ask rule's
// call is denied, not left waiting for a person, while a read in the
// project and its read-only commands run without a rule. Under Fenix the
// agent read .env with cat, wrote the generated sources through a
// redirection and read a nested private directory, and dontAsk parked
// the push and refused pwd.
func TestClaudeCodesDenyRulesAndDontAskAsItReadsThem(t *testing.T) {
	project := t.TempDir()
	for path, content := range map[string]string{
		".claude/settings.json": `{"permissions": {"defaultMode": "dontAsk",
  "deny": ["Read(./.env)", "Read(private/**)", "Edit(/src/generated/**)"],
  "ask": ["Bash(git push:*)"], "allow": ["Bash(true:*)"]}}`,
		".env":                 "STRIPE_KEY=sk_live_s3cret\n",
		"src/generated/api.ts": "export const api = 1;\n",
		"docs/private/plan.md": "s3cret plan\n",
		"README.md":            "hello\n",
	} {
		full := filepath.Join(project, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	run := toolRunner(startWorker(t, inProject(project)), project)
	for name, call := range map[string]struct {
		tool string
		args map[string]any
		rule string
	}{
		"cat-env":        {"exec_command", map[string]any{"command_line": "cat .env"}, "Read(./.env)"},
		"head-env-in-cd": {"exec_command", map[string]any{"command_line": "cd docs && head -n 1 ../.env"}, "Read(./.env)"},
		"redirect":       {"exec_command", map[string]any{"command_line": "echo 'export const api = 2;' > src/generated/api.ts"}, "Edit(/src/generated/**)"},
		"nested-read":    {"workspace_read", map[string]any{"path": "docs/private/plan.md"}, "Read(private/**)"},
		"write-env":      {"workspace_write", map[string]any{"path": ".env", "content": "STRIPE_KEY=x\n"}, "Read(./.env)"},
		"push":           {"exec_command", map[string]any{"command_line": "git push origin main"}, "Bash(git push:*)"},
		// dash, which runs the line, has no $'…': an echo and a cat to it.
		"dash-quoting": {"exec_command", map[string]any{"command_line": `true $'\' ; cat .env # '`}, "Read(./.env)"},
	} {
		res := run(t, name, call.tool, call.args)
		require.Equal(t, contract.StatusFailed, res.Status, "%s: %+v", name, res.Output)
		assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, name)
		assert.Contains(t, res.Error.LastErrorSummary, call.rule, name)
		assert.Nil(t, res.Output, name)
	}
	for name, call := range map[string]struct {
		tool string
		args map[string]any
	}{
		"pwd":          {"exec_command", map[string]any{"command_line": "pwd && ls docs | wc -l"}},
		"read-readme":  {"workspace_read", map[string]any{"path": "README.md"}},
		"command-true": {"exec_command", map[string]any{"command_line": "command true"}},
	} {
		res := run(t, name, call.tool, call.args)
		require.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", name, res.Error)
	}
	got, err := os.ReadFile(filepath.Join(project, "src", "generated", "api.ts"))
	require.NoError(t, err)
	assert.Equal(t, "export const api = 1;\n", string(got))
}

// The kernel chooses a session's permission mode (plan while the agent
// only plans, dontAsk for an unattended run), as a Claude Code user picks
// one per session, but an assignment had no way to name it: hooks always
// read "default", and a worker without settings files had no mode at
// all. agent_context.permission_mode names it now, with no settings file
// on the worker: plan runs reads and refuses writes, dontAsk refuses what
// no rule allows but Claude Code's read-only commands, and an assignment
// without one runs as before.
func TestTheKernelChoosesASessionsPermissionMode(t *testing.T) {
	w := startWorker(t)
	run := func(name, mode, tool string, args map[string]any) contract.Result {
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": args}, tool)
		if mode != "" {
			a["agent_context"].(map[string]any)["permission_mode"] = mode
		}
		res, _ := runAssignment(t, w.queue, a)
		return res
	}
	write := map[string]any{"path": "notes.txt", "content": "plan"}
	for _, c := range []struct {
		name, mode, tool string
		args             map[string]any
		want             string
	}{
		{"plan-read", "plan", "workspace_read", map[string]any{"path": "README.md"}, contract.StatusCompleted},
		{"plan-write", "plan", "workspace_write", write, contract.StatusFailed},
		{"dontask-pwd", "dontAsk", "exec_command", map[string]any{"command_line": "pwd"}, contract.StatusCompleted},
		{"dontask-touch", "dontAsk", "exec_command", map[string]any{"command_line": "touch made-in-dontask"}, contract.StatusFailed},
		{"default-write", "", "workspace_write", write, contract.StatusCompleted},
	} {
		res := run(c.name, c.mode, c.tool, c.args)
		require.Equal(t, c.want, res.Status, "%s: %+v", c.name, res.Error)
		if c.want == contract.StatusFailed {
			assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, c.name)
			assert.Contains(t, res.Error.LastErrorSummary, "permission mode "+c.mode, c.name)
		}
	}
	assert.NoFileExists(t, filepath.Join(w.workspace, "made-in-dontask"))

	a := assignment("bad-mode", map[string]any{"call_id": "call-bad", "tool_name": "calculator", "arguments": map[string]any{"expression": "1+1"}})
	a["agent_context"].(map[string]any)["permission_mode"] = "yolo"
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, `agent_context.permission_mode "yolo" is not a Claude Code permission mode`)
}
