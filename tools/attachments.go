package tools

import (
	"encoding/json"
	"fmt"
)

// MetaAttachments is the projection metadata key that lists a result's
// attachments, in the order the tool produced them.
const MetaAttachments = "attachments"

// Attachment kinds: what an MCP client gets the bytes back as.
const (
	AttachmentImage    = "image"
	AttachmentAudio    = "audio"
	AttachmentResource = "resource"
	// AttachmentText is a text too long for history; the narrative holds
	// its start and a note (mcp.StoredTextNote) where the rest goes.
	AttachmentText = "text"
)

// Attachment is a part of a tool's result that history does not hold: an
// image, audio or a resource whose bytes are in the context store under
// Ref. The narrative names it in a line; a reader with the context store
// (the MCP gateway, a kernel) gets the bytes themselves.
type Attachment struct {
	Type     string `json:"type"`
	MIMEType string `json:"mime_type,omitempty"`
	// URI names a resource (its MCP resource URI).
	URI string `json:"uri,omitempty"`
	// Text marks a resource whose bytes are text (an MCP text resource),
	// not a blob.
	Text  bool   `json:"text,omitempty"`
	Ref   string `json:"ref"`
	Bytes int    `json:"bytes"`
}

// Attach adds attachments to a projection's metadata.
func Attach(meta map[string]any, a ...Attachment) map[string]any {
	if len(a) == 0 {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	prior, _ := meta[MetaAttachments].([]Attachment)
	meta[MetaAttachments] = append(prior, a...)
	return meta
}

// AttachmentsOf reads the attachments of a result's metadata (a
// projection's, or a run's output data after it went through history).
func AttachmentsOf(meta map[string]any) ([]Attachment, error) {
	v, ok := meta[MetaAttachments]
	if !ok || v == nil {
		return nil, nil
	}
	if a, ok := v.([]Attachment); ok {
		return a, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("metadata %q does not encode: %w", MetaAttachments, err)
	}
	var out []Attachment
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("metadata %q is not a list of attachments: %w", MetaAttachments, err)
	}
	return out, nil
}
