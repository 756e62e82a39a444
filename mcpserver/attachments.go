package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/tools"
	mcptools "github.com/fenixrt/fenix/tools/mcp"
)

// DefaultMaxAttachmentBytes bounds the attachment bytes one result
// carries to the client: twice the largest screenshot browser_screenshot
// keeps, about 22 MB of base64 on the wire.
const DefaultMaxAttachmentBytes = 16 << 20

// attachmentReadTimeout bounds reading one result's attachments.
const attachmentReadTimeout = 30 * time.Second

// noStoreHint says what a gateway without the workers' context store
// lacks, and how to give it one.
const noStoreHint = "this gateway reads no context store (set FENIX_CONTEXT_STORE, or FENIX_DATA_DIR to the worker's data directory)"

// BlobReader is the part of the context store the gateway reads.
type BlobReader interface {
	Get(ctx context.Context, ref string) ([]byte, error)
}

// attachments are a completed run's attachments (tools.Attachment) as MCP
// content: the image, audio and resources a tool returned, read from the
// context store, in their order, within budget bytes. What cannot be sent is named in one
// text item saying why, so the client is never left to guess.
func (g *Gateway) attachments(ctx context.Context, workflowID string, data map[string]any, budget int) []mcp.Content {
	list, err := tools.AttachmentsOf(data)
	if err != nil {
		g.cfg.Logger.Warn("a run's attachments do not decode", "workflow_id", workflowID, "error", err)
		return []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("[attachments not sent: %v]", err)}}
	}
	if len(list) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attachmentReadTimeout)
	defer cancel()
	var out []mcp.Content
	var unsent []string
	for _, a := range list {
		if a.Type == tools.AttachmentText {
			continue // put back into the narrative by wholeTexts
		}
		c, size, why := g.attachment(ctx, a, budget)
		if why != "" {
			unsent = append(unsent, fmt.Sprintf("%s %s of %d bytes (%s): %s", a.Type, a.MIMEType, a.Bytes, a.Ref, why))
			continue
		}
		budget -= size
		out = append(out, c)
	}
	if len(unsent) > 0 {
		g.cfg.Logger.Warn("attachments not sent to the client", "workflow_id", workflowID, "unsent", unsent)
		out = append(out, &mcp.TextContent{Text: "[not attached: " + strings.Join(unsent, "; ") + "]"})
	}
	return out
}

// completedContent is a completed run's answer: its narrative, with the
// whole of each text the tool returned too long for history put back in
// place of its preview, then its other attachments.
func (g *Gateway) completedContent(ctx context.Context, workflowID string, out *contract.Output) []mcp.Content {
	text, extra, budget := g.wholeTexts(ctx, workflowID, out.Content, out.Data)
	content := append([]mcp.Content{&mcp.TextContent{Text: text}}, extra...)
	return append(content, g.attachments(ctx, workflowID, out.Data, budget)...)
}

// wholeTexts puts back into the narrative the whole of each text a tool
// returned too long for history, which the narrative holds as its first
// bytes and a note (mcptools.StoredTextNote): the client asked for the
// tool's output, not for Fenix's preview of it. The stored text was
// cleaned by the worker's redactor before it was stored. A text whose
// preview is not found where its note is (the narrative was changed by a
// hook) follows as an item of its own; one that cannot be read, or is
// over what one result carries, leaves the preview and says why. It
// returns what is left of the bytes one result carries.
func (g *Gateway) wholeTexts(ctx context.Context, workflowID, narrative string, data map[string]any) (string, []mcp.Content, int) {
	budget := g.cfg.MaxAttachmentBytes
	list, err := tools.AttachmentsOf(data)
	if err != nil {
		return narrative, nil, budget
	}
	var extra []mcp.Content
	var unsent []string
	for _, a := range list {
		if a.Type != tools.AttachmentText {
			continue
		}
		note := mcptools.StoredTextNote(a.Bytes, a.Ref)
		at := strings.Index(narrative, note)
		if at < 0 {
			continue
		}
		var why string
		var whole []byte
		switch {
		case g.cfg.Contexts == nil:
			why = noStoreHint
		case a.Bytes > budget:
			why = fmt.Sprintf("over the %d bytes of attachments one result carries", g.cfg.MaxAttachmentBytes)
		default:
			whole, err = g.stored(ctx, a.Ref)
			if err != nil {
				why = err.Error()
			}
		}
		if why != "" {
			unsent = append(unsent, fmt.Sprintf("the whole text of %d bytes (%s): %s", a.Bytes, a.Ref, why))
			continue
		}
		budget -= len(whole)
		preview := mcptools.Preview(string(whole))
		if strings.HasSuffix(narrative[:at], preview) {
			narrative = narrative[:at-len(preview)] + string(whole) + narrative[at+len(note):]
			continue
		}
		narrative = narrative[:at] + "… [the whole text follows]" + narrative[at+len(note):]
		extra = append(extra, &mcp.TextContent{Text: string(whole)})
	}
	if len(unsent) > 0 {
		g.cfg.Logger.Warn("texts not sent whole to the client", "workflow_id", workflowID, "unsent", unsent)
		extra = append(extra, &mcp.TextContent{Text: "[not sent whole: " + strings.Join(unsent, "; ") + "]"})
	}
	return narrative, extra, budget
}

// attachment reads one attachment within budget bytes, or says why not.
func (g *Gateway) attachment(ctx context.Context, a tools.Attachment, budget int) (mcp.Content, int, string) {
	switch {
	case a.Type != tools.AttachmentImage && a.Type != tools.AttachmentAudio && a.Type != tools.AttachmentResource:
		return nil, 0, fmt.Sprintf("the gateway does not know attachments of type %q", a.Type)
	case g.cfg.Contexts == nil:
		return nil, 0, noStoreHint
	case a.Bytes > budget:
		return nil, 0, fmt.Sprintf("over the %d bytes of attachments one result carries", g.cfg.MaxAttachmentBytes)
	}
	data, err := g.cfg.Contexts.Get(ctx, a.Ref)
	switch {
	case err != nil:
		return nil, 0, fmt.Sprintf("reading it from the context store failed: %v", err)
	case len(data) > budget:
		return nil, 0, fmt.Sprintf("over the %d bytes of attachments one result carries", g.cfg.MaxAttachmentBytes)
	}
	switch a.Type {
	case tools.AttachmentImage:
		return &mcp.ImageContent{Data: data, MIMEType: a.MIMEType}, len(data), ""
	case tools.AttachmentAudio:
		return &mcp.AudioContent{Data: data, MIMEType: a.MIMEType}, len(data), ""
	}
	uri := a.URI
	if uri == "" {
		// A resource must name itself; a tool's own attachment is named by
		// its content address.
		uri = "fenix:context/" + a.Ref
	}
	r := &mcp.ResourceContents{URI: uri, MIMEType: a.MIMEType}
	if a.Text && utf8.Valid(data) {
		r.Text = string(data)
	} else {
		r.Blob = data
	}
	return &mcp.EmbeddedResource{Resource: r}, len(data), ""
}

// declaredStructure is the structured content an MCP server's tool
// returned (tools/mcp records it in the result's metadata, inline or by
// context-store reference), for a tool served with its declared output
// schema. Nil when the server returned none.
func (g *Gateway) declaredStructure(ctx context.Context, data map[string]any) (any, error) {
	if v, ok := data["structured_content"]; ok {
		return v, nil
	}
	ref, _ := data["structured_ref"].(string)
	if ref == "" {
		return nil, nil
	}
	raw, err := g.stored(ctx, ref)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s in the context store is not JSON: %v", ref, err)
	}
	return v, nil
}

// stored reads ref from the workers' context store.
func (g *Gateway) stored(ctx context.Context, ref string) ([]byte, error) {
	if g.cfg.Contexts == nil {
		return nil, fmt.Errorf("it is in the context store as %s, and %s", ref, noStoreHint)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attachmentReadTimeout)
	defer cancel()
	b, err := g.cfg.Contexts.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("reading %s from the context store failed: %v", ref, err)
	}
	return b, nil
}
