package mcpserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// The conformance suite's content scenarios call tools that return an
// image, audio, an embedded resource, and all three with text. Served as
// Fenix tools, their bytes go to the worker's context store, the run's
// result names them (tools.Attachment), and the gateway sends them.

// part is one attachment a fixture tool returns.
type part struct {
	kind, mime, uri string
	text            bool
	data            []byte
}

// attachedResult is the fixture tools' raw result: their text and what
// they stored.
type attachedResult struct {
	Text        string             `json:"text"`
	Attachments []tools.Attachment `json:"attachments"`
}

func attaching(name, text string, parts ...part) tools.Definition {
	return tools.Define(tools.Spec{Name: name, Description: "Returns " + name[len("test_"):] + " (conformance fixture).", Idempotent: true},
		func(ctx context.Context, env *tools.Env, _ noArgs) (attachedResult, error) {
			if env.Blobs == nil {
				return attachedResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "%s needs the context store", name)
			}
			out := attachedResult{Text: text}
			for _, p := range parts {
				ref, err := env.Blobs.Put(ctx, p.data)
				if err != nil {
					return attachedResult{}, err
				}
				out.Attachments = append(out.Attachments, tools.Attachment{Type: p.kind, MIMEType: p.mime, URI: p.uri, Text: p.text, Ref: ref, Bytes: len(p.data)})
			}
			return out, nil
		}, func(_ noArgs, r attachedResult) tools.Projection {
			return tools.Projection{Content: r.Text, Metadata: tools.Attach(nil, r.Attachments...)}
		})
}

// redPixel is a 1x1 red PNG.
func redPixel(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// silence is a WAV file of 8 silent 8 kHz mono 16-bit samples.
func silence() []byte {
	const samples, rate, bits = 8, 8000, 16
	var buf bytes.Buffer
	put := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	put(uint32(36 + samples*bits/8))
	buf.WriteString("WAVEfmt ")
	put(uint32(16))
	put(uint16(1)) // PCM
	put(uint16(1)) // mono
	put(uint32(rate))
	put(uint32(rate * bits / 8))
	put(uint16(bits / 8))
	put(uint16(bits))
	buf.WriteString("data")
	put(uint32(samples * bits / 8))
	buf.Write(make([]byte, samples*bits/8))
	return buf.Bytes()
}

func conformanceMediaTools(t *testing.T) []tools.Definition {
	pixel := redPixel(t)
	schema2020, err := tools.DefineDynamic(tools.DynamicSpec{
		Spec: tools.Spec{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features (conformance fixture).", Idempotent: true},
		Schema: json.RawMessage(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
			"$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
			"properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
			"additionalProperties": false}`),
		Execute: func(context.Context, *tools.Env, map[string]any) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		},
		Project: func(map[string]any, json.RawMessage) (tools.Projection, error) {
			return tools.Projection{Content: "ok"}, nil
		},
	})
	require.NoError(t, err)
	return []tools.Definition{
		attaching("test_image_content", "A 1x1 red pixel.", part{kind: tools.AttachmentImage, mime: "image/png", data: pixel}),
		attaching("test_audio_content", "Eight silent samples.", part{kind: tools.AttachmentAudio, mime: "audio/wav", data: silence()}),
		attaching("test_embedded_resource", "An embedded resource.",
			part{kind: tools.AttachmentResource, mime: "text/plain", uri: "test://embedded-resource", text: true, data: []byte("This is an embedded resource content.")}),
		attaching("test_multiple_content_types", "Multiple content types test:",
			part{kind: tools.AttachmentImage, mime: "image/png", data: pixel},
			part{kind: tools.AttachmentResource, mime: "application/json", uri: "test://mixed-content-resource", text: true, data: []byte(`{"test":"data","value":123}`)}),
		schema2020,
	}
}
