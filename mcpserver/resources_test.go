package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yosida95/uritemplate/v3"
)

// list_mcp_resources' narrative is the listing as JSON, then its notes;
// its data holds the templates.
func TestTheListingIsReadBeforeItsNotes(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `[{"server":"docs","uri":"docs://a","name":"a"}]` + "\n[MCP server \"wiki\" could not be listed: down]"}},
		StructuredContent: map[string]any{"total": float64(1), "resource_templates": []any{map[string]any{"server": "docs", "uriTemplate": "docs://item/{id}", "name": "item"}}}}
	l, err := decodeListing(res)
	require.NoError(t, err)
	require.Len(t, l.Resources, 1)
	assert.Equal(t, "docs", l.Resources[0].Server)
	require.Len(t, l.Templates, 1)
	assert.Equal(t, "docs://item/{id}", l.Templates[0].URITemplate)

	none := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "No MCP server on this worker exposes resources."}}, StructuredContent: map[string]any{"total": float64(0)}}
	l, err = decodeListing(none)
	require.NoError(t, err)
	assert.Empty(t, l.Resources)
}

// A URI is read from the server whose listing holds it, or from the only
// server that lists any (a templated URI is in no listing); a URI two
// servers list, or none of several, is refused with why.
func TestAResourceIsReadFromTheServerThatListsIt(t *testing.T) {
	g, err := newGateway(Config{})
	require.NoError(t, err)
	read := func(uri string) (string, error) {
		return g.serverOf(context.Background(), nil, nil, uri)
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
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), wire.Code)

	docs, err := uritemplate.New("docs://item/{id}")
	require.NoError(t, err)
	g.templateHosts = []resourceHost{{server: "docs", template: docs.Regexp()}}
	server, err = read("docs://item/7")
	require.NoError(t, err)
	assert.Equal(t, "docs", server, "the server whose template matches")

	g.resourceHosts, g.templateHosts = map[string][]string{"docs://a": {"docs"}}, nil
	server, err = read("docs://item/7")
	require.NoError(t, err)
	assert.Equal(t, "docs", server, "the only server listing resources")
}

// A completion of a resource template goes to the server that lists the
// template; one two servers list, or none does, is refused with why.
func TestATemplateIsCompletedByTheServerThatListsIt(t *testing.T) {
	g, err := newGateway(Config{})
	require.NoError(t, err)
	g.templateHosts = []resourceHost{{server: "docs", uriTemplate: "docs://item/{id}"}, {server: "wiki", uriTemplate: "page://{name}"}, {server: "docs", uriTemplate: "page://{name}"}}
	g.resourceHosts = map[string][]string{}
	server, err := g.templateServer(context.Background(), nil, nil, "docs://item/{id}")
	require.NoError(t, err)
	assert.Equal(t, "docs", server)
	var wire *jsonrpc.Error
	_, err = g.templateServer(context.Background(), nil, nil, "page://{name}")
	require.True(t, errors.As(err, &wire), "%v", err)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), wire.Code)
	assert.Contains(t, wire.Message, "docs and wiki")
}

// A list request without params is answered; a read or a get without
// them is refused as invalid params; a panic while answering is that
// request's internal error, not the gateway's end.
func TestResourceAndPromptRequestsWithoutParams(t *testing.T) {
	g, err := newGateway(Config{})
	require.NoError(t, err)
	answer := g.resourceMethods(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		panic("the SDK's own handler")
	})
	ctx := context.Background()
	res, err := answer(ctx, methodListResources, &mcp.ListResourcesRequest{})
	require.NoError(t, err)
	assert.Empty(t, res.(*mcp.ListResourcesResult).Resources)
	res, err = answer(ctx, methodListPrompts, &mcp.ListPromptsRequest{})
	require.NoError(t, err)
	assert.Empty(t, res.(*mcp.ListPromptsResult).Prompts)
	_, err = answer(ctx, methodListResourceTemplates, &mcp.ListResourceTemplatesRequest{})
	require.NoError(t, err)
	for method, req := range map[string]mcp.Request{methodReadResource: &mcp.ReadResourceRequest{}, methodGetPrompt: &mcp.GetPromptRequest{}, methodComplete: &mcp.CompleteRequest{}, methodSubscribe: &mcp.SubscribeRequest{}, "resources/unsubscribe": &mcp.UnsubscribeRequest{}} {
		_, err := answer(ctx, method, req)
		var wire *jsonrpc.Error
		require.True(t, errors.As(err, &wire), "%s: %v", method, err)
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), wire.Code, method)
	}
	_, err = answer(ctx, "tools/list", &mcp.ListToolsRequest{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tools/list failed: the SDK's own handler")
}

// A session subscribes to 32 resources at most, and the gateway watches
// 256 at most: each keeps a run waiting on a worker.
func TestSubscriptionsAreBounded(t *testing.T) {
	g, err := newGateway(Config{})
	require.NoError(t, err)
	one, other := &mcp.ServerSession{}, &mcp.ServerSession{}
	g.subscriptions = map[string]*subscription{}
	for i := range maxSessionSubscriptions {
		g.subscriptions[fmt.Sprint("docs://", i)] = &subscription{sessions: map[*mcp.ServerSession]*mcp.RequestExtra{one: nil}}
	}
	var wire *jsonrpc.Error
	err = g.roomFor(one, "docs://more")
	require.True(t, errors.As(err, &wire), "%v", err)
	assert.Contains(t, wire.Message, "32 resources")
	assert.NoError(t, g.roomFor(one, "docs://7"), "subscribing again to one it holds")
	assert.NoError(t, g.roomFor(other, "docs://more"))
	for i := maxSessionSubscriptions; i < maxSubscriptions; i++ {
		g.subscriptions[fmt.Sprint("docs://", i)] = &subscription{sessions: map[*mcp.ServerSession]*mcp.RequestExtra{other: nil}}
	}
	err = g.roomFor(&mcp.ServerSession{}, "docs://more")
	require.True(t, errors.As(err, &wire), "%v", err)
	assert.Contains(t, wire.Message, "256 resources")
	assert.NoError(t, g.roomFor(&mcp.ServerSession{}, "docs://3"), "a URI the gateway already watches")
}
