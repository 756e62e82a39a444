package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/oauthmcp"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools/mcp"
)

// A hosted MCP server that needs OAuth, as a Claude Code user adds one
// (`claude mcp add --transport http notes URL`, then /mcp to sign in),
// behind the project's hook, on the dev server: before the operator signs
// in, its tool fails naming `worker mcp-login`; after, the running worker
// takes the sign-in at its next connection and the governed call goes
// through; a token the server revoked is refreshed; a withdrawn grant
// fails the call with the command again, and the agent cannot read the
// stored tokens.
func TestRemoteMCPServerBehindOAuthOnDevServer(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	project := writeClaudeProject(t, "", map[string]string{"notes-guard.sh": "#!/bin/sh\ncat > /dev/null\nexit 0\n"}, `{"hooks": {"PreToolUse": [
  {"matcher": "mcp__notes__.*", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/notes-guard.sh"}]}
]}}`)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"notes": {"type": "http", "url": "`+srv.URL+`"},
  "legacy": {"type": "sse", "url": "`+srv.SSEURL+`"}}}`), 0o644))
	w := startWorker(t, inProject(project))
	require.NotNil(t, w.MCP())
	call := func(name string) contract.Result {
		res, _ := runAssignment(t, w.queue, mcpCall(name, "mcp__notes__whoami", map[string]any{}, "mcp__notes"))
		return res
	}

	res := call("oauth-before")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolUnavailable, res.Error.ErrorType, "%+v", res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, "worker mcp-login notes")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	login, err := worker.LoginMCP(ctx, worker.Config{DataDir: w.dataDir, HookSources: []string{project}, DefaultWorkspaceRoot: project}, "notes",
		mcp.LoginOptions{Open: oauthmcp.Browse})
	require.NoError(t, err)
	assert.Equal(t, 1, login.Tools)
	require.NoError(t, w.MCP().WaitReady(ctx, "notes"), "the running worker takes the sign-in at its next connection attempt")

	res = call("oauth-signed-in")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "signed in as "+oauthmcp.User, res.Output.Content)
	pre, ok := traceEntry(res, "pre_tool_use")
	require.True(t, ok)
	assert.Contains(t, fmt.Sprint(pre.Get("hooks")), "notes-guard.sh", "the project's hook governed the call")

	srv.RevokeAccessTokens()
	res = call("oauth-refreshed")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.EqualValues(t, 1, srv.Refreshes.Load())

	// The stored tokens are in the data directory, out of the agent's
	// reach.
	res = commandRunner(w, project, "oauth-steal")(t, "exec_command", "cat "+filepath.Join(w.dataDir, "mcp-oauth")+"/* 2>&1; true")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.NotContains(t, res.Output.Content, "refresh_token")

	// The same server over HTTP+SSE signs in the same way.
	legacy := func(name string) contract.Result {
		res, _ := runAssignment(t, w.queue, mcpCall(name, "mcp__legacy__whoami", map[string]any{}, "mcp__legacy"))
		return res
	}
	res = legacy("oauth-sse-before")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "worker mcp-login legacy")
	login, err = worker.LoginMCP(ctx, worker.Config{DataDir: w.dataDir, HookSources: []string{project}, DefaultWorkspaceRoot: project}, "legacy",
		mcp.LoginOptions{Open: oauthmcp.Browse})
	require.NoError(t, err)
	require.NoError(t, w.MCP().WaitReady(ctx, "legacy"))
	res = legacy("oauth-sse-signed-in")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "signed in as "+oauthmcp.User, res.Output.Content)

	srv.RevokeAll()
	res = call("oauth-withdrawn")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "worker mcp-login notes")
}

// A team's .mcp.json that gets its gateway token from a script
// (Claude Code's headersHelper), on the dev server: the governed call
// carries the token the script printed, and the script — which sits in
// the project, where the agent can rewrite it — runs in the hooks'
// confinement, out of the worker's data directory.
func TestHeadersHelperOnDevServer(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	cache := filepath.Join(t.TempDir(), "notes-token")
	require.NoError(t, os.WriteFile(cache, []byte(srv.IssueToken()), 0o600))
	project := writeClaudeProject(t, "", nil, `{}`)
	require.NoError(t, os.MkdirAll(filepath.Join(project, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"notes": {"type": "http", "url": "`+srv.URL+`", "headersHelper": "./scripts/mcp-token.sh"}}}`), 0o644))
	w := startWorker(t, inProject(project))
	script := "#!/bin/sh\n(cat " + filepath.Join(w.dataDir, "host-id") + "; head -c 16 " + filepath.Join(w.dataDir, "audit.db") + ") > \"$(dirname \"$0\")/seen.txt\" 2>&1\nprintf '{\"Authorization\": \"Bearer %s\"}' \"$(cat " + cache + ")\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(project, "scripts", "mcp-token.sh"), []byte(script), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx, "notes"), "%+v", w.MCP().Status())

	res, _ := runAssignment(t, w.queue, mcpCall("helper-whoami", "mcp__notes__whoami", map[string]any{}, "mcp__notes"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "signed in as "+oauthmcp.User, res.Output.Content)
	seen, err := os.ReadFile(filepath.Join(project, "scripts", "seen.txt"))
	require.NoError(t, err, "the helper ran")
	assert.NotContains(t, string(seen), w.Host.ID, "the helper read the worker's data directory")
	assert.NotContains(t, string(seen), "SQLite", "the helper read the audit log")
}
