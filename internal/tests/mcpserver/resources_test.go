package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/mcpserver"
)

// The resources of an MCP server behind Fenix (the official everything
// server's documents) reach the gateway's client (the official TypeScript
// SDK client) as resources: listed, read whole with their MIME type, each
// read a governed run — the project's PreToolUse hook on
// ReadMcpResourceTool keeps one document from the client as it keeps it
// from an agent. A URI no server lists is "not found"; the server's
// templates are listed, and a URI of one is read.
func TestAnUpstreamServersResourcesReachTheGatewaysClient(t *testing.T) {
	w, _ := startEverythingWorker(t, blockingHook("ReadMcpResourceTool", `"uri":"demo://resource/static/document/architecture.md"`, "architecture notes stay internal"))
	store := w.contexts(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Contexts: store}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	const features, architecture = "demo://resource/static/document/features.md", "demo://resource/static/document/architecture.md"
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{
		step("resources"), step("read", "uri", features), step("read", "uri", architecture), step("read", "uri", "demo://nowhere/at-all"),
		step("templates"), step("read", "uri", "demo://resource/dynamic/text/7"),
	}})

	listed := d.next(time.Minute, "resources")["resources"].([]any)
	var uris []string
	for _, r := range listed {
		res := r.(map[string]any)
		uris = append(uris, res["uri"].(string))
		if res["uri"] == features {
			assert.Equal(t, "text/markdown", res["mimeType"], "%v", res)
			assert.NotEmpty(t, res["name"])
		}
	}
	assert.Contains(t, uris, features)
	assert.Contains(t, uris, architecture)

	read := d.next(time.Minute, "read", "resource_error")
	require.Equal(t, "read", read.kind(), "%v", read)
	contents := read["result"].(map[string]any)["contents"].([]any)
	require.Len(t, contents, 1)
	doc := contents[0].(map[string]any)
	assert.Equal(t, features, doc["uri"])
	assert.Equal(t, "text/markdown", doc["mimeType"])
	assert.True(t, strings.HasPrefix(doc["text"].(string), "# "), "the document's markdown, whole: %.200v", doc["text"])

	blocked := d.next(time.Minute, "read", "resource_error")
	require.Equal(t, "resource_error", blocked.kind(), "%v", blocked)
	assert.Contains(t, blocked["message"], "architecture notes stay internal")

	missing := d.next(time.Minute, "read", "resource_error")
	require.Equal(t, "resource_error", missing.kind(), "%v", missing)
	assert.EqualValues(t, -32602, missing["code"], "resource not found: %v", missing)

	templates := d.next(time.Minute, "templates")["templates"].([]any)
	var patterns []string
	for _, tmpl := range templates {
		patterns = append(patterns, tmpl.(map[string]any)["uriTemplate"].(string))
	}
	assert.Contains(t, patterns, "demo://resource/dynamic/text/{resourceId}")
	templated := d.next(time.Minute, "read", "resource_error")
	require.Equal(t, "read", templated.kind(), "%v", templated)
	contents = templated["result"].(map[string]any)["contents"].([]any)
	require.Len(t, contents, 1)
	assert.Contains(t, contents[0].(map[string]any)["text"], "Resource 7: This is a plaintext resource")
}
