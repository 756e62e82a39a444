package mcp

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's readOnlyHint marks its tool read-only, as Claude Code's plan
// mode reads it; without the hint (or with it false) a tool may change
// things.
func TestReadOnlyHintMarksTheToolReadOnly(t *testing.T) {
	s := &server{cfg: ServerConfig{Name: "docs"}, m: &Manager{opts: Options{HostID: "h1", CallTimeout: DefaultCallTimeout}}}
	for _, tc := range []struct {
		ann  *sdk.ToolAnnotations
		want bool
	}{
		{&sdk.ToolAnnotations{ReadOnlyHint: true}, true},
		{&sdk.ToolAnnotations{ReadOnlyHint: false}, false},
		{nil, false},
	} {
		d, err := s.define(&sdk.Tool{Name: "search", InputSchema: map[string]any{"type": "object"}, Annotations: tc.ann})
		if err != nil {
			t.Fatal(err)
		}
		if d.ReadOnly != tc.want {
			t.Errorf("annotations %+v: ReadOnly = %v, want %v", tc.ann, d.ReadOnly, tc.want)
		}
	}
}
