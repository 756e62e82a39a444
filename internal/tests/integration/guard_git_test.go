package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
)

// Hooks run git in the project, as teams' hooks do (a guard that looks at
// `git status` before letting a command through). A sandboxed command
// could not write outside the workspace, but it could write the
// workspace's .git/config: a core.fsmonitor there is run by the next
// `git status`, the hook's, outside the sandbox — its command wrote
// where the sandbox refused the agent's own. Commands now start in a
// mount namespace where what governs the agent (git's hooks and config,
// .claude, .mcp.json) is read-only, so the config is never written and
// the hook's git runs only git, also where the agent made a repository of
// its own (the hooks' git runs with core.fsmonitor off); the agent's git
// commits still work.
func TestSandboxedCommandsCannotPlantCodeForTheHooksGit(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("the kernel has no Landlock ABI 2")
	}
	if os.Geteuid() != 0 {
		t.Skip("read-only paths in a command's workspace need a root worker")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	outside := t.TempDir()
	marker := filepath.Join(outside, "planted-code-ran")
	project := writeClaudeProject(t, "", map[string]string{"git-guard.sh": `#!/bin/sh
cat >/dev/null
cd "$CLAUDE_PROJECT_DIR" || exit 0
if git status --porcelain | grep -q '^ M secrets/'; then
  echo "secrets/ has uncommitted changes: commit or revert them first" >&2; exit 2
fi
exit 0
`}, `{"sandbox": {"enabled": true}, "hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/git-guard.sh"}]}
]}}`)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", "project"}} {
		out, err := exec.Command(git, append([]string{"-C", project}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "git-plant")

	// The sandbox holds: the agent cannot write outside on its own.
	res := run(t, "exec_command", "touch "+marker+" || echo refused")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "refused")

	plant := fmt.Sprintf(`printf '#!/bin/sh\ntouch %s\n' > fsmonitor.sh; chmod +x fsmonitor.sh
git config core.fsmonitor "$PWD/fsmonitor.sh" 2>&1 || echo config-refused
printf '#!/bin/sh\ntouch %s\n' > .git/hooks/post-commit 2>&1 || echo hooks-refused
echo '{}' > .claude/settings.json 2>&1 || echo settings-refused`, marker, marker)
	res = run(t, "exec_command", plant)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	for _, refused := range []string{"config-refused", "hooks-refused", "settings-refused"} {
		assert.Contains(t, res.Output.Content, refused)
	}

	// A repository of the agent's own in a subdirectory, added to the
	// index: the guard's git status in the workspace runs git status in
	// it too, with its config, whose fsmonitor the hooks' git ignores.
	embedded := fmt.Sprintf(`mkdir -p vendor/tool && cd vendor/tool && git init -q && echo x > x && git add x &&
git -c user.name=a -c user.email=a@example.com commit -qm x &&
printf '#!/bin/sh
touch %s
' > fsmonitor.sh && chmod +x fsmonitor.sh && git config core.fsmonitor "$PWD/fsmonitor.sh" &&
cd ../.. && git add vendor/tool 2>/dev/null && echo embedded`, marker)
	res = run(t, "exec_command", embedded)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Contains(t, res.Output.Content, "embedded")

	// The next call's guard runs git status; the agent's own commit works.
	res = run(t, "exec_command", "echo work > work.txt && git add work.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm work && git log --oneline | wc -l")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "2")
	assert.NoFileExists(t, marker, "the hook's git ran the agent's code")
	config, err := os.ReadFile(filepath.Join(project, ".git", "config"))
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(config), "fsmonitor"), "%s", config)
}

// A project's sandbox settings deny reads of its .env and writes to its
// production config, as teams write them for Claude Code, whose sandbox
// holds them inside the project. Fenix skipped deny paths inside the
// workspace with a warning; the commands' mount namespace holds them now,
// and the rest of the project is the agent's as before. So are the files
// Claude Code's sandbox holds whatever the settings say: the editor's
// project settings (a VS Code task that runs when a person opens the
// folder) and the submodule list.
func TestSandboxDenyListsHoldInTheProject(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("the kernel has no Landlock ABI 2")
	}
	if os.Geteuid() != 0 {
		t.Skip("deny lists inside a command's workspace need a root worker")
	}
	project := writeClaudeProject(t, "", nil, `{"sandbox": {"enabled": true,
  "filesystem": {"denyRead": [".env", "/deploy/keys"], "denyWrite": ["config/prod.yaml"]}}}`)
	files := map[string]string{".env": "STRIPE_KEY=sk_live_s3cret\n", "deploy/keys/id_ed25519": "s3cret-key\n", "config/prod.yaml": "replicas: 3\n",
		".vscode/settings.json": "{}\n", ".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"}
	for rel, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(project, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(project, rel), []byte(content), 0o644))
	}
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "deny-lists")
	for _, attack := range []string{"cat .env", "cat deploy/keys/id_ed25519", "echo 'replicas: 0' > config/prod.yaml", "rm .env",
		`echo '{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"sh x.sh","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json`,
		"git config -f .gitmodules submodule.lib.url /tmp/evil", "mv .vscode vscode-old"} {
		res := run(t, "exec_command", attack+" && echo ESCAPED || echo refused")
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		assert.Contains(t, res.Output.Content, "refused", attack)
		assert.NotContains(t, res.Output.Content, "ESCAPED", attack)
		assert.NotContains(t, res.Output.Content, "s3cret", attack)
	}
	assert.NoFileExists(t, filepath.Join(project, ".vscode", "tasks.json"))
	res := run(t, "exec_command", "cat config/prod.yaml && echo ok > notes.txt && cat notes.txt")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "replicas: 3\nok")
	for rel, content := range files {
		got, err := os.ReadFile(filepath.Join(project, rel))
		require.NoError(t, err)
		assert.Equal(t, content, string(got), rel)
	}
}

// Commands get their workspace as HOME, so its .gitconfig is the global
// git configuration of every git they run. A project that lets the agent
// edit files and run git status (dontAsk, Edit and Bash(git status)
// allowed) let it write a core.fsmonitor there with the file tools, which
// the next git status ran: code past a rule that allows only a read. The
// file tools refuse the commands' git configuration as they refuse
// .git/config.
func TestTheCommandsGlobalGitConfigIsNotTheFileToolsToWrite(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	marker := filepath.Join(t.TempDir(), "planted-code-ran")
	project := writeClaudeProject(t, "", nil, `{"permissions": {"defaultMode": "dontAsk", "allow": ["Edit", "Bash(git status)"]}}`)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", "project"}} {
		out, err := exec.Command(git, append([]string{"-C", project}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	run := toolRunner(startWorker(t, inProject(project)), project)
	for _, path := range []string{"src/../.gitconfig", ".config/git/config"} {
		res := run(t, "plant-"+strings.ReplaceAll(path, "/", "-"), "workspace_write", map[string]any{"path": path,
			"content": fmt.Sprintf("[core]\n\tfsmonitor = \"touch %s; false\"\n", marker)})
		require.Equal(t, contract.StatusFailed, res.Status, "%s: %+v", path, res.Output)
		assert.Equal(t, "protected_path", res.Error.Code, "%s: %+v", path, res.Error)
	}
	res := run(t, "status", "exec_command", map[string]any{"command_line": "git status"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.NoFileExists(t, marker, "git status ran code the agent planted")
	assert.NoFileExists(t, filepath.Join(project, ".gitconfig"))
}
