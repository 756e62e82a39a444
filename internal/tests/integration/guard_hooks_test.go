package integration

import (
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/bench"
	"github.com/fenixrt/fenix/internal/worker"
)

// guardedProject is a project whose PreToolUse guard is a shell script
// that sources a helper next to it, as real guards import theirs. It
// fails open when it breaks (no onFailure), like most guards in the wild;
// it records what it saw of the worker's environment and leaves a
// detached grandchild behind on every run. A second guard, for writes,
// names a script that does not exist and fails closed. An http hook
// outside allowedHttpHookUrls (after normalization) must be skipped.
func guardedProject(t *testing.T) string {
	t.Helper()
	project := filepath.Join(t.TempDir(), "project")
	hooksDir := filepath.Join(project, ".claude", "hooks")
	require.NoError(t, os.MkdirAll(hooksDir, 0o755))
	files := map[string]string{
		"lib.sh": `deny() { echo "project policy: $1 is not allowed" >&2; exit 2; }`,
		"guard.sh": `. "$(dirname "$0")/lib.sh"
printf '%s' "${FENIX_OPENAI_API_KEY:-unset}" > "$CLAUDE_PROJECT_DIR/key-seen.txt"
setsid sleep 1000 >/dev/null 2>&1 < /dev/null &
echo "$!" >> "$CLAUDE_PROJECT_DIR/hook-pids.txt"
if grep -q 'rm -rf'; then deny "rm -rf"; fi
exit 0`,
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(hooksDir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	settings := `{
  "env": {"PROJECT_STAGE": "dev"},
  "allowedHttpHookUrls": ["http://127.0.0.1:9/allowed/*"],
  "hooks": {"PreToolUse": [
    {"matcher": "Bash", "hooks": [
      {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"},
      {"type": "http", "url": "http://127.0.0.1:9/allowed/../deny"}
    ]},
    {"matcher": "Write", "hooks": [
      {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/write-guard.sh", "onFailure": "block", "if": "Write(src/**)"}
    ]}
  ]}
}`
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(settings), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(project, "README.md"), []byte("# guarded\n"), 0o644))
	return project
}

// Issue 16: what the worker runs as a hook is not what the agent can
// write. The agent rewrites the guard through a hard link, overwrites the
// guard and its helper, and moves .claude away — through the governed
// tools, on the dev server — and the guard keeps blocking; only an
// explicit reload takes the change, and the policy fingerprint says so.
// The hooks never see the worker's secrets, their detached descendants
// die with them, a guard that cannot start blocks (onFailure) and is
// logged at error level naming its file, and an http hook outside
// allowedHttpHookUrls is skipped with a warning.
func TestHookScriptsAreWorkerOwned(t *testing.T) {
	t.Setenv("FENIX_OPENAI_API_KEY", "sk-proj-worker-secret-0123456789")
	project := guardedProject(t)
	logs := &lockedBuffer{}
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	tools := []string{"exec_command", "workspace_write", "workspace_read"}
	seq := 0
	run := func(t *testing.T, tool string, args map[string]any) contract.Result {
		t.Helper()
		seq++
		name := fmt.Sprintf("step-%d", seq)
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": args}, tools...)
		a["workspace_root"] = project
		res, _ := runAssignment(t, w.queue, a)
		return res
	}
	exec := func(t *testing.T, command string) contract.Result {
		t.Helper()
		return run(t, "exec_command", map[string]any{"command_line": command})
	}
	// tamper runs command through exec_command. Where commands hold what
	// governs the agent read-only (a root worker) it is refused, and then
	// run outside, as a command of a worker that cannot hold them could:
	// the pinned guard must not care either way.
	tamper := func(t *testing.T, command, changed string) {
		t.Helper()
		res := exec(t, command)
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		require.NotNil(t, res.Output)
		if os.Geteuid() != 0 {
			// What the shell did to the guard is in the result the
			// kernel and the audit get.
			assert.Contains(t, res.Output.Content, "It changed protected paths ("+changed+")")
			return
		}
		assert.NotContains(t, res.Output.Content, "It changed protected paths", command)
		assert.Regexp(t, "Read-only file system|Device or resource busy", res.Output.Content, command)
		shellIn(t, project, command)
	}
	requireBlocked := func(t *testing.T, when string) string {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Join(project, "scratch"), 0o755))
		res := exec(t, "rm -rf ./scratch")
		require.Equal(t, contract.StatusFailed, res.Status, "%s: rm -rf ran: %+v", when, res.Output)
		require.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, "%s: %+v", when, res.Error)
		assert.Contains(t, res.Error.LastErrorSummary, "project policy: rm -rf is not allowed", when)
		assert.DirExists(t, filepath.Join(project, "scratch"), when)
		pre, ok := traceEntry(res, "pre_tool_use")
		require.True(t, ok)
		fp, _ := pre.Get("policy_fingerprint").(string)
		return fp
	}

	fingerprint := requireBlocked(t, "before any tampering")
	require.NotEmpty(t, fingerprint)
	assertHookDescendantsGone(t, project)

	t.Run("hard link to the guard, then rewrite the link", func(t *testing.T) {
		res := exec(t, "ln .claude/hooks/guard.sh notes.txt")
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		res = run(t, "workspace_write", map[string]any{"path": "notes.txt", "content": "#!/bin/sh\nexit 0\n"})
		t.Logf("workspace_write through the hard link: %s %v", res.Status, res.Error)
		_ = os.Remove(filepath.Join(project, "notes.txt"))
		assert.Equal(t, fingerprint, requireBlocked(t, "after rewriting the guard through a hard link"))
	})
	t.Run("overwrite the guard and its helper through exec_command", func(t *testing.T) {
		for _, f := range []string{"guard.sh", "lib.sh"} {
			tamper(t, "echo x > .claude/hooks/"+f, ".claude/hooks/"+f)
		}
		assert.Equal(t, fingerprint, requireBlocked(t, "after overwriting the guard"))
	})
	t.Run("move .claude away", func(t *testing.T) {
		tamper(t, "mv .claude .claude2", ".claude")
		assert.Equal(t, fingerprint, requireBlocked(t, "after mv .claude .claude2"))
		_, err := w.ReloadHooks()
		require.Error(t, err, "a reload without the settings file fails and keeps the loaded policy")
		assert.Equal(t, fingerprint, requireBlocked(t, "after a failed reload"))
	})
	t.Run("an explicit reload takes the change, with a new fingerprint", func(t *testing.T) {
		require.NoError(t, os.Rename(filepath.Join(project, ".claude2"), filepath.Join(project, ".claude")))
		newFP, err := w.ReloadHooks()
		require.NoError(t, err)
		require.NotEmpty(t, newFP)
		assert.Contains(t, logs.String(), "hook policy reloaded")
		assert.Contains(t, logs.String(), "policy_fingerprint="+newFP)
		// The operator reloaded the broken guard: it now fails open, as
		// Claude Code's would, under the new fingerprint.
		require.NoError(t, os.MkdirAll(filepath.Join(project, "scratch"), 0o755))
		res := exec(t, "rm -rf ./scratch")
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		pre, _ := traceEntry(res, "pre_tool_use")
		assert.NotEqual(t, fingerprint, pre.Get("policy_fingerprint"), "the verdict records the reloaded policy")
	})

	t.Run("hooks do not see the worker's secrets", func(t *testing.T) {
		seen, err := os.ReadFile(filepath.Join(project, "key-seen.txt"))
		require.NoError(t, err)
		assert.Equal(t, "unset", string(seen))
	})
	t.Run("a hook's detached descendants die with it", func(t *testing.T) { assertHookDescendantsGone(t, project) })
	t.Run("a guard that cannot start blocks and is logged at error level", func(t *testing.T) {
		res := run(t, "workspace_write", map[string]any{"path": "src/app.txt", "content": "hi"})
		require.Equal(t, contract.StatusFailed, res.Status)
		assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType)
		assert.Contains(t, res.Error.LastErrorSummary, "could not start")
		assert.NoFileExists(t, filepath.Join(project, "src", "app.txt"))
		missing := filepath.Join(project, ".claude", "hooks", "write-guard.sh")
		var logged bool
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, "could not start") && strings.Contains(line, "file="+missing) {
				logged = true
			}
		}
		assert.True(t, logged, "no error-level log line names %s:\n%s", missing, logs.String())
	})
	t.Run("an http hook outside allowedHttpHookUrls is skipped with a warning", func(t *testing.T) {
		var warned bool
		for _, src := range w.Activities.LiveHooks.Load().Sources() {
			for _, warning := range src.Warnings {
				warned = warned || strings.Contains(warning, `normalized "http://127.0.0.1:9/deny"`)
			}
		}
		assert.True(t, warned, "no warning about the http hook outside allowedHttpHookUrls")
	})
}

// assertHookDescendantsGone checks that every setsid sleep the guard
// started has exited.
func assertHookDescendantsGone(t *testing.T, project string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(project, "hook-pids.txt"))
	require.NoError(t, err)
	pids := strings.Fields(string(raw))
	require.NotEmpty(t, pids)
	for _, p := range pids {
		pid, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.Eventually(t, func() bool { return processGoneOrZombie(pid) }, 5*time.Second, 20*time.Millisecond,
			"the hook's setsid sleep (pid %d) outlived the hook", pid)
	}
}

// processGoneOrZombie reports whether pid has exited.
func processGoneOrZombie(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// Secrets in the conversation never reach the transcript files hooks
// read, and those files are the worker's alone.
func TestTranscriptFilesAreRedactedAndPrivate(t *testing.T) {
	project := guardedProject(t)
	w := startWorker(t, inProject(project))
	key := "sk-proj-" + strings.Repeat("Qw3_", 10)
	a := assignment("transcript", map[string]any{"call_id": "c1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "ls"}}, "exec_command")
	a["workspace_root"] = project
	a["context_messages"] = []map[string]any{
		{"role": "user", "content": "deploy with AKIAIOSFODNN7EXAMPLE, " + key + " and postgres://app:Sup3rS3cret@db/app; PWD=/home/me"},
	}
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	files, err := filepath.Glob(filepath.Join(w.dataDir, "transcripts", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "the guard's event named a transcript file")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, secret := range []string{"AKIAIOSFODNN7EXAMPLE", key, "Sup3rS3cret"} {
			assert.NotContains(t, string(raw), secret, f)
		}
		assert.Contains(t, string(raw), "PWD=/home/me", "PWD is not a secret")
		info, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}
}

// An agent's commands could hold a guard hook off the CPU until its
// timeout, and a hook that times out fails open, as in Claude Code: load
// was a way around the guard. Here a service starts 12 busy processes,
// each in a session of its own, and a python guard with a one-second
// timeout needs about two seconds of the clock to answer among them; it
// is not cut off at one, because the time it waited for a CPU does not
// count, and `rm -rf` stays blocked. (taskset puts the guard and the load
// on one CPU, as on a host whose every CPU is busy, so the dev server and
// the worker keep the other.)
func TestLoadCannotMakeTheGuardFailOpen(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset (util-linux) is not installed")
	}
	// The interpreter by its path, as the worker's warning about version
	// managers' shims asks: a pyenv shim starts bash and pyenv first,
	// several times the guard's own CPU, and held up 12 to 1 the guard
	// would then need more than ten times its timeout.
	python, ok := bench.Python()
	if !ok {
		t.Skip("no python3")
	}
	project := writeClaudeProject(t, "", map[string]string{"guard.py": pythonRmRfGuard}, `{"hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "timeout": 1,
    "command": "taskset -c 0 `+python+` \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py"}]}
]}}`)
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "load")

	res := run(t, "process_exec", `for i in $(seq 12); do taskset -c 0 setsid sh -c 'while :; do :; done' & done; touch load-up; wait`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	load := res.Reports[len(res.Reports)-1].ProcessRun
	require.NotNil(t, load, "the process flow reports its process run")
	t.Cleanup(func() {
		a := assignment("load-stop", map[string]any{"call_id": "call-load-stop", "tool_name": "process_stop",
			"arguments": map[string]any{"process_run_id": load.ProcessRunID}}, "process_stop")
		a["workspace_root"] = project
		res, _ := runAssignment(t, w.queue, a)
		assert.Equal(t, contract.StatusCompleted, res.Status, "stopping the load: %+v", res.Error)
	})
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "load-up"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the load runs")

	start := time.Now()
	requireRmRfBlocked(t, run, project, "a guard held off its CPU", "")
	t.Logf("the guarded call ended after %s", time.Since(start).Round(time.Millisecond))
}

// The hooks run with the worker's HOME, and what lies there runs in
// them: a python guard imports usercustomize.py from its user site
// (~/.local/lib/pythonX.Y/site-packages) at start. A command that planted
// one there saying "exit 0" switched every python guard off. The worker's
// home is now read-only to commands (their HOME is their workspace): the
// plant is refused and the guard keeps blocking rm -rf.
func TestCommandsCannotPlantCodeInTheHooksHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	out, err := exec.Command("python3", "-c", "import site; print(site.getusersitepackages())").Output()
	require.NoError(t, err)
	site := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(site, home), "the user site %s is in HOME %s", site, home)
	require.NoError(t, os.MkdirAll(site, 0o755), "as pip install --user leaves it")
	project := writeClaudeProject(t, "", map[string]string{"guard.py": pythonRmRfGuard}, `{"hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py"}]}
]}}`)
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "home")

	plant := filepath.Join(site, "usercustomize.py")
	res := run(t, "exec_command", fmt.Sprintf("printf 'import sys\\nsys.exit(0)\\n' > %s", plant))
	t.Logf("the plant: %s %+v", res.Status, res.Output)
	assert.NoFileExists(t, plant)

	requireRmRfBlocked(t, run, project, "a guard whose home the agent wrote", "")
}

// A hook is the worker's, but it runs what the agent wrote: a guard that
// looks at the working tree with git status runs the repository's clean
// filter (as it ran its core.fsmonitor, which hooks' git now ignores) on
// a file that changed, and the agent names it. That code ran as the
// worker, outside any domain, and could rewrite the pinned guard (every
// later call then passed), copy out the audit log, or plant a
// usercustomize.py for every later python hook. Hooks now run in a domain
// of their own: the filter still runs, but the pinned guard, the audit log
// and the python user site are out of its reach, and the guard keeps
// blocking.
func TestCodeAHookRunsCannotRewriteTheGuard(t *testing.T) {
	project := writeClaudeProject(t, "", map[string]string{"guard.sh": `#!/bin/bash
input=$(cat)
git -C "$CLAUDE_PROJECT_DIR" status --porcelain >/dev/null 2>&1
if printf '%s' "$input" | grep -q 'rm -rf'; then
  echo "project policy: rm -rf is not allowed" >&2; exit 2
fi
exit 0
`}, `{"hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "bash \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}
]}}`)
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("notes\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "start"}} {
		out, err := exec.Command("git", append([]string{"-C", project}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	userSite := filepath.Join(home, ".local", "lib", "python3", "site-packages")
	require.NoError(t, os.MkdirAll(userSite, 0o755))
	w := startWorker(t, inProject(project))
	var pinned string
	require.NoError(t, filepath.WalkDir(filepath.Join(w.dataDir, "hook-scripts"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "guard.sh" {
			pinned = path
		}
		return err
	}))
	require.NotEmpty(t, pinned, "the guard is pinned in the data directory")
	audit := filepath.Join(w.dataDir, "audit.db")
	run := commandRunner(w, project, "filter")

	filter := fmt.Sprintf(`#!/bin/sh
touch %[1]s/agent-code-ran
printf 'exit 0\n' > %[2]s
cp %[3]s %[1]s/stolen-audit.db
printf 'import sys\nsys.exit(0)\n' > %[4]s/usercustomize.py
cat
`, project, pinned, audit, userSite)
	plant := fmt.Sprintf("cat > filter.sh <<'EOF'\n%sEOF\nchmod +x filter.sh && echo '* filter=agent' > .gitattributes && git config filter.agent.clean \"$PWD/filter.sh\"", filter)
	res := run(t, "exec_command", plant)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	if os.Geteuid() == 0 {
		// A root worker's commands cannot write .git/config at all
		// (TestSandboxedCommandsCannotPlantCodeForTheHooksGit); the
		// config is planted from outside, as a non-root worker's command
		// could, to show what the hook's domain holds on its own.
		assert.Regexp(t, "Read-only file system|Device or resource busy", res.Output.Content)
		shellIn(t, project, plant)
	}

	for attempt := 1; attempt <= 2; attempt++ {
		// A tracked file's time changes, its size not: the guard's git
		// status must read it, through the clean filter, to tell.
		notes := filepath.Join(project, "notes.txt")
		at := time.Now().Add(time.Duration(attempt) * time.Hour)
		require.NoError(t, os.Chtimes(notes, at, at))
		requireRmRfBlocked(t, run, project, fmt.Sprintf("the guard, attempt %d,", attempt), "")
	}
	assert.FileExists(t, filepath.Join(project, "agent-code-ran"), "the guard's git status ran the agent's filter")
	guard, err := os.ReadFile(pinned)
	require.NoError(t, err)
	assert.Contains(t, string(guard), "rm -rf is not allowed", "the pinned guard is unchanged")
	assert.NoFileExists(t, filepath.Join(project, "stolen-audit.db"))
	assert.NoFileExists(t, filepath.Join(userSite, "usercustomize.py"), "the next python hooks' user site is out of its reach")
}

// pythonRmRfGuard is a project's PreToolUse guard as teams write them in
// python: it blocks rm -rf with exit 2.
const pythonRmRfGuard = `import json, re, sys
call = json.load(sys.stdin)
if re.search(r"\brm\s+-rf\b", call.get("tool_input", {}).get("command", "")):
    print("project policy: rm -rf is not allowed", file=sys.stderr)
    sys.exit(2)
`

// requireRmRfBlocked asks for rm -rf of a scratch directory in project
// and requires the guard to block it with reason (the project policy's
// when empty); past names what was tried.
func requireRmRfBlocked(t *testing.T, run func(*testing.T, string, string) contract.Result, project, past, reason string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(project, "scratch"), 0o755))
	res := run(t, "exec_command", "rm -rf ./scratch")
	require.Equal(t, contract.StatusFailed, res.Status, "rm -rf ran past %s: %+v", past, res.Output)
	assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, "%+v", res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, cmp.Or(reason, "rm -rf is not allowed"))
	assert.DirExists(t, filepath.Join(project, "scratch"))
}

// A fleet's settings file, outside every workspace, whose guard is each
// workspace's own script ("$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh, as
// Claude Code documents it): the hook used to never start there (the
// quoted variable rendered as /.claude/...), and once it did, an agent
// that rewrote its workspace's guard through exec_command turned it off
// for its next call. The guard is pinned at its first run in the
// workspace, on the dev server.
func TestFleetSettingsPinEachWorkspacesGuard(t *testing.T) {
	fleet := filepath.Join(t.TempDir(), "fleet", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(fleet), 0o755))
	require.NoError(t, os.WriteFile(fleet, []byte(`{"hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}]}}`), 0o644))
	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "guard.sh"),
		[]byte("#!/bin/sh\nif grep -q 'rm -rf'; then echo 'workspace policy: rm -rf is not allowed' >&2; exit 2; fi\nexit 0\n"), 0o755))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{fleet}
		c.DefaultWorkspaceRoot = project
	})
	run := commandRunner(w, project, "fleet")
	requireBlocked := func(t *testing.T, when string) {
		requireRmBlocked(t, run, project, "workspace policy: rm -rf is not allowed", when)
	}
	requireBlocked(t, "at the first run")
	rewrite := `printf '#!/bin/sh\nexit 0\n' > .claude/hooks/guard.sh`
	res := run(t, "exec_command", rewrite)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.NotNil(t, res.Output)
	if os.Geteuid() == 0 {
		// Read-only to a root worker's commands; rewritten from outside,
		// as a non-root worker's command could, to show the pins hold.
		assert.Contains(t, res.Output.Content, "Read-only file system")
		shellIn(t, project, rewrite)
	} else {
		assert.Contains(t, res.Output.Content, "It changed protected paths (.claude/hooks/guard.sh)")
	}
	requireBlocked(t, "after the agent rewrote its workspace's guard")

	// A restart (a deploy, a crash) used to pin the guard again at its
	// first run, from what the agent had written: the worker records
	// the pins next to the accepted policy and runs them.
	w.Stop()
	restarted := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{fleet}
		c.DefaultWorkspaceRoot = project
		c.DataDir = w.dataDir
	})
	again := commandRunner(restarted, project, "fleet-restarted")
	requireRmBlocked(t, again, project, "workspace policy: rm -rf is not allowed", "after a restart")

	// The operator's SIGHUP accepts what the workspaces hold now.
	_, err := restarted.ReloadHooks()
	require.NoError(t, err)
	res = again(t, "exec_command", "rm -rf ./scratch")
	require.Equal(t, contract.StatusCompleted, res.Status, "after SIGHUP the workspace's guard (now exit 0) is pinned afresh: %+v", res.Error)
}
