package mcpserver

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// list_mcp_resources' narrative is the listing as JSON, then its notes.
func TestListedResourcesReadTheListingBeforeItsNotes(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `[{"server":"docs","uri":"docs://a","name":"a"}]` + "\n[MCP server \"wiki\" could not be listed: down]"}}}
	listed, err := listedResources(res)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, "docs", listed[0].Server)

	none := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "No MCP server on this worker exposes resources."}}, StructuredContent: map[string]any{"total": float64(0)}}
	listed, err = listedResources(none)
	require.NoError(t, err)
	assert.Empty(t, listed)
}

// A URI is read from the server whose listing holds it, or from the only
// server that lists any (a templated URI is in no listing); a URI two
// servers list, or none of several, is refused with why.
func TestAResourceIsReadFromTheServerThatListsIt(t *testing.T) {
	g, err := newGateway(Config{})
	require.NoError(t, err)
	read := func(uri string) (string, error) {
		return g.serverOf(context.Background(), &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}})
	}
	g.resourceHosts = map[string][]string{"docs://a": {"docs"}, "shared://x": {"docs", "wiki"}, "wiki://b": {"wiki"}}
	server, err := read("wiki://b")
	require.NoError(t, err)
	assert.Equal(t, "wiki", server)
	_, err = read("shared://x")
	var wire *jsonrpc.Error
	require.True(t, errors.As(err, &wire), "%v", err)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), wire.Code)
	assert.Contains(t, wire.Message, "docs and wiki")
	_, err = read("docs://item/7")
	require.True(t, errors.As(err, &wire), "%v", err)
	assert.Equal(t, int64(mcp.CodeResourceNotFound), wire.Code)

	g.resourceHosts = map[string][]string{"docs://a": {"docs"}}
	server, err = read("docs://item/7")
	require.NoError(t, err)
	assert.Equal(t, "docs", server, "the only server listing resources serves its templates")
}
