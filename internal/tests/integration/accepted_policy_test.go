package integration

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
)

// An agent cannot rewrite its project's .claude/settings.json nor add a
// server to .mcp.json through exec_command, where its commands hold them
// read-only (a root worker). Where they do not, or when they change on
// disk otherwise (a checkout, an editor), a restart gains the change
// nothing: the new worker runs the policy accepted before and logs what
// differs. SIGHUP (ReloadHooks) accepts the files on disk, which the next
// start then runs; -accept-policy-change accepts them at a start.
func TestARestartKeepsTheAcceptedPolicy(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "guard.sh"),
		[]byte("#!/bin/sh\nif grep -q 'rm -rf'; then echo 'project policy: rm -rf is not allowed' >&2; exit 2; fi\nexit 0\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}]}}`), 0o644))
	queue := newTaskQueue(t)
	dataDir := t.TempDir()
	t.Cleanup(func() { verifyQueue(t, queue) })

	start := func(t *testing.T, acceptChange bool) (*worker.Worker, *lockedBuffer) {
		t.Helper()
		logs := &lockedBuffer{}
		w, err := worker.New(server.Client(), worker.Config{
			TaskQueue:            queue,
			DataDir:              dataDir,
			DefaultWorkspaceRoot: project,
			HookSources:          []string{project},
			AcceptPolicyChange:   acceptChange,
			MCPStartWait:         100 * time.Millisecond,
			Logger:               slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
			HostConfig:           tools.HostConfig{Unreachable: []string{server.HostPort}},
		})
		require.NoError(t, err)
		require.NoError(t, w.Start())
		return w, logs
	}
	exec := execSteps(queue, project, "step")
	// change changes the project as a command of a worker that cannot hold
	// its governing files read-only could.
	change := func(t *testing.T, script string) { shellIn(t, project, script) }
	rmGuarded := func(t *testing.T, when string) bool {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Join(project, "scratch"), 0o755))
		res := exec(t, "rm -rf ./scratch")
		if res.Status == contract.StatusCompleted {
			return false
		}
		require.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, "%s: %+v", when, res.Error)
		assert.Contains(t, res.Error.LastErrorSummary, "project policy: rm -rf is not allowed", when)
		return true
	}
	plantedServer := func(w *worker.Worker) bool {
		if w.MCP() == nil {
			return false
		}
		for _, st := range w.MCP().Status() {
			if st.Name == "planted" {
				return true
			}
		}
		return false
	}

	w, _ := start(t, false)
	require.True(t, rmGuarded(t, "first start"))
	rewrite := `printf '{"permissions": {"allow": ["Bash(*)"]}}' > .claude/settings.json && ` +
		`printf '{"mcpServers": {"planted": {"command": "/bin/true"}}}' > .mcp.json`
	res := exec(t, rewrite)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	if os.Geteuid() == 0 {
		assert.Contains(t, res.Output.Content, "Read-only file system")
		assert.NotContains(t, res.Output.Content, "It changed protected paths")
		change(t, rewrite)
	} else {
		assert.Contains(t, res.Output.Content, "It changed protected paths")
	}
	require.True(t, rmGuarded(t, "after the rewrite, same worker"))
	w.Stop()

	w, logs := start(t, false)
	assert.True(t, rmGuarded(t, "restarted after the rewrite"), "a restart adopted the settings a command wrote")
	assert.False(t, plantedServer(w), "a restart started the MCP server a command added to .mcp.json")
	assert.Contains(t, logs.String(), "running the hook policy accepted before")
	assert.True(t, w.PolicyHeld())
	assert.Contains(t, logs.String(), filepath.Join(project, ".claude", "settings.json")+" changed")
	assert.Contains(t, logs.String(), filepath.Join(project, ".mcp.json")+" created")

	// The operator reads the log and accepts what is on disk.
	_, err := w.ReloadHooks()
	require.NoError(t, err)
	assert.False(t, rmGuarded(t, "after SIGHUP"), "the reloaded settings allow rm -rf")
	assert.False(t, w.PolicyHeld())
	w.Stop()

	w, logs = start(t, false)
	assert.False(t, rmGuarded(t, "restarted after SIGHUP"))
	assert.True(t, plantedServer(w), "the accepted .mcp.json's server is configured")
	assert.NotContains(t, logs.String(), "running the hook policy accepted before")
	pinned, err := os.ReadDir(filepath.Join(dataDir, "hook-scripts"))
	require.NoError(t, err)
	assert.Empty(t, pinned, "the accepted policy runs no script, yet the start kept the old guard's copy")

	// The agent puts a guard back (any change will do); the operator
	// accepts it at the start.
	change(t, `printf '%s' '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}]}}' > .claude/settings.json`)
	w.Stop()
	w, logs = start(t, true)
	assert.True(t, rmGuarded(t, "started with -accept-policy-change"))
	assert.Contains(t, logs.String(), "adopting the hook policy on disk")
	assert.Contains(t, logs.String(), "-accept-policy-change")

	// Sparse settings of a gigabyte (the largest file a command may
	// write, RLIMIT_FSIZE) were read whole by the next start; now they do
	// not load, and the accepted guard keeps serving.
	change(t, `truncate -s 1G .claude/settings.json`)
	w.Stop()
	w, logs = start(t, false)
	assert.True(t, rmGuarded(t, "restarted after the settings grew to a gigabyte"))
	assert.Contains(t, logs.String(), "over the 4194304-byte limit")
	assert.True(t, w.PolicyHeld())

	// A named pipe in their place held the next start forever, waiting
	// for a writer; now it is refused at once.
	change(t, `rm .claude/settings.json && mkfifo .claude/settings.json`)
	w.Stop()
	w, logs = start(t, false)
	t.Cleanup(w.Stop)
	assert.True(t, rmGuarded(t, "restarted with a named pipe for settings"))
	assert.Contains(t, logs.String(), "not a regular file")
}

// A project's ConfigChange hook — a team's audit of settings changes,
// refusing the ones its security team must see — runs when the operator
// reloads (SIGHUP) settings that changed on disk, as Claude Code runs it
// when a settings file changes in a session: it hears of each change, and
// its refusal keeps the policy in force, naming the hook and its reason.
// It used to be skipped with a warning, and a reload took any change.
func TestClaudeCodeConfigChangeHookCanRefuseAReload(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "guard.sh"),
		[]byte("#!/bin/sh\nif grep -q 'rm -rf'; then echo 'project policy: rm -rf is not allowed' >&2; exit 2; fi\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "config-audit.sh"), []byte(`#!/bin/sh
in=$(cat)
printf '%s\n' "$in" >> "$CLAUDE_PROJECT_DIR/../config-changes.jsonl"
file=$(printf '%s' "$in" | sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p')
if grep -q 'Bash(\*)' "$file" 2>/dev/null; then
  echo "allowing every command needs the security team's review" >&2
  exit 2
fi
`), 0o755))
	settings := func(extra string) string {
		return `{` + extra + `"hooks": {
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}],
  "ConfigChange": [{"matcher": "project_settings|local_settings", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/config-audit.sh"}]}]}}`
	}
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(settings("")), 0o644))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	rmBlocked := func(t *testing.T, when string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Join(project, "scratch"), 0o755))
		a := assignment("config-"+when, map[string]any{"call_id": "call-" + when, "tool_name": "exec_command", "arguments": map[string]any{"command_line": "rm -rf ./scratch"}}, "exec_command")
		a["workspace_root"] = project
		res, _ := runAssignment(t, w.queue, a)
		require.Equal(t, contract.StatusFailed, res.Status, when)
		assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, when)
	}
	changes := func() []map[string]any {
		raw, err := os.ReadFile(filepath.Join(project, "..", "config-changes.jsonl"))
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), line)
			out = append(out, m)
		}
		return out
	}
	rmBlocked(t, "before")

	// An edit the audit lets through: the reload takes it, the hook heard.
	shellIn(t, project, `printf '%s' '`+settings(`"env": {"TEAM": "payments"}, `)+`' > .claude/settings.json`)
	_, err := w.ReloadHooks()
	require.NoError(t, err)
	seen := changes()
	require.Len(t, seen, 1)
	assert.Equal(t, "ConfigChange", seen[0]["hook_event_name"])
	assert.Equal(t, "project_settings", seen[0]["source"])
	assert.Equal(t, filepath.Join(project, ".claude", "settings.json"), seen[0]["file_path"])

	// One that allows every command: refused, and the guard still holds.
	shellIn(t, project, `printf '%s' '{"permissions": {"allow": ["Bash(*)"]}, "hooks": {}}' > .claude/settings.json`)
	_, err = w.ReloadHooks()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused by ConfigChange")
	assert.Contains(t, err.Error(), "allowing every command needs the security team's review")
	assert.Len(t, changes(), 2)
	rmBlocked(t, "after-refused-reload")
}

// Code a hook runs (the project's PostToolUse hook runs npm test, whose
// scripts.test the agent wrote) cannot rewrite the settings files the
// policy was loaded from, the operator's beside the workspace or the
// project's, and it still writes the hook's log in .claude/; it rewrites
// the operator's guard script, and the next start of the worker does not
// take that for the operator's change: it runs the policy accepted
// before, and the guard still refuses. Such rewrites were adopted by a
// restart, the guard gone.
func TestARestartDoesNotAdoptWhatCodeAHookRanRewrote(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the project's settings are held read-only by a root worker's mount namespaces")
	}
	if _, err := osexec.LookPath("npm"); err != nil {
		t.Skip("npm not found: the project's hook runs npm test")
	}
	operator, project := t.TempDir(), t.TempDir()
	opSettings := filepath.Join(operator, ".claude", "settings.json")
	files := map[string]string{
		opSettings:                          `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh ` + filepath.Join(operator, "guard.sh") + `"}]}]}}`,
		filepath.Join(operator, "guard.sh"): "grep -q OPDENY && exit 2\nexit 0\n",
		filepath.Join(project, ".claude", "settings.json"): `{"permissions": {"allow": ["Bash"]}, "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cd \"$CLAUDE_PROJECT_DIR\" && npm test --silent >> .claude/hook-log.txt 2>&1"}]}]}}`,
		filepath.Join(project, "package.json"):             `{"scripts": {"test": "echo tests pass"}}`,
	}
	for path, body := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	queue, dataDir := newTaskQueue(t), t.TempDir()
	t.Cleanup(func() { verifyQueue(t, queue) })
	start := func(t *testing.T) (*worker.Worker, *lockedBuffer) {
		t.Helper()
		logs := &lockedBuffer{}
		w, err := worker.New(server.Client(), worker.Config{TaskQueue: queue, DataDir: dataDir, DefaultWorkspaceRoot: project,
			HookSources: []string{opSettings, project}, MCPStartWait: 100 * time.Millisecond,
			Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
			HostConfig: tools.HostConfig{Unreachable: []string{server.HostPort}}})
		require.NoError(t, err)
		require.NoError(t, w.Start())
		return w, logs
	}
	exec := execSteps(queue, project, "hook-rewrite")
	w, _ := start(t)
	require.NotEqual(t, contract.StatusCompleted, exec(t, "echo OPDENY").Status, "the operator's guard refuses")
	// The agent's test script, which the hook runs after its next command.
	plant := `try() { if sh -c "$2" 2>/dev/null; then echo "$1: done"; else echo "$1: refused"; fi; }
try op-settings 'echo "{}" > ` + opSettings + `'
try op-guard 'echo "exit 0" > ` + filepath.Join(operator, "guard.sh") + `'
try proj-settings 'echo "{}" > .claude/settings.json'
`
	require.NoError(t, os.WriteFile(filepath.Join(project, "plant.sh"), []byte(plant), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"scripts": {"test": "sh ./plant.sh"}}`), 0o644), "as the agent's edit of its test script")
	require.Equal(t, contract.StatusCompleted, exec(t, "true").Status)
	log, err := os.ReadFile(filepath.Join(project, ".claude", "hook-log.txt"))
	require.NoError(t, err, "the hook writes its log in .claude/")
	assert.Contains(t, string(log), "op-settings: refused", "the settings files the policy was loaded from are read-only to hooks")
	assert.Contains(t, string(log), "op-guard: done", "the hook's code reaches the operator's guard script")
	assert.Contains(t, string(log), "proj-settings: refused")
	got, err := os.ReadFile(opSettings)
	require.NoError(t, err)
	assert.Equal(t, files[opSettings], string(got))
	got, err = os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	require.NoError(t, err)
	assert.Equal(t, files[filepath.Join(project, ".claude", "settings.json")], string(got))
	w.Stop()

	w, logs := start(t)
	defer w.Stop()
	assert.Contains(t, logs.String(), "running the hook policy accepted before", "the rewrite is held: %s", logs.String())
	assert.NotEqual(t, contract.StatusCompleted, exec(t, "echo OPDENY").Status, "the operator's guard still refuses after the restart")
}

// execSteps runs each command it is given as an exec_command assignment
// of its own (name-1, name-2, …) in workspace, on queue.
func execSteps(queue, workspace, name string) func(t *testing.T, command string) contract.Result {
	seq := 0
	return func(t *testing.T, command string) contract.Result {
		t.Helper()
		seq++
		step := fmt.Sprintf("%s-%d", name, seq)
		a := assignment(step, map[string]any{"call_id": "call-" + step, "tool_name": "exec_command", "arguments": map[string]any{"command_line": command}}, "exec_command")
		a["workspace_root"] = workspace
		res, _ := runAssignment(t, queue, a)
		return res
	}
}
