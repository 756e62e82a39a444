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
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers": {"notes": {"type": "http", "url": "`+srv.URL+`"}}}`), 0o644))
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

	srv.RevokeAll()
	res = call("oauth-withdrawn")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "worker mcp-login notes")
}
