package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/workflows"
)

// An MCP session is its calls' conversation: when the client closes it,
// the conversation's session ends (SessionEnd, reason other).
func TestClosingTheMCPSessionEndsItsConversation(t *testing.T) {
	w, project := sessionProjectWorker(t)
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

	state := func() workflows.ConversationSessionState { return sessionState(ctx, w.queue, conversation) }
	require.True(t, state().Started, "the call started its conversation's session")
	require.NoError(t, cs.Close())
	require.Eventually(t, func() bool { return state().Ended }, 30*time.Second, 200*time.Millisecond, "the session ends with the MCP session")
	assert.Equal(t, hooks.EndReasonOther, state().EndReason)
	raw, err := os.ReadFile(filepath.Join(project, ".claude", "hook-events.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"hook_event_name":"SessionEnd"`)
	assert.Contains(t, string(raw), `"reason":"other"`)
}

// sessionProjectWorker is a worker whose project's Claude Code SessionEnd
// hook logs its input to .claude/hook-events.jsonl.
func sessionProjectWorker(t *testing.T) (*testWorker, string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; the session fixture's hooks are python3 and bash")
	}
	project := filepath.Join(t.TempDir(), "session-project")
	require.NoError(t, os.CopyFS(project, os.DirFS(filepath.Join(env.RepoRoot, "hooks", "claudecode", "testdata", "session-project"))))
	queue := fmt.Sprintf("fenix-mcp-session-%d-%d", os.Getpid(), queueSeq.Add(1))
	registry, err := testtools.WithBuiltins()
	require.NoError(t, err)
	fw, err := worker.New(env.Server.Client(), worker.Config{TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: project,
		Tools: registry, HookSources: []string{project}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	require.NoError(t, err)
	require.NoError(t, fw.Start())
	t.Cleanup(fw.Stop)
	return &testWorker{Worker: fw, queue: queue, workspace: project}, project
}

func sessionState(ctx context.Context, queue, conversation string) workflows.ConversationSessionState {
	var st workflows.ConversationSessionState
	v, err := env.Server.Client().QueryWorkflow(ctx, workflows.SessionWorkflowID(queue, conversation), "", workflows.QuerySession)
	if err == nil {
		_ = v.Get(&st)
	}
	return st
}

// Over stdio the client closing its input is the session's end, and
// `starter mcp` exits: it ends the conversation's session before it does
// (the SessionEnd hook ran when the process is gone). It used to exit
// first, closing its Temporal client under the end it had begun ("ending
// the conversation of a closed MCP session failed: … the client
// connection is closing"), and SessionEnd never ran.
func TestClosingStdioEndsItsConversation(t *testing.T) {
	w, project := sessionProjectWorker(t)
	cmd := exec.Command(filepath.Join(env.BinDir, "starter"), "mcp", "-task-queue", w.queue, "-allow", "calculator")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Server.HostPort, "TEMPORAL_NAMESPACE="+env.Server.Namespace)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	calc := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"6 * 7"}}}`
	for _, msg := range []string{initializeBody, initializedMsg, calc} {
		_, err := io.WriteString(stdin, msg+"\n")
		require.NoError(t, err)
	}
	var workflowID string
	for workflowID == "" && lines.Scan() {
		var answer struct {
			ID     int `json:"id"`
			Result struct {
				Meta map[string]any `json:"_meta"`
			} `json:"result"`
		}
		if json.Unmarshal(lines.Bytes(), &answer) == nil && answer.ID == 2 {
			workflowID, _ = answer.Result.Meta[mcpserver.MetaWorkflowID].(string)
		}
	}
	m := regexp.MustCompile(`^assignment-mcp-(stdio-[0-9a-f]+)-`).FindStringSubmatch(workflowID)
	require.NotNil(t, m, "the call's workflow %q names its stdio conversation", workflowID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.True(t, sessionState(ctx, w.queue, m[1]).Started, "the call started its conversation's session")

	require.NoError(t, stdin.Close())
	select {
	case <-exited:
	case <-time.After(45 * time.Second):
		t.Fatal("starter mcp did not exit after its stdin closed")
	}
	assert.True(t, sessionState(ctx, w.queue, m[1]).Ended, "the session had ended when starter mcp exited; stderr:\n%s", stderr.String())
	assert.NotContains(t, stderr.String(), "ending the conversation of a closed MCP session failed")
	raw, err := os.ReadFile(filepath.Join(project, ".claude", "hook-events.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"hook_event_name":"SessionEnd"`)
}
