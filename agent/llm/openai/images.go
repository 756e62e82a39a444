package openai

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
)

// The images a tool returned (a browser_screenshot, an MCP server's
// image) reach the model as Claude Code's do: Chat Completions tool
// messages carry text only, so after a step's tool messages comes one
// user message showing their images, each after a line naming the call.
// A user message's own images (a kernel's, from its user) are shown in
// it, after its text. The newest images are shown, within bounds a vision
// endpoint accepts; older ones stay what the content says of them.
const (
	// MaxModelImages bounds the images one request shows.
	MaxModelImages = 8
	// MaxModelImageBytes bounds their bytes together (before base64).
	MaxModelImageBytes = 16 << 20
)

// imageMIMETypes are the image types vision endpoints accept.
var imageMIMETypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// shownImages reads, newest first, the images the request shows: by
// reference, their bytes. What cannot be shown (no store, a blob
// collected, an unaccepted type, over the bounds) is left out.
func shownImages(ctx context.Context, req llm.Request) map[string][]byte {
	if req.Blobs == nil {
		return nil
	}
	shown := map[string][]byte{}
	budget := MaxModelImageBytes
	for i := len(req.Messages) - 1; i >= 0 && len(shown) < MaxModelImages; i-- {
		m := req.Messages[i]
		if m.Role != contract.RoleTool && m.Role != contract.RoleUser {
			continue
		}
		for j := len(m.Images) - 1; j >= 0 && len(shown) < MaxModelImages; j-- {
			img := m.Images[j]
			if _, done := shown[img.Ref]; done || !imageMIMETypes[strings.ToLower(img.MIMEType)] || img.Bytes > budget {
				continue
			}
			data, err := req.Blobs.Get(ctx, img.Ref)
			if err != nil || len(data) > budget {
				continue
			}
			budget -= len(data)
			shown[img.Ref] = data
		}
	}
	return shown
}

// imageParts are the content parts showing a message's images, a tool
// message's each after a line naming its call.
func imageParts(m contract.Message, shown map[string][]byte) []sdk.ChatCompletionContentPartUnionParam {
	var parts []sdk.ChatCompletionContentPartUnionParam
	for i, img := range m.Images {
		data, ok := shown[img.Ref]
		if !ok {
			continue
		}
		if m.Role == contract.RoleTool {
			parts = append(parts, sdk.TextContentPart(fmt.Sprintf("Image %d of %d returned by tool %s (call %s):", i+1, len(m.Images), m.Name, m.ToolCallID)))
		}
		parts = append(parts,
			sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
				URL: "data:" + strings.ToLower(img.MIMEType) + ";base64," + base64.StdEncoding.EncodeToString(data)}))
	}
	return parts
}
