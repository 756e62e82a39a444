package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// callThrough serves one tool backed by a mock Temporal client and calls
// it from an in-memory MCP client.
func callThrough(t *testing.T, tc *mocks.Client, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	g, err := newGateway(Config{Client: tc, Conversation: "conv"})
	require.NoError(t, err)
	d := tools.Descriptor{Name: "calculator", Description: "adds", Schema: json.RawMessage(`{"type":"object"}`)}
	require.NoError(t, g.addTool(d))
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := g.server.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: args})
}

// A run that cannot be started (Temporal unreachable, the start refused)
// is the server failing, not the tool: a JSON-RPC internal error (-32603)
// naming the workflow that did not start and why.
func TestAStartFailureIsAnInternalError(t *testing.T) {
	tc := &mocks.Client{}
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewUnavailable("connection refused"))
	_, err := callThrough(t, tc, map[string]any{"expression": "1+1"})
	var wire *jsonrpc.Error
	require.True(t, errors.As(err, &wire), "err = %v, want a JSON-RPC error", err)
	assert.Equal(t, int64(jsonrpc.CodeInternalError), wire.Code)
	for _, part := range []string{"could not start", workflows.ExecuteAssignmentWorkflow, "assignment-mcp-conv-", `tool "calculator"`, "connection refused"} {
		assert.Contains(t, wire.Message, part)
	}
}

// Arguments over what ExecuteAssignment accepts are refused before any
// run starts, as a tool error naming the limit: the workflow's start
// event would carry them (twice over Temporal's 2 MB payload limit).
func TestOversizedArgumentsAreRefusedBeforeTheRunStarts(t *testing.T) {
	tc := &mocks.Client{}
	res, err := callThrough(t, tc, map[string]any{"expression": strings.Repeat("1", workflows.MaxToolArgumentBytes)})
	require.NoError(t, err)
	require.True(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, "PayloadTooLargeError")
	assert.Contains(t, text, fmt.Sprint(workflows.MaxToolArgumentBytes))
	assert.Contains(t, text, `"calculator"`)
	tc.AssertNotCalled(t, "ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything)
}

// Request IDs become part of workflow IDs, call IDs and messages: one that
// is not short and plain is replaced by a digest of itself (so a retry of
// the same request still maps to the same run).
func TestRequestIDsAreSafeInWorkflowIDs(t *testing.T) {
	for id, want := range map[any]string{float64(7): "7", int64(-3): "-3", "abc-1.x_2": "sabc-1.x_2"} {
		assert.Equal(t, want, idText(id))
	}
	seen := map[string]any{}
	for _, id := range []any{"a\nb", "a b", "\x00", "ünï", "a\u200bb", strings.Repeat("a", 65), "x/../y"} {
		got := idText(id)
		assert.Equal(t, got, idText(id), "stable")
		assert.LessOrEqual(t, len(got), 17, "%q -> %q", id, got)
		for _, r := range got {
			assert.True(t, r >= 'a' && r <= 'z' || r >= '0' && r <= '9', "%q -> %q", id, got)
		}
		prev, dup := seen[got]
		assert.False(t, dup, "%q and %q both -> %q", id, prev, got)
		seen[got] = id
	}
	// A plain ID that looks like a digest keeps its own prefix.
	plain := "h" + strings.Repeat("0", 16)
	assert.Equal(t, "s"+plain, idText(plain))
}

// The spec asks session IDs to be visible ASCII; another one is refused
// with a message saying so, before it reaches the SDK, logs or the ledger.
func TestSessionIDsMustBeVisibleASCII(t *testing.T) {
	g, err := newGateway(Config{})
	require.NoError(t, err)
	h, err := g.HTTPHandler(HTTPOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	for _, id := range []string{"abc\tdef", "sess ion", "séance"} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Session-Id", id)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.Equal(t, http.StatusBadRequest, w.Code, id)
		assert.Contains(t, w.Body.String(), "visible ASCII", id)
	}
}
