package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dynamic tool's schema (an MCP server's inputSchema) that refers to a
// file on the worker is refused: the worker reads nothing outside the
// schema, and no validation error can show that file to a caller.
// References inside the schema and the standard meta-schema still work.
func TestDynamicSchemasLoadNothingOutsideThemselves(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret-schema.json")
	if err := os.WriteFile(secret, []byte(`{"const":"local-file-was-read"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(context.Context, *Env, map[string]any) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	}
	for name, ref := range map[string]string{"file": "file://" + secret, "relative": "secret-schema.json", "http": "http://127.0.0.1:1/s.json"} {
		schema := `{"type":"object","properties":{"v":{"$ref":"` + ref + `"}}}`
		_, err := DefineDynamic(DynamicSpec{Spec: Spec{Name: "mcp__evil__schema_ref"}, Schema: json.RawMessage(schema), Execute: run})
		if err == nil || !strings.Contains(err.Error(), "loads no schema outside") || !strings.Contains(err.Error(), "mcp__evil__schema_ref") {
			t.Errorf("%s: DefineDynamic = %v, want a refusal naming the tool and the reference", name, err)
		}
	}
	inside := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"n":{"type":"integer"}},"properties":{"v":{"$ref":"#/$defs/n"}}}`
	d, err := DefineDynamic(DynamicSpec{Spec: Spec{Name: "mcp__ok__inside"}, Schema: json.RawMessage(inside), Execute: run})
	if err != nil {
		t.Fatalf("a schema with an internal $ref: %v", err)
	}
	if err := d.validate(map[string]any{"v": "x"}); err == nil {
		t.Error("the internal $ref is not applied: a string passed as an integer")
	}
}

// A property a server's schema both requires and gives a default (Zod 4's
// JSON Schema does so for every field with a default: @playwright/mcp's
// browser_take_screenshot "scale") may be left out, as the server fills
// it in; the call still goes as written, and a value outside the schema
// is still refused.
func TestARequiredPropertyWithADefaultMayBeLeftOut(t *testing.T) {
	schema := `{"type":"object","properties":{"type":{"type":"string","enum":["png","jpeg"]},
		"scale":{"type":"string","enum":["css","device"],"default":"css"}},"required":["type","scale"],"additionalProperties":false}`
	d, err := DefineDynamic(DynamicSpec{Spec: Spec{Name: "mcp__playwright__browser_take_screenshot"}, Schema: json.RawMessage(schema),
		Execute: func(context.Context, *Env, map[string]any) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"type": "png"}
	if err := d.validate(args); err != nil {
		t.Fatalf("scale left out: %v", err)
	}
	if _, ok := args["scale"]; ok {
		t.Error("the default was written into the caller's arguments")
	}
	if err := d.validate(map[string]any{"type": "png", "scale": "huge"}); err == nil {
		t.Error("a scale outside the enum passed")
	}
	if err := d.validate(map[string]any{"scale": "css"}); err == nil || !strings.Contains(err.Error(), "type") {
		t.Errorf("a required property without a default left out: %v, want it named", err)
	}
}
