package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/mcpserver"
)

// The image an MCP server behind Fenix returns (the "everything" server's
// get-tiny-image), and a binary resource (get-resource-reference), reach
// the client of Fenix's gateway (the official TypeScript SDK client) as
// the image and the resource, byte for byte, beside the narrative that
// names them; history holds only their references. A gateway that reads
// no context store says so instead.
func TestAnUpstreamServersImageReachesTheGatewaysClient(t *testing.T) {
	w, servers := startEverythingWorker(t)

	// The server's own image, as its source spells it.
	src, err := os.ReadFile(filepath.Join(filepath.Dir(servers.Entry("server-everything")), "tools", "get-tiny-image.js"))
	require.NoError(t, err)
	m := regexp.MustCompile(`MCP_TINY_IMAGE\s*=\s*"([A-Za-z0-9+/=]+)"`).FindSubmatch(src)
	require.NotNil(t, m, "the everything server no longer spells its image as before")
	image, err := base64.StdEncoding.DecodeString(string(m[1]))
	require.NoError(t, err)

	const tinyImage, reference = "mcp__everything__get-tiny-image", "mcp__everything__get-resource-reference"
	store := w.contexts(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{tinyImage, reference}, Contexts: store}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{
		call(tinyImage, map[string]any{}),
		call(reference, map[string]any{"resourceType": "Blob", "resourceId": 2}),
	}})

	r := d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	require.Len(t, r.Content, 2, "the narrative, then the image: %+v", r.Content)
	assert.Equal(t, "text", r.Content[0].Type)
	assert.Contains(t, r.Content[0].Text, "Here's the image you requested:")
	assert.Contains(t, r.Content[0].Text, "The image above is the MCP logo.")
	assert.Equal(t, "image", r.Content[1].Type)
	assert.Equal(t, "image/png", r.Content[1].MIMEType)
	assert.Equal(t, image, r.Content[1].Data, "the client gets the server's image byte for byte")
	res := runResult(t, r.workflowID())
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), string(m[1][:64]), "the run's result holds the image's reference, not its bytes")

	r = d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	require.Len(t, r.Content, 2, "%+v", r.Content)
	blob := r.Content[1].Resource
	require.NotNil(t, blob, "%+v", r.Content[1])
	assert.Equal(t, "resource", r.Content[1].Type)
	assert.Equal(t, "demo://resource/dynamic/blob/2", blob.URI)
	assert.True(t, strings.HasPrefix(string(blob.Blob), "Resource 2: This is a base64 blob"), "blob = %q", blob.Blob)

	// A gateway that reads no context store names what it could not send.
	url, _ = gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{tinyImage}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	d = startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{call(tinyImage, map[string]any{})}})
	r = d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	require.Len(t, r.Content, 2, "%+v", r.Content)
	assert.Contains(t, r.Content[1].Text, "[not attached: image image/png of "+strconv.Itoa(len(image))+" bytes (ctx-sha256-")
	assert.Contains(t, r.Content[1].Text, "this gateway reads no context store")
}

// A text an MCP server behind Fenix returns that is too long for history
// (here the "everything" server's echo of 100 KB) reaches the gateway's
// client (the TypeScript SDK client) whole, in place of the 2 KiB preview
// history keeps, and cleaned by the worker's redactor as the model's copy
// is: the client asked for the tool's output, not Fenix's preview of it.
func TestAnUpstreamServersLongTextReachesTheGatewaysClientWhole(t *testing.T) {
	w, _ := startEverythingWorker(t)
	const echo = "mcp__everything__echo"
	const secret = "AKIAIOSFODNN7EXAMPLE"
	message := strings.Repeat("0123456789abcdef", 4096) + " aws_access_key_id=" + secret + " " + strings.Repeat("the end is here ", 2048)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{echo}, Contexts: w.contexts(t)}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{call(echo, map[string]any{"message": message})}})

	r := d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	require.Len(t, r.Content, 1, "the narrative alone, the text in it whole: %+v", r.Content)
	text := r.Content[0].Text
	assert.Greater(t, len(text), 90_000, "the whole text, not the preview")
	assert.True(t, strings.HasSuffix(strings.TrimSpace(text), "the end is here"), "the text's end: %q", text[max(0, len(text)-80):])
	assert.NotContains(t, text, "bytes in all, stored as", "no note of the preview is left")
	assert.NotContains(t, text, secret, "the stored text was redacted as the model's copy is")
	assert.Contains(t, text, "[REDACTED:")

	res := runResult(t, r.workflowID())
	assert.Less(t, len(res.Output.Content), 8<<10, "history keeps the preview")
}
