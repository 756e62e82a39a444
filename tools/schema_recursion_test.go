package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// An MCP server's schema whose oneOf of three branches each refers back to
// it made validating a call's arguments take 3^depth steps: 23 s for 12
// levels, longer than any call for 16, with a goroutine and its memory
// kept busy past the stage's timeout. A schema that refers back into
// itself is not validated beyond the arguments' size; one whose
// references lead nowhere back still is.
func TestRecursiveSchemasAreNotValidatedExponentially(t *testing.T) {
	hostile := `{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}},"$defs":{"n":{"oneOf":[
		{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"required":["a"]},
		{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"required":["a"]},
		{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"required":["a"]}]}}}`
	define := func(schema string) Definition {
		t.Helper()
		d, err := DefineDynamic(DynamicSpec{Spec: Spec{Name: "mcp__evil__t"}, Schema: json.RawMessage(schema),
			Execute: func(context.Context, *Env, map[string]any) (json.RawMessage, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	plain := `{"type":"object","properties":{"n":{"$ref":"#/$defs/count"}},"$defs":{"count":{"type":"integer"}}}`
	var deep any = map[string]any{"a": 1}
	for range 16 {
		deep = map[string]any{"a": deep}
	}
	start := time.Now()
	if !define(hostile).SchemaUnchecked() || define(plain).SchemaUnchecked() {
		t.Error("SchemaUnchecked does not tell the recursive schema from the other")
	}
	if err := define(hostile).validate(map[string]any{"x": deep}); err != nil {
		t.Errorf("a recursive schema's arguments: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("validating 16 levels took %v", elapsed)
	}
	if err := define(plain).validate(map[string]any{"n": "many"}); err == nil {
		t.Error("a schema whose references do not recur was not validated")
	}
	for schema, want := range map[string]bool{
		hostile: true,
		plain:   false,
		`{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`: true,
		`{"$ref":"#"}`: true,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/b"}},"$defs":{"b":{"$ref":"#/$defs/c"},"c":{"type":"string"}}}`: false,
		`{"type":"object","properties":{"a":{"$dynamicRef":"#node"}}}`:                                                       true,
	} {
		var doc any
		if err := json.Unmarshal([]byte(schema), &doc); err != nil {
			t.Fatal(err)
		}
		if got := RecursiveSchema(doc); got != want {
			t.Errorf("RecursiveSchema(%s) = %v, want %v", schema, got, want)
		}
	}
}
