//go:build linux

package confine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/workspace"
)

// shWith runs script confined in workspace through StartCommand with the
// read-only paths readOnly, in group ("" for a domain of its own).
func shWith(t *testing.T, c *Confiner, workspace, group string, readOnly []string, script string) (int, string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = workspace
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	release, err := c.StartCommand(cmd, CommandOptions{Workspace: workspace, Group: group, ReadOnly: readOnly})
	require.NoError(t, err)
	err = cmd.Wait()
	release()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String()
	}
	require.NoError(t, err)
	return 0, out.String()
}

// gitRig is a layout, a confiner hiding its state that can make mount
// namespaces, and git; the test skips without either.
func gitRig(t *testing.T) (layout, *Confiner, string) {
	t.Helper()
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	if err := c.ReadOnlyUnavailable(); err != nil {
		t.Skipf("no mount namespaces here: %v", err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	return l, c, git
}

// A command wrote .git/config or .git/hooks, the project's hook settings
// and the MCP configuration; a hook that later ran git in the workspace
// ran what it wrote, outside its sandbox. In a mount namespace of its own
// it reads them and cannot write, replace or remove them, nor rename a
// directory that holds them (to swap in one of its own), nor the
// workspace; everything else in the workspace, git's own writes among
// them, works as before, and nothing changes for the worker.
func TestCommandsCannotRewriteWhatGovernsTheAgent(t *testing.T) {
	l, c, git := gitRig(t)
	ws := l.ws
	run := func(args ...string) {
		out, err := exec.Command(git, append([]string{"-C", ws}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	run("init", "-q")
	require.NoError(t, os.RemoveAll(filepath.Join(ws, ".git", "hooks")))
	files := map[string]string{
		".claude/settings.json":       `{"permissions":{"deny":["Bash(rm *)"]}}`,
		".claude/hooks/guard.sh":      "#!/bin/sh\nexit 2\n",
		".mcp.json":                   `{"mcpServers":{}}`,
		"servers/notes.sh":            "#!/bin/sh\necho notes\n",
		"src/main.go":                 "package main\n",
		"linked-claude/settings.json": "{}",
	}
	for rel, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644))
	}
	gitConfig, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)) // as CommandReadOnly makes it
	readOnly := []string{".claude", ".fenix/hooks.json", ".mcp.json", ".git/hooks", ".git/config", ".git/commondir", ".git/config.worktree", "servers/notes.sh", "missing/file"}

	for _, attack := range []string{
		`echo '[core] fsmonitor = /tmp/x' >> .git/config`,
		`printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/post-checkout`,
		`rm -rf .git/hooks`,
		`mv .git/config .git/config.old`,
		`echo '{}' > .claude/settings.json`,
		`rm -rf .claude`,
		`mv .claude claude-old`,
		`mv .git git-old`,
		`echo '{"mcpServers":{"evil":{"command":"sh"}}}' > .mcp.json`,
		`rm .mcp.json`,
		`echo 'touch /tmp/pwned' >> servers/notes.sh`,
		`mv servers servers-old && mkdir servers`,
		`cd .. && mv ws ws-old`,
		`ln -f .git/config hard && echo x >> hard`,
	} {
		code, out := shWith(t, c, ws, "", readOnly, attack)
		assert.NotZero(t, code, "%s: allowed (%s)", attack, out)
	}
	for rel, content := range files {
		got, err := os.ReadFile(filepath.Join(ws, rel))
		if assert.NoError(t, err, rel) {
			assert.Equal(t, content, string(got), rel)
		}
	}
	got, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(gitConfig), string(got))
	entries, err := os.ReadDir(filepath.Join(ws, ".git", "hooks"))
	require.NoError(t, err)
	assert.Empty(t, entries)

	// What the agent does with its project works: files anywhere else,
	// new entries in the root, git's commits.
	code, out := shWith(t, c, ws, "conversation-1", readOnly, `set -e
echo more >> src/main.go; echo new > new.txt; mkdir -p build/out; rm -rf build
cat .claude/settings.json .git/config >/dev/null
git add -A && git -c user.name=agent -c user.email=agent@example.com commit -qm work && git log --oneline | wc -l`)
	require.Zero(t, code, out)
	assert.Equal(t, "1\n", out)

	// A symbolic link that stays in the workspace protects its target.
	require.NoError(t, os.RemoveAll(filepath.Join(ws, ".claude")))
	require.NoError(t, os.Symlink("linked-claude", filepath.Join(ws, ".claude")))
	code, out = shWith(t, c, ws, "", readOnly, `echo x > linked-claude/settings.json`)
	assert.NotZero(t, code, out)

	// The worker's own view is untouched: it writes them as before.
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Rename(filepath.Join(ws, "servers"), filepath.Join(ws, "servers-moved")))
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), ws)
}

// What the read-only paths cost a command: a mount namespace and a bind
// mount for each path and each directory leading to one, against the
// same command without them.
func BenchmarkStartCommandReadOnly(b *testing.B) {
	root := b.TempDir()
	ws := filepath.Join(root, "ws")
	for _, d := range []string{".git/hooks", ".claude/hooks", "state"} {
		require.NoError(b, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	for _, f := range []string{".git/config", ".claude/settings.json", ".mcp.json"} {
		require.NoError(b, os.WriteFile(filepath.Join(ws, f), []byte("{}"), 0o644))
	}
	c, err := New(Policy{Hidden: []string{filepath.Join(root, "state")}})
	if errors.Is(err, ErrUnavailable) {
		b.Skip(err)
	}
	require.NoError(b, err)
	defer c.Close()
	if err := c.ReadOnlyUnavailable(); err != nil {
		b.Skip(err)
	}
	readOnly := []string{".claude", ".fenix/hooks.json", ".mcp.json", ".git/hooks", ".git/config", ".git/commondir", ".git/config.worktree"}
	for _, bc := range []struct {
		name     string
		readOnly []string
	}{{"none", nil}, {"governing", readOnly}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				cmd.Dir = ws
				release, err := c.StartCommand(cmd, CommandOptions{Workspace: ws, ReadOnly: bc.readOnly})
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
	}
}

// What holding a home's protected paths by mounts (Policy.HeldByMounts,
// an MCP server's start) costs against cutting the rules around them:
// the data directory with its plugins' data, a git configuration and a
// PATH directory in the home.
func BenchmarkStartCommandHeldByMounts(b *testing.B) {
	home := b.TempDir()
	state := filepath.Join(home, ".local", "state", "fenix")
	for _, d := range []string{filepath.Join(state, "plugin-data"), filepath.Join(home, ".local", "bin"), filepath.Join(home, "ws")} {
		require.NoError(b, os.MkdirAll(d, 0o755))
	}
	require.NoError(b, os.WriteFile(filepath.Join(home, ".gitconfig"), nil, 0o644))
	policy := Policy{Hidden: []string{state, filepath.Join(state, "audit.db")}, ReadOnly: []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".local", "bin")},
		Writable: []string{filepath.Join(state, "plugin-data")}}
	for _, held := range []bool{false, true} {
		policy.HeldByMounts = held
		c, err := New(policy)
		if errors.Is(err, ErrUnavailable) {
			b.Skip(err)
		}
		require.NoError(b, err)
		if err := c.ReadOnlyUnavailable(); err != nil {
			c.Close()
			b.Skip(err)
		}
		name := map[bool]string{false: "cut", true: "held"}[held]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				release, err := c.StartCommand(cmd, CommandOptions{Workspace: filepath.Join(home, "ws")})
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
		c.Close()
	}
}

// Claude Code's sandbox holds its deny lists inside the project too: a
// settings file's denyRead ".env" is unreadable to the commands it
// sandboxes, and denyWrite "config/prod.yaml" read-only. Landlock could
// not (a rule cut around them costs the workspace's root its new
// entries), so Fenix skipped them; the command's mount namespace holds
// them now, relative ones in every workspace and absolute ones in theirs.
func TestSandboxDenyListsHoldInsideTheWorkspace(t *testing.T) {
	l := newLayout(t)
	ws := l.ws
	files := map[string]string{".env": "API_KEY=s3cret-env", "secrets/key": "s3cret-key", "config/prod-key": "s3cret-prod",
		"config/prod.yaml": "replicas: 3\n", "config/dev.yaml": "replicas: 1\n"}
	for rel, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644))
	}
	c := newConfiner(t, Policy{Hidden: []string{l.state}, Boundary: &Boundary{Writable: []string{"/tmp"},
		DenyRead:  []string{".env", "secrets", filepath.Join(ws, "config", "prod-key"), "missing"},
		DenyWrite: []string{"config/prod.yaml"}}})
	if err := c.ReadOnlyUnavailable(); err != nil {
		t.Skipf("no mount namespaces here: %v", err)
	}
	for _, attack := range []string{"cat .env", "cat secrets/key", "cat config/prod-key", "ls -A secrets | grep -q key",
		"echo x >> config/prod.yaml", "rm .env", "mv secrets s2", "cp .env copy && cat copy"} {
		code, out := shWith(t, c, ws, "", nil, attack)
		assert.NotZero(t, code, "%s: allowed (%s)", attack, out)
		assert.NotContains(t, out, "s3cret", attack)
	}
	code, out := shWith(t, c, ws, "", nil, "cat config/prod.yaml config/dev.yaml && echo 'replicas: 2' > config/dev.yaml && echo new > notes.txt")
	require.Zero(t, code, out)
	assert.Equal(t, "replicas: 3\nreplicas: 1\n", out)
	for rel, content := range files {
		if rel == "config/dev.yaml" {
			continue
		}
		got, err := os.ReadFile(filepath.Join(ws, rel))
		require.NoError(t, err)
		assert.Equal(t, content, string(got), rel)
	}
}

// A workspace that is a linked worktree (an agent platform's worktree per
// task) has a .git file naming the repository's git directory, outside
// the workspace, whose config and hooks its git reads and the main
// checkout's commits run. Without a write boundary a command could
// rewrite them, or rename the repository's .git to swap in another; they
// are read-only to it, and its own commits still work.
func TestLinkedWorktreesRepositoryIsReadOnlyToCommands(t *testing.T) {
	l, c, git := gitRig(t)
	repo := filepath.Join(l.other, "repo")
	wt := filepath.Join(l.root, "task-1")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-q", "--allow-empty", "-m", "start"},
		{"-C", repo, "worktree", "add", "-q", wt}} {
		out, err := exec.Command(git, args...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	ws, err := workspace.Open(wt)
	require.NoError(t, err)
	defer ws.Close()
	readOnly := ws.CommandReadOnly()
	assert.Contains(t, readOnly, filepath.Join(repo, ".git", "config"))
	config, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)

	for _, attack := range []string{
		"git config core.fsmonitor /tmp/x",
		"echo '[core] fsmonitor = /tmp/x' >> " + filepath.Join(repo, ".git", "config"),
		"printf '#!/bin/sh\\n' > " + filepath.Join(repo, ".git", "hooks", "post-commit"),
		"echo /tmp > " + filepath.Join(repo, ".git", "worktrees", "task-1", "commondir"),
		"mv " + filepath.Join(repo, ".git") + " " + filepath.Join(repo, "git-old"),
		"echo 'gitdir: /tmp/evil' > .git",
	} {
		code, out := shWith(t, c, wt, "", readOnly, attack)
		assert.NotZero(t, code, "%s: allowed (%s)", attack, out)
	}
	got, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(got))
	assert.NoFileExists(t, filepath.Join(repo, ".git", "hooks", "post-commit"))

	code, out := shWith(t, c, wt, "", readOnly, "echo work > work.txt && git add work.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm work && git log --oneline | wc -l")
	require.Zero(t, code, out)
	assert.Equal(t, "2\n", out)
}

// A submodule's git directory is in the repository's .git/modules, and
// git runs its hooks on a commit or checkout in the submodule and reads
// its config there (the hooks' git status in the workspace reads every
// submodule's). A command could rewrite them as it could the
// repository's own; they are read-only to it too, and its commits in the
// submodule still work.
func TestSubmodulesGitDirectoriesAreReadOnlyToCommands(t *testing.T) {
	l, c, git := gitRig(t)
	lib := filepath.Join(l.other, "lib")
	commit := []string{"-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-q"}
	for _, args := range [][]string{{"init", "-q", lib}, append([]string{"-C", lib}, append(commit, "--allow-empty", "-m", "lib")...),
		{"-C", l.ws, "init", "-q"}, {"-C", l.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib"},
		append([]string{"-C", l.ws}, append(commit, "-m", "with lib")...)} {
		out, err := exec.Command(git, args...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	ws, err := workspace.Open(l.ws)
	require.NoError(t, err)
	defer ws.Close()
	readOnly := ws.CommandReadOnly()
	modules := filepath.Join(l.ws, ".git", "modules", "vendor", "lib")
	config, err := os.ReadFile(filepath.Join(modules, "config"))
	require.NoError(t, err)

	for _, attack := range []string{
		`printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/modules/vendor/lib/hooks/post-checkout`,
		`git -C vendor/lib config core.fsmonitor /tmp/x`,
		`echo '[core] hooksPath = /tmp' >> .git/modules/vendor/lib/config`,
		`mv .git/modules/vendor/lib/config .git/modules/vendor/lib/config.old`,
		`rm -rf .git/modules/vendor/lib/hooks`,
		`mv .git/modules/vendor/lib .git/modules/vendor/lib-old`,
	} {
		code, out := shWith(t, c, l.ws, "", readOnly, attack)
		assert.NotZero(t, code, "%s: allowed (%s)", attack, out)
	}
	got, err := os.ReadFile(filepath.Join(modules, "config"))
	require.NoError(t, err)
	assert.Equal(t, string(config), string(got))
	assert.NoFileExists(t, filepath.Join(modules, "hooks", "post-checkout"))

	code, out := shWith(t, c, l.ws, "", readOnly, `cd vendor/lib && echo work > work.txt && git add work.txt &&
git -c user.name=agent -c user.email=agent@example.com commit -qm work && git log --oneline | wc -l`)
	require.Zero(t, code, out)
	assert.Equal(t, "2\n", out)
}

// An MCP server that made a directory of its own in the home
// (desktop-commander's ~/.claude-server-commander) was refused: the rules
// cut around the home's protected paths let nothing new be made in a
// directory leading to one. Held by mounts (Policy.HeldByMounts), the
// paths are as protected — the hidden one unreadable, the read-only ones
// neither written, replaced, removed nor linked, no directory on the way
// renamed — and the directories keep their new entries. A protected path
// that does not exist is still cut out of the rules, and the worker's
// view is unchanged.
func TestHeldPathsLeaveTheirDirectoriesNewEntries(t *testing.T) {
	l := newLayout(t)
	home := l.root
	gitconfig := filepath.Join(home, ".gitconfig")
	localBin := filepath.Join(home, ".local", "bin")
	require.NoError(t, os.MkdirAll(localBin, 0o755))
	require.NoError(t, os.WriteFile(gitconfig, []byte("[user]\n\tname = worker\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(localBin, "jq"), []byte("#!/bin/sh\necho real jq\n"), 0o755))
	pluginData := filepath.Join(l.state, "plugin-data")
	require.NoError(t, os.MkdirAll(pluginData, 0o755))
	policy := Policy{Hidden: []string{l.state}, ReadOnly: []string{gitconfig, localBin}, Writable: []string{pluginData}}
	cut := newConfiner(t, policy)
	if err := cut.ReadOnlyUnavailable(); err != nil {
		t.Skipf("no mount namespaces here: %v", err)
	}
	policy.HeldByMounts = true
	held := newConfiner(t, policy)
	assert.Contains(t, held.String(), "held in a mount namespace per process")

	script := `export H=` + home + `
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1: done"; else echo "$1: refused"; fi; }
try mkdir 'mkdir "$H/.server-config" && echo {} > "$H/.server-config/config.json"'
try mktemp 'mktemp -d -p "$H"'
try local-entry 'touch "$H/.local/state-of-mine"'
try read-hidden 'cat "$H/state/audit.db"'
try list-hidden 'ls "$H/state" | grep -q audit'
try write-hidden 'echo x > "$H/state/planted"'
try write-gitconfig 'echo "[core]" >> "$H/.gitconfig"'
try remove-gitconfig 'rm -f "$H/.gitconfig"'
try replace-gitconfig 'echo x > "$H/gc" && mv -f "$H/gc" "$H/.gitconfig"'
try link-gitconfig 'ln "$H/.gitconfig" "$H/gc-link"'
try plant-bin 'echo "#!/bin/sh" > "$H/.local/bin/git"'
try rewrite-bin 'echo x > "$H/.local/bin/jq"'
try rename-local 'mv "$H/.local" "$H/.local-old"'
try rename-state 'mv "$H/state" "$H/state-old"'
try run-bin '"$H/.local/bin/jq" | grep -q "real jq"'
try plugin-data 'echo kept > "$H/state/plugin-data/cache" && grep -q kept "$H/state/plugin-data/cache"'
try beside-plugin-data 'echo x > "$H/state/other"'
`
	code, out := sh(t, held, l.ws, script)
	require.Zero(t, code, out)
	for _, line := range []string{"mkdir: done", "mktemp: done", "local-entry: done", "run-bin: done", "plugin-data: done",
		"beside-plugin-data: refused", "read-hidden: refused", "list-hidden: refused", "write-hidden: refused", "write-gitconfig: refused",
		"remove-gitconfig: refused", "replace-gitconfig: refused", "link-gitconfig: refused", "plant-bin: refused",
		"rewrite-bin: refused", "rename-local: refused", "rename-state: refused"} {
		assert.Contains(t, out, line)
	}
	raw, err := os.ReadFile(filepath.Join(home, ".server-config", "config.json"))
	require.NoError(t, err, "the server's directory is in the worker's home, not its namespace only")
	assert.Equal(t, "{}\n", string(raw))
	raw, err = os.ReadFile(filepath.Join(pluginData, "cache"))
	require.NoError(t, err, "the writable path inside the hidden one is the worker's, not a copy")
	assert.Equal(t, "kept\n", string(raw))
	raw, err = os.ReadFile(gitconfig)
	require.NoError(t, err)
	assert.Equal(t, "[user]\n\tname = worker\n", string(raw))
	raw, err = os.ReadFile(l.audit)
	require.NoError(t, err)
	assert.Equal(t, "audit rows", string(raw))
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotContains(t, string(mounts), home, "the mounts stay in the command's namespace")

	// Cut out of the rules, the same home takes no new entry.
	_, out = sh(t, cut, l.ws, script)
	assert.Contains(t, out, "mkdir: refused")
	assert.Contains(t, out, "write-gitconfig: refused")

	// A protected path that is not there yet cannot be held by a mount: it
	// is cut out of the rules, so its directory takes no new entry.
	policy.ReadOnly = append(policy.ReadOnly, filepath.Join(home, ".npmrc"))
	absent := newConfiner(t, policy)
	_, out = sh(t, absent, l.ws, `export H=`+home+`
if touch "$H/.npmrc" 2>/dev/null; then echo planted; else echo refused; fi`)
	assert.Contains(t, out, "refused")
	assert.NoFileExists(t, filepath.Join(home, ".npmrc"))
}
