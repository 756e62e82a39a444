package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/tools"
)

// An MCP server's tool is served with what its server declared; Fenix's
// own tools, and a server's hints that do not decode, with Fenix's.
func TestToolsAreServedAsDeclared(t *testing.T) {
	d := tools.Descriptor{Name: "mcp__weather__forecast", Schema: json.RawMessage(`{"type":"object"}`), RegistryBacked: true}
	own := mcpTool(d, slog.New(slog.DiscardHandler))
	assert.Empty(t, own.Title)
	assert.Nil(t, own.OutputSchema)
	assert.False(t, own.Annotations.ReadOnlyHint)
	assert.True(t, *own.Annotations.OpenWorldHint)

	d.Declared = &tools.Declared{Title: "Forecast", OutputSchema: json.RawMessage(`{"type":"object","properties":{"t":{"type":"number"}}}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true,"destructiveHint":false,"openWorldHint":false}`)}
	served := mcpTool(d, slog.New(slog.DiscardHandler))
	assert.Equal(t, "Forecast", served.Title)
	assert.JSONEq(t, string(d.Declared.OutputSchema), string(served.OutputSchema.(json.RawMessage)))
	assert.True(t, served.Annotations.ReadOnlyHint)
	assert.False(t, *served.Annotations.DestructiveHint)
	assert.False(t, *served.Annotations.OpenWorldHint)

	d.Declared.Annotations = json.RawMessage(`{"readOnlyHint":"yes"}`)
	assert.Equal(t, own.Annotations, mcpTool(d, slog.New(slog.DiscardHandler)).Annotations)

	// Fenix's own tools that change nothing say so, as a server's would
	// (the registry's ReadOnly, which the catalog carries by name).
	cat := activities.ToolCatalog{Tools: []tools.Descriptor{{Name: "workspace_read"}, {Name: "workspace_write"}}, ReadOnly: []string{"workspace_read"}}
	listed := cat.WithDeclared()
	assert.True(t, mcpTool(listed[0], slog.New(slog.DiscardHandler)).Annotations.ReadOnlyHint)
	assert.False(t, mcpTool(listed[1], slog.New(slog.DiscardHandler)).Annotations.ReadOnlyHint)
}

// A tool the MCP SDK refuses to serve (it panics on an x-mcp-header on an
// object) is left out with its reason; the gateway and the other tools
// go on.
func TestAToolTheSDKRefusesIsLeftOut(t *testing.T) {
	g, err := newGateway(Config{})
	require.NoError(t, err)
	bad := tools.Descriptor{Name: "mcp__odd__tool", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`)}
	err = g.addTool(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "x-mcp-header")
	require.NoError(t, g.addTool(tools.Descriptor{Name: "calculator", Schema: json.RawMessage(`{"type":"object"}`)}))
}

// A declared output schema's call answers with the server's structured
// content: inline, or read from the context store; a gateway that cannot
// read it says why.
func TestDeclaredStructureIsTheServersOwn(t *testing.T) {
	ctx := context.Background()
	store, err := contextstore.NewFS(t.TempDir())
	require.NoError(t, err)
	ref, err := store.Put(ctx, []byte(`{"t":21.5}`))
	require.NoError(t, err)
	g, err := newGateway(Config{Contexts: store})
	require.NoError(t, err)

	v, err := g.declaredStructure(ctx, map[string]any{"server": "weather", "structured_content": map[string]any{"t": 20.0}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"t": 20.0}, v)
	v, err = g.declaredStructure(ctx, map[string]any{"structured_ref": ref})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"t": 21.5}, v)
	v, err = g.declaredStructure(ctx, map[string]any{"server": "weather"})
	require.NoError(t, err)
	assert.Nil(t, v, "a server that returned none")

	g, err = newGateway(Config{})
	require.NoError(t, err)
	_, err = g.declaredStructure(ctx, map[string]any{"structured_ref": ref})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this gateway reads no context store")
}
