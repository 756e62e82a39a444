package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/workflows"
)

// An MCP session is its calls' conversation: when the client closes it,
// the conversation's session ends (SessionEnd, reason other).
func TestClosingTheMCPSessionEndsItsConversation(t *testing.T) {
	w := startWorker(t)
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
}
