package claudecode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/hooks"
)

// runInSession runs a command the way exec_command does with a session
// environment: the lines, then the command, in one sh.
func runInSession(t *testing.T, env, command string) string {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", env+"\n"+command).CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

func sessionStart(t *testing.T, hs ...hooks.AgentHook) hooks.Summary {
	t.Helper()
	s := hooks.Session{SessionID: "conv-1", WorkspaceRoot: t.TempDir()}
	return registryOf(hs...).RunSessionStart(context.Background(), hooks.SessionStartEvent{Session: s, Source: hooks.SourceStartup})
}

// Two hooks as users write them from Claude Code's reference: one appends
// exports, one (bash) records what a toolchain setup changed with the
// `export -p` before/after idiom, which writes bash's declare -x lines.
// The session's commands, run by sh, see both, in hook order.
func TestSessionStartHooksWriteClaudeEnvFile(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for the export -p idiom")
	}
	dir := t.TempDir()
	appends := scriptHook(t, dir, "SessionStart", `
if [ -n "$CLAUDE_ENV_FILE" ]; then
  echo 'export NODE_ENV=production' >> "$CLAUDE_ENV_FILE"
  echo 'export PATH="$PATH:./node_modules/.bin"' >> "$CLAUDE_ENV_FILE"
fi`, claude)
	toolchain := filepath.Join(dir, "toolchain.sh")
	require.NoError(t, os.WriteFile(toolchain, []byte(`#!/bin/bash
ENV_BEFORE=$(export -p | sort)
export TOOLCHAIN_HOME="/opt/tool chain"
export GREETING='say "hi" for $5'
if [ -n "$CLAUDE_ENV_FILE" ]; then
  ENV_AFTER=$(export -p | sort)
  comm -13 <(echo "$ENV_BEFORE") <(echo "$ENV_AFTER") >> "$CLAUDE_ENV_FILE"
fi
echo "toolchain ready"
`), 0o755))
	setup := newCommandHook(t, cmdHook{Event: "SessionStart", Command: toolchain, Dialect: DialectClaude})

	sum := sessionStart(t, appends, setup)
	require.NoError(t, sum.Err())
	require.Contains(t, sum.SessionEnv, "export NODE_ENV=production\n")
	require.Contains(t, sum.SessionEnv, `export TOOLCHAIN_HOME="/opt/tool chain"`, "declare -x is read as export")
	require.NotContains(t, sum.SessionEnv, "declare -x")
	require.Equal(t, "toolchain ready", sum.AdditionalContext, "the hook's output is still its context")
	require.Contains(t, sum.Decisions[0].Reason, "wrote CLAUDE_ENV_FILE")

	out := runInSession(t, sum.SessionEnv, `printf '%s|%s|%s|%s' "$NODE_ENV" "$TOOLCHAIN_HOME" "$GREETING" "$PATH"`)
	parts := strings.SplitN(out, "|", 4)
	require.Equal(t, []string{"production", "/opt/tool chain", `say "hi" for $5`}, parts[:3])
	require.True(t, strings.HasSuffix(parts[3], ":./node_modules/.bin"), "PATH is the command's own plus the hook's addition: %s", parts[3])
}

// The file sits in a directory of its own that only the worker's user
// can enter, and is gone once the hook's lines are read.
func TestClaudeEnvFileIsPrivateAndRemoved(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen")
	h := scriptHook(t, dir, "SessionStart", `echo "$CLAUDE_ENV_FILE" > `+seen+`; stat -c %a "$(dirname "$CLAUDE_ENV_FILE")" >> `+seen+`; echo 'export A=1' > "$CLAUDE_ENV_FILE"`, claude)
	sum := sessionStart(t, h)
	require.NoError(t, sum.Err())
	require.Equal(t, "export A=1\n", sum.SessionEnv)
	got, err := os.ReadFile(seen)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	require.Len(t, lines, 2)
	require.Equal(t, envFileName, filepath.Base(lines[0]))
	require.Equal(t, "700", lines[1])
	_, err = os.Stat(filepath.Dir(lines[0]))
	require.True(t, os.IsNotExist(err), "the file's directory is removed after the hook")
}

// A file sh cannot parse would stop every later command: it is not
// applied, the hook's decision says why, and its context still counts.
// So is one over the size limit; a Fenix dialect hook gets no file.
func TestClaudeEnvFileThatCannotApply(t *testing.T) {
	dir := t.TempDir()
	broken := scriptHook(t, dir, "SessionStart", `echo 'export FOO="unterminated' >> "$CLAUDE_ENV_FILE"; echo context kept`, claude)
	sum := sessionStart(t, broken)
	require.Empty(t, sum.SessionEnv)
	require.Equal(t, "context kept", sum.AdditionalContext)
	require.ErrorContains(t, sum.Err(), "CLAUDE_ENV_FILE is not applied: sh cannot parse it")

	huge := scriptHook(t, dir, "SessionStart", `head -c 70000 /dev/zero | tr '\0' 'x' | sed 's/^/export BIG=/' >> "$CLAUDE_ENV_FILE"`, claude)
	sum = sessionStart(t, huge)
	require.Empty(t, sum.SessionEnv)
	require.ErrorContains(t, sum.Err(), "over the limit of 65536")

	fenixDialect := scriptHook(t, dir, "SessionStart", `if [ -n "$CLAUDE_ENV_FILE" ]; then echo 'export LEAK=1' >> "$CLAUDE_ENV_FILE"; fi; echo "file:${CLAUDE_ENV_FILE:-none}"`)
	sum = sessionStart(t, fenixDialect)
	require.NoError(t, sum.Err())
	require.Empty(t, sum.SessionEnv)
	require.Equal(t, "file:none", sum.AdditionalContext)
}

// Claude Code sources a hook's file whatever the hook's exit status.
func TestClaudeEnvFileAppliesWhateverTheExitStatus(t *testing.T) {
	dir := t.TempDir()
	h := scriptHook(t, dir, "SessionStart", `echo 'export READY=yes' >> "$CLAUDE_ENV_FILE"; exit 1`, claude)
	sum := sessionStart(t, h)
	require.Error(t, sum.Err(), "exit 1 is still a hook error")
	require.Equal(t, "yes", runInSession(t, sum.SessionEnv, `echo "$READY"`))
}

func TestShLinesReadsDeclareAsExport(t *testing.T) {
	got := shLines("declare -x A=\"1\"\ndeclare -rx B=\"two\nlines\"\ndeclare -ax ARR=([0]=\"x\")\ndeclare -x ONLY\nexport C=3\n")
	require.Equal(t, "export A=\"1\"\nexport B=\"two\nlines\"\n# fenix: array ARR left out (sh has no arrays)\nexport ONLY\nexport C=3\n", got)
}

// The file is read as the hook left it, never through a link or a FIFO
// put in its place (a FIFO would hang the read, a link would read any
// file the worker can).
func TestClaudeEnvFileReplacedIsNotRead(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.sh")
	require.NoError(t, os.WriteFile(target, []byte("export FROM_ELSEWHERE=1\n"), 0o644))
	linked := scriptHook(t, dir, "SessionStart", `rm "$CLAUDE_ENV_FILE"; ln -s `+target+` "$CLAUDE_ENV_FILE"`, claude)
	sum := sessionStart(t, linked)
	require.Empty(t, sum.SessionEnv)
	require.ErrorContains(t, sum.Err(), "replaced by a symbolic link")

	fifo := scriptHook(t, dir, "SessionStart", `rm "$CLAUDE_ENV_FILE"; mkfifo "$CLAUDE_ENV_FILE"`, claude)
	sum = sessionStart(t, fifo)
	require.Empty(t, sum.SessionEnv)
	require.ErrorContains(t, sum.Err(), "no longer a regular file")
}
