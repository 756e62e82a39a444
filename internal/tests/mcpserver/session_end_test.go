package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/workflows"
)

// An MCP session is its calls' conversation: when the client closes it,
// the conversation's session ends (SessionEnd, reason other).
func TestClosingTheMCPSessionEndsItsConversation(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; the session fixture's hooks are python3 and bash")
	}
	// A project whose Claude Code SessionEnd hook logs its input.
	project := filepath.Join(t.TempDir(), "session-project")
	require.NoError(t, os.CopyFS(project, os.DirFS(filepath.Join(env.RepoRoot, "hooks", "claudecode", "testdata", "session-project"))))
	queue := fmt.Sprintf("fenix-mcp-session-%d", os.Getpid())
	registry, err := testtools.WithBuiltins()
	require.NoError(t, err)
	fw, err := worker.New(env.Server.Client(), worker.Config{TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: project,
		Tools: registry, HookSources: []string{project}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	require.NoError(t, err)
	require.NoError(t, fw.Start())
	t.Cleanup(fw.Stop)
	w := &testWorker{Worker: fw, queue: queue, workspace: project}
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"calculator"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "session-end", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "6 * 7"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	conversation := cs.ID()
	require.NotEmpty(t, conversation)

	state := func() workflows.ConversationSessionState {
		var st workflows.ConversationSessionState
		v, err := env.Server.Client().QueryWorkflow(ctx, workflows.SessionWorkflowID(w.queue, conversation), "", workflows.QuerySession)
		if err == nil {
			_ = v.Get(&st)
		}
		return st
	}
	require.True(t, state().Started, "the call started its conversation's session")
	require.NoError(t, cs.Close())
	require.Eventually(t, func() bool { return state().Ended }, 30*time.Second, 200*time.Millisecond, "the session ends with the MCP session")
	assert.Equal(t, hooks.EndReasonOther, state().EndReason)
	raw, err := os.ReadFile(filepath.Join(project, ".claude", "hook-events.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"hook_event_name":"SessionEnd"`)
	assert.Contains(t, string(raw), `"reason":"other"`)
}
