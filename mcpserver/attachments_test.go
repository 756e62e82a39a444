package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/tools"
)

// outputData is a projection's metadata as a run's output carries it to
// the gateway: through history, so as JSON decodes it.
func outputData(t *testing.T, a ...tools.Attachment) map[string]any {
	t.Helper()
	raw, err := json.Marshal(tools.Attach(map[string]any{"server": "everything"}, a...))
	require.NoError(t, err)
	var data map[string]any
	require.NoError(t, json.Unmarshal(raw, &data))
	return data
}

// A result's attachments reach the client as the MCP content they were:
// the image and audio bytes, a text resource as text, a binary one as a
// blob, each read from the context store and in order.
func TestAttachmentsReachTheClientAsMCPContent(t *testing.T) {
	store, err := contextstore.NewFS(t.TempDir())
	require.NoError(t, err)
	ctx := context.Background()
	put := func(b []byte) string {
		ref, err := store.Put(ctx, b)
		require.NoError(t, err)
		return ref
	}
	png, wav, text, blob := []byte("\x89PNG fake"), []byte("RIFF fake"), []byte("a long log\n"), []byte{0, 1, 2, 0xff}
	data := outputData(t,
		tools.Attachment{Type: tools.AttachmentImage, MIMEType: "image/png", Ref: put(png), Bytes: len(png)},
		tools.Attachment{Type: tools.AttachmentAudio, MIMEType: "audio/wav", Ref: put(wav), Bytes: len(wav)},
		tools.Attachment{Type: tools.AttachmentResource, MIMEType: "text/plain", URI: "test://log", Text: true, Ref: put(text), Bytes: len(text)},
		tools.Attachment{Type: tools.AttachmentResource, MIMEType: "application/octet-stream", Ref: put(blob), Bytes: len(blob)},
	)
	g, err := newGateway(Config{Contexts: store})
	require.NoError(t, err)
	got := g.attachments(ctx, "wf", data, g.cfg.MaxAttachmentBytes)
	require.Len(t, got, 4, "%#v", got)
	assert.Equal(t, &mcp.ImageContent{Data: png, MIMEType: "image/png"}, got[0])
	assert.Equal(t, &mcp.AudioContent{Data: wav, MIMEType: "audio/wav"}, got[1])
	assert.Equal(t, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://log", MIMEType: "text/plain", Text: string(text)}}, got[2])
	res, ok := got[3].(*mcp.EmbeddedResource)
	require.True(t, ok, "%#v", got[3])
	assert.Equal(t, blob, res.Resource.Blob)
	assert.Equal(t, "fenix:context/"+contextstore.RefFor(blob), res.Resource.URI, "a resource without a URI is named by its content address")

	assert.Nil(t, g.attachments(ctx, "wf", map[string]any{"server": "everything"}, g.cfg.MaxAttachmentBytes), "a result without attachments adds nothing")
}

// What cannot be sent is named, with why, in one text item: no context
// store, a blob gone from it, more than one result may carry. What fits
// before the limit is still sent.
func TestAttachmentsThatCannotBeSentAreNamed(t *testing.T) {
	store, err := contextstore.NewFS(t.TempDir())
	require.NoError(t, err)
	ctx := context.Background()
	small, big := []byte("small"), make([]byte, 64)
	smallRef, err := store.Put(ctx, small)
	require.NoError(t, err)
	bigRef, err := store.Put(ctx, big)
	require.NoError(t, err)
	gone := contextstore.RefFor([]byte("collected"))
	data := outputData(t,
		tools.Attachment{Type: tools.AttachmentImage, MIMEType: "image/png", Ref: smallRef, Bytes: len(small)},
		tools.Attachment{Type: tools.AttachmentImage, MIMEType: "image/png", Ref: bigRef, Bytes: len(big)},
		tools.Attachment{Type: tools.AttachmentAudio, MIMEType: "audio/wav", Ref: gone, Bytes: 9},
		tools.Attachment{Type: "video", MIMEType: "video/mp4", Ref: smallRef, Bytes: len(small)},
	)

	g, err := newGateway(Config{Contexts: store, MaxAttachmentBytes: 32})
	require.NoError(t, err)
	got := g.attachments(ctx, "wf", data, g.cfg.MaxAttachmentBytes)
	require.Len(t, got, 2, "%#v", got)
	assert.Equal(t, &mcp.ImageContent{Data: small, MIMEType: "image/png"}, got[0])
	note := got[1].(*mcp.TextContent).Text
	assert.Contains(t, note, "image image/png of 64 bytes ("+bigRef+"): over the 32 bytes of attachments one result carries")
	assert.Contains(t, note, "audio audio/wav of 9 bytes ("+gone+"): reading it from the context store failed")
	assert.Contains(t, note, `the gateway does not know attachments of type "video"`)

	g, err = newGateway(Config{})
	require.NoError(t, err)
	got = g.attachments(ctx, "wf", data, g.cfg.MaxAttachmentBytes)
	require.Len(t, got, 1)
	assert.Contains(t, got[0].(*mcp.TextContent).Text, "image image/png of 5 bytes ("+smallRef+"): this gateway reads no context store (set FENIX_CONTEXT_STORE")

	got = g.attachments(ctx, "wf", map[string]any{tools.MetaAttachments: "not a list"}, g.cfg.MaxAttachmentBytes)
	require.Len(t, got, 1)
	assert.Contains(t, got[0].(*mcp.TextContent).Text, `attachments not sent: metadata "attachments" is not a list of attachments`)
}
