package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// maxErrorText bounds the server's error text copied into an error.
const maxErrorText = 4096

// CallResult is an MCP tool call's raw result as recorded in history:
// the content items (large ones by context-store reference), the
// structured content and the tool's annotations as the server gave them.
type CallResult struct {
	Server  string    `json:"server"`
	Tool    string    `json:"tool"`
	IsError bool      `json:"is_error,omitempty"`
	Content []Content `json:"content"`
	// StructuredContent is the result's structuredContent, inline when it
	// encodes within the inline limit, else by StructuredRef.
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
	StructuredRef     string          `json:"structured_ref,omitempty"`
	// Annotations are the server's hints (readOnlyHint, ...): recorded for
	// audit, never used to decide retries.
	Annotations *sdk.ToolAnnotations `json:"annotations,omitempty"`
	// ProtectedPathsChanged are the protected paths of the workspace
	// (settings, hook scripts, .mcp.json) the call changed.
	ProtectedPathsChanged []string `json:"protected_paths_changed,omitempty"`
	// Logs are the server's log messages while the call was the one in
	// flight to it (logs.go).
	Logs []tools.LogMessage `json:"logs,omitempty"`
}

// Content is one projected content item.
type Content struct {
	// Type is the MCP content type: text, image, audio, resource_link,
	// resource.
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	// Bytes is the size of the item's data (decoded binary or text).
	Bytes int `json:"bytes,omitempty"`
	// Ref is the context-store reference of data kept out of history:
	// binary data always, text over the inline limit.
	Ref string `json:"ref,omitempty"`
	// Truncated is set when text was cut because no context store is
	// configured to hold it.
	Truncated bool `json:"truncated,omitempty"`
	// Copy is the context-store reference of a whole text kept inline too:
	// a resource read keeps each content apart there, for readers that
	// need them apart (the MCP gateway's resources/read).
	Copy string `json:"copy,omitempty"`
}

// projectResult converts the SDK result into CallResult, storing binary
// data and oversized text in the context store.
func projectResult(ctx context.Context, opts Options, server, tool string, res *sdk.CallToolResult) (CallResult, error) {
	out := CallResult{Server: server, Tool: tool, IsError: res.IsError}
	for _, c := range res.Content {
		item, err := projectContent(ctx, opts, c)
		if err != nil {
			return CallResult{}, err
		}
		out.Content = append(out.Content, item)
	}
	if res.StructuredContent != nil {
		raw, err := marshal(res.StructuredContent)
		if err != nil {
			return CallResult{}, fenixerr.Runtime("structuredContent of MCP tool %q does not encode: %v", tool, err)
		}
		if len(raw) <= opts.InlineLimit {
			out.StructuredContent = raw
		} else if opts.Contexts != nil {
			if clean, _, err := opts.Redactor.JSON(raw); err == nil {
				raw = clean
			}
			ref, err := opts.Contexts.Put(ctx, raw)
			if err != nil {
				return CallResult{}, fenixerr.Runtime("storing structuredContent of MCP tool %q: %v", tool, err)
			}
			out.StructuredRef = ref
		} else {
			return CallResult{}, fenixerr.PayloadTooLarge("structuredContent of MCP tool %q is %d bytes and no context store is configured", tool, len(raw))
		}
	}
	return out, nil
}

func projectContent(ctx context.Context, opts Options, c sdk.Content) (Content, error) {
	switch v := c.(type) {
	case *sdk.TextContent:
		return textItem(ctx, opts, Content{Type: "text"}, v.Text)
	case *sdk.ImageContent:
		return binaryItem(ctx, opts, Content{Type: "image", MIMEType: v.MIMEType}, v.Data)
	case *sdk.AudioContent:
		return binaryItem(ctx, opts, Content{Type: "audio", MIMEType: v.MIMEType}, v.Data)
	case *sdk.ResourceLink:
		item := Content{Type: "resource_link", URI: v.URI, Name: v.Name, MIMEType: v.MIMEType, Text: v.Description}
		if v.Size != nil {
			item.Bytes = int(*v.Size)
		}
		return item, nil
	case *sdk.EmbeddedResource:
		item := Content{Type: "resource"}
		if v.Resource == nil {
			return item, nil
		}
		item.URI, item.MIMEType = v.Resource.URI, v.Resource.MIMEType
		if v.Resource.Blob != nil {
			return binaryItem(ctx, opts, item, v.Resource.Blob)
		}
		return textItem(ctx, opts, item, v.Resource.Text)
	default:
		raw, _ := json.Marshal(c)
		return textItem(ctx, opts, Content{Type: "unknown"}, string(raw))
	}
}

func textItem(ctx context.Context, opts Options, item Content, text string) (Content, error) {
	item.Bytes = len(text)
	if len(text) <= opts.InlineLimit {
		item.Text = text
		return item, nil
	}
	if opts.Contexts == nil {
		item.Text, item.Truncated = cut(text, opts.InlineLimit), true
		return item, nil
	}
	text, _ = opts.Redactor.String(text)
	item.Bytes = len(text)
	ref, err := opts.Contexts.Put(ctx, []byte(text))
	if err != nil {
		return Content{}, fenixerr.Runtime("storing %d bytes of MCP %s content: %v", len(text), item.Type, err)
	}
	item.Ref = ref
	item.Text = Preview(text)
	return item, nil
}

// previewBytes is the text kept inline beside a reference.
const previewBytes = 2048

// Preview is the start of a stored text that a result keeps inline.
func Preview(text string) string { return cut(text, previewBytes) }

// StoredTextNote follows a stored text's preview in the narrative: a
// reader with the store (the MCP gateway) finds it there and puts the
// whole text back in its place.
func StoredTextNote(bytes int, ref string) string {
	return fmt.Sprintf("… [%d bytes in all, stored as %s]", bytes, ref)
}

func binaryItem(ctx context.Context, opts Options, item Content, data []byte) (Content, error) {
	item.Bytes = len(data)
	if opts.Contexts == nil {
		return item, nil
	}
	ref, err := opts.Contexts.Put(ctx, data)
	if err != nil {
		return Content{}, fenixerr.Runtime("storing %d bytes of MCP %s content: %v", len(data), item.Type, err)
	}
	item.Ref = ref
	return item, nil
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// project is every MCP tool's projector: the text of the content items,
// in order, as narrative; binary items, links and stored content as
// one-line notes; structured content as metadata (and as the narrative
// when there is no text).
func project(_ map[string]any, raw json.RawMessage) (tools.Projection, error) {
	var r CallResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return tools.Projection{}, err
	}
	return projectCall(r), nil
}

// projectCall is project's work on a decoded result.
func projectCall(r CallResult) tools.Projection {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, narrate(c))
	}
	meta := map[string]any{"server": r.Server, "tool": r.Tool, "content_items": len(r.Content)}
	if len(r.StructuredContent) > 0 {
		var v any
		if err := json.Unmarshal(r.StructuredContent, &v); err == nil {
			meta["structured_content"] = v
		}
		if len(parts) == 0 {
			parts = append(parts, string(r.StructuredContent))
		}
	}
	if r.StructuredRef != "" {
		meta["structured_ref"] = r.StructuredRef
		if len(parts) == 0 {
			parts = append(parts, "[structured content stored as "+r.StructuredRef+"]")
		}
	}
	if refs := storedRefs(r.Content); len(refs) > 0 {
		meta["context_refs"] = refs
	}
	tools.Attach(meta, attachments(r.Content)...)
	if len(r.Logs) > 0 {
		meta[tools.MetaLogs] = r.Logs
	}
	if r.Annotations != nil {
		meta["annotations"] = r.Annotations
	}
	content := strings.Join(parts, "\n")
	if content == "" {
		content = fmt.Sprintf("MCP tool %s of server %s returned no content.", r.Tool, r.Server)
	}
	if len(r.ProtectedPathsChanged) > 0 {
		meta["protected_paths_changed"] = r.ProtectedPathsChanged
		content += "\n" + strings.TrimSpace(tools.ProtectedChangeNote(r.ProtectedPathsChanged))
	}
	return tools.Projection{Content: content, Metadata: meta}
}

func narrate(c Content) string {
	switch c.Type {
	case "text", "resource", "unknown":
		if c.Type == "resource" && c.Text == "" {
			// A binary resource (or an empty one).
			return fmt.Sprintf("[resource %s, %s, %d bytes%s]", c.URI, c.MIMEType, c.Bytes, storedAs(c))
		}
		if c.Ref != "" {
			return c.Text + StoredTextNote(c.Bytes, c.Ref)
		}
		if c.Truncated {
			return fmt.Sprintf("%s… [truncated from %d bytes]", c.Text, c.Bytes)
		}
		return c.Text
	case "resource_link":
		s := fmt.Sprintf("[resource link %q: %s", c.Name, c.URI)
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		if c.Text != "" {
			s += " — " + c.Text
		}
		return s + "]"
	default:
		return fmt.Sprintf("[%s %s, %d bytes%s]", c.Type, c.MIMEType, c.Bytes, storedAs(c))
	}
}

func storedAs(c Content) string {
	if c.Ref == "" {
		return ""
	}
	return ", stored as " + c.Ref
}

// attachments are the stored items an MCP client of Fenix's gateway gets
// back whole: images, audio, resources (a text resource a tool returned
// only when it was too long to keep inline, a short one is in the
// narrative; every content of a resource read) and texts too long to
// keep inline.
func attachments(items []Content) []tools.Attachment {
	var out []tools.Attachment
	for _, c := range items {
		switch {
		case c.Ref != "" && (c.Type == "image" || c.Type == "audio"):
			out = append(out, tools.Attachment{Type: c.Type, MIMEType: c.MIMEType, Ref: c.Ref, Bytes: c.Bytes})
		case c.Ref != "" && (c.Type == "text" || c.Type == "unknown"):
			out = append(out, tools.Attachment{Type: tools.AttachmentText, MIMEType: "text/plain", Text: true, Ref: c.Ref, Bytes: c.Bytes})
		case c.Ref != "" && c.Type == "resource":
			// textItem leaves a preview in Text; binaryItem leaves none.
			out = append(out, tools.Attachment{Type: tools.AttachmentResource, MIMEType: c.MIMEType, URI: c.URI, Text: c.Text != "", Ref: c.Ref, Bytes: c.Bytes})
		case c.Copy != "" && c.Type == "resource":
			out = append(out, tools.Attachment{Type: tools.AttachmentResource, MIMEType: c.MIMEType, URI: c.URI, Text: true, Ref: c.Copy, Bytes: c.Bytes})
		}
	}
	return out
}

func storedRefs(items []Content) []string {
	var refs []string
	for _, c := range items {
		if c.Ref != "" {
			refs = append(refs, c.Ref)
		}
	}
	return refs
}

// errorText is what an isError result says, bounded.
func errorText(r CallResult) string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, narrate(c))
	}
	text := strings.TrimSpace(strings.Join(parts, "\n"))
	if text == "" && len(r.StructuredContent) > 0 {
		text = string(r.StructuredContent)
	}
	if text == "" {
		text = "(no content)"
	}
	if len(text) > maxErrorText {
		text = cut(text, maxErrorText) + "…"
	}
	return text
}

// marshal encodes as tools encode raw results (no HTML escaping).
func marshal(v any) (json.RawMessage, error) { return tools.EncodeResult(v) }

func progressChunk(callID, text string, offset int64) contract.ToolOutputChunk {
	return contract.ToolOutputChunk{CallID: callID, Stream: "progress", Text: text, Offset: offset}
}

// Text is the result as Claude Code hands it to an mcp_tool hook: the
// text items joined by newlines, other items as "[type]".
func (r CallResult) Text() string {
	parts := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		} else {
			parts = append(parts, "["+c.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
