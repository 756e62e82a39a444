package mcpserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/mcpserver"
)

// A question an MCP server behind Fenix asks during its tool (the
// "everything" server's form) reaches the client of Fenix's gateway (the
// official TypeScript SDK client) as the server asked it, with its
// schema; the client's answer goes back to the server through the run,
// by default too: it is the user's input, not an approval.
func TestAnUpstreamServersQuestionReachesTheGatewaysClient(t *testing.T) {
	w, _ := startEverythingWorker(t)
	const tool = "mcp__everything__trigger-elicitation-request"
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{tool}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})

	d := startDriver(t, map[string]any{"transport": "http", "url": url, "elicit": "accept",
		"elicitContent": map[string]any{"name": "Ada Lovelace", "check": true},
		"steps":         []any{call(tool, map[string]any{})}})
	asked := d.next(time.Minute, "elicit")
	assert.Contains(t, asked["message"], "MCP server everything (through Fenix) asks: Please provide inputs")
	schema, _ := asked["requestedSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	assert.Contains(t, props, "name", "the client sees the server's own form: %v", asked)
	r := d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	assert.Contains(t, r.text(), "- Name: Ada Lovelace")
	assert.Contains(t, r.text(), "- Favorite Integer: 42", "the form's defaults fill what the user left out")
}
