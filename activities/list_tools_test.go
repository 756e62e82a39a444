package activities

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/tools"
)

// What an MCP server declared of its tool travels in the catalog the
// gateway reads, beside the descriptors (which history keeps free of it),
// and comes back with them.
func TestTheCatalogCarriesWhatServersDeclared(t *testing.T) {
	declared := &tools.Declared{Title: "Forecast", OutputSchema: json.RawMessage(`{"type":"object"}`)}
	forecast, err := tools.DefineDynamic(tools.DynamicSpec{
		Spec:    tools.Spec{Name: "mcp__weather__forecast", Description: "forecast", Declared: declared},
		Schema:  json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, *tools.Env, map[string]any) (json.RawMessage, error) { return nil, nil },
		Project: func(map[string]any, json.RawMessage) (tools.Projection, error) { return tools.Projection{}, nil },
	})
	require.NoError(t, err)
	reg, err := tools.NewRegistry(forecast)
	require.NoError(t, err)
	cat, err := (&Activities{Tools: reg}).ListTools(context.Background())
	require.NoError(t, err)

	raw, err := json.Marshal(cat) // as the gateway receives it
	require.NoError(t, err)
	var got ToolCatalog
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, map[string]*tools.Declared{"mcp__weather__forecast": declared}, got.Declared)
	for _, d := range got.WithDeclared() {
		if d.Name == "mcp__weather__forecast" {
			assert.Equal(t, declared, d.Declared)
		} else {
			assert.Nil(t, d.Declared, d.Name)
		}
	}
	descriptor, err := json.Marshal(forecast.Descriptor)
	require.NoError(t, err)
	assert.NotContains(t, string(descriptor), "Forecast", "a call's recorded descriptor holds none of it")
}
