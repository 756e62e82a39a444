package mcpserver

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/mcpserver"
)

// The prompts of an MCP server behind Fenix (the official everything
// server's) reach the gateway's client (the official TypeScript SDK
// client): listed with their arguments, got filled in, an embedded
// resource whole; each get a governed run, so the project's PreToolUse
// hook on get_mcp_prompt keeps one prompt from the client, and the
// server's refusal of a prompt missing its required argument is the
// client's "invalid params".
func TestAnUpstreamServersPromptsReachTheGatewaysClient(t *testing.T) {
	w, _ := startEverythingWorker(t, blockingHook("get_mcp_prompt", `"name":"simple-prompt"`, "the simple prompt is retired"))
	store := w.contexts(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Contexts: store}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	prompt := func(name string, args map[string]any) map[string]any {
		return step("prompt", "name", name, "arguments", args)
	}
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{
		step("prompts"),
		prompt("args-prompt", map[string]any{"city": "Paris"}),
		prompt("resource-prompt", map[string]any{"resourceType": "Blob", "resourceId": "2"}),
		prompt("simple-prompt", map[string]any{}),
		prompt("args-prompt", map[string]any{}),
	}})

	listing := d.next(time.Minute, "prompts", "resource_error")
	require.Equal(t, "prompts", listing.kind(), "%v", listing)
	listed := listing["prompts"].([]any)
	byName := map[string]map[string]any{}
	for _, p := range listed {
		byName[p.(map[string]any)["name"].(string)] = p.(map[string]any)
	}
	require.Contains(t, byName, "args-prompt", "%v", listed)
	assert.Equal(t, "Arguments Prompt", byName["args-prompt"]["title"])
	args := byName["args-prompt"]["arguments"].([]any)
	require.NotEmpty(t, args)
	assert.Equal(t, map[string]any{"name": "city", "description": "Name of the city", "required": true}, args[0])

	got := d.next(time.Minute, "prompt", "resource_error")
	require.Equal(t, "prompt", got.kind(), "%v", got)
	messages := got["result"].(map[string]any)["messages"].([]any)
	require.Len(t, messages, 1)
	first := messages[0].(map[string]any)
	assert.Equal(t, "user", first["role"])
	assert.Equal(t, map[string]any{"type": "text", "text": "What's weather in Paris?"}, first["content"])

	got = d.next(time.Minute, "prompt", "resource_error")
	require.Equal(t, "prompt", got.kind(), "%v", got)
	messages = got["result"].(map[string]any)["messages"].([]any)
	require.Len(t, messages, 2)
	embedded := messages[1].(map[string]any)["content"].(map[string]any)
	require.Equal(t, "resource", embedded["type"], "%v", embedded)
	resource := embedded["resource"].(map[string]any)
	assert.Equal(t, "demo://resource/dynamic/blob/2", resource["uri"])
	blob, err := base64.StdEncoding.DecodeString(resource["blob"].(string))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(blob), "Resource 2: This is a base64 blob"), "%q", blob)

	blocked := d.next(time.Minute, "prompt", "resource_error")
	require.Equal(t, "resource_error", blocked.kind(), "%v", blocked)
	assert.Contains(t, blocked["message"], "the simple prompt is retired")

	refused := d.next(time.Minute, "prompt", "resource_error")
	require.Equal(t, "resource_error", refused.kind(), "%v", refused)
	assert.EqualValues(t, -32602, refused["code"], "%v", refused)
}
