package mcpserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/mcpserver"
)

// A tool of an MCP server behind Fenix is served to the gateway's
// clients as its server declares it — title, output schema, hints — and
// a call answers with the server's own structured content, which the
// TypeScript SDK client checks against that schema (the "everything"
// server's get-structured-content). It used to be served with Fenix's
// hints and no schema, its structured content Fenix's metadata.
func TestAnUpstreamToolIsServedAsItsServerDeclaresIt(t *testing.T) {
	w, _ := startEverythingWorker(t)
	const tool = "mcp__everything__get-structured-content"
	const echo = "mcp__everything__echo" // no output schema
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{tool, echo, "workspace_read", "workspace_write"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{
		step("list"), call(tool, map[string]any{"location": "Chicago"}), call(echo, map[string]any{"message": "hello"}),
	}})

	listed := d.next(time.Minute, "tools")
	require.Len(t, listed["tools"], 4)
	byName := map[string]map[string]any{}
	for _, listedTool := range listed["tools"].([]any) {
		byName[listedTool.(map[string]any)["name"].(string)] = listedTool.(map[string]any)
	}
	// Fenix's own tools that change nothing say so, as a server's do.
	assert.Equal(t, true, byName["workspace_read"]["annotations"].(map[string]any)["readOnlyHint"], "%v", byName["workspace_read"])
	assert.NotEqual(t, true, byName["workspace_write"]["annotations"].(map[string]any)["readOnlyHint"], "%v", byName["workspace_write"])
	served := byName[tool]
	assert.Equal(t, "Get Structured Content Tool", served["title"])
	output, _ := served["outputSchema"].(map[string]any)
	props, _ := output["properties"].(map[string]any)
	assert.Contains(t, props, "temperature", "the server's output schema: %v", served)
	assert.Equal(t, map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}, served["annotations"])

	r := d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	assert.Equal(t, map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}, r.StructuredContent,
		"the client checked the server's own structured content against its schema")
	assert.Equal(t, "completed", r.Meta[mcpserver.MetaStatus])

	// A tool that declared no output schema answers with its content
	// alone: Fenix's account of the call goes to _meta, where a client
	// that prefers structuredContent to content does not show it.
	r = d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	assert.Contains(t, r.text(), "hello")
	assert.Nil(t, r.StructuredContent, "no structuredContent for a tool without an output schema")
	data, _ := r.Meta[mcpserver.MetaData].(map[string]any)
	assert.Equal(t, "everything", data["server"], "the run's data is in _meta: %v", r.Meta)
}
