package mcpserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/mcpserver"
)

// What an MCP server behind Fenix suggests while a user fills in a
// prompt's argument or a resource template's variable (the official
// everything server's completable prompt and templates) reaches the
// gateway's client (the official TypeScript SDK client), with the other
// arguments already filled in passed along; each completion is a
// governed run, so the project's PreToolUse hook on complete_mcp_argument
// keeps one from the client, and an unknown prompt is "invalid params".
func TestAnUpstreamServersCompletionsReachTheGatewaysClient(t *testing.T) {
	w, _ := startEverythingWorker(t, blockingHook("complete_mcp_argument", `"value":"Mar"`, "marketing is not staffed by agents"))
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	complete := func(ref map[string]any, name, value string, context map[string]any) map[string]any {
		s := step("complete", "ref", ref, "argument", map[string]any{"name": name, "value": value})
		if context != nil {
			s["context"] = map[string]any{"arguments": context}
		}
		return s
	}
	prompt := map[string]any{"type": "ref/prompt", "name": "completable-prompt"}
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{
		complete(prompt, "department", "En", nil),
		complete(prompt, "name", "", map[string]any{"department": "Sales"}),
		complete(map[string]any{"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}, "resourceId", "7", nil),
		complete(prompt, "department", "Mar", nil),
		complete(map[string]any{"type": "ref/prompt", "name": "no-such-prompt"}, "department", "", nil),
	}})
	connected := d.next(time.Minute, "connected")
	assert.Contains(t, connected["capabilities"], "completions", "%v", connected)

	values := func() []any {
		t.Helper()
		got := d.next(time.Minute, "complete", "resource_error")
		require.Equal(t, "complete", got.kind(), "%v", got)
		return got["result"].(map[string]any)["completion"].(map[string]any)["values"].([]any)
	}
	assert.Equal(t, []any{"Engineering"}, values())
	assert.Equal(t, []any{"David", "Eve", "Frank"}, values(), "the department filled in reaches the server")
	assert.Equal(t, []any{"7"}, values())

	blocked := d.next(time.Minute, "complete", "resource_error")
	require.Equal(t, "resource_error", blocked.kind(), "%v", blocked)
	assert.Contains(t, blocked["message"], "marketing is not staffed by agents")

	unknown := d.next(time.Minute, "complete", "resource_error")
	require.Equal(t, "resource_error", unknown.kind(), "%v", unknown)
	assert.EqualValues(t, -32602, unknown["code"], "%v", unknown)
	assert.Contains(t, unknown["message"], "no-such-prompt")
}
