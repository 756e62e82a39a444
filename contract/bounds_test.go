package contract

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTruncateText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"0123456789", 4, "0123… [truncated by Fenix: 4 of 10 bytes kept]"},
		{"ééé", 3, "é… [truncated by Fenix: 2 of 6 bytes kept]"},
	}
	for _, tt := range tests {
		if got := TruncateText(tt.in, tt.max); got != tt.want {
			t.Errorf("TruncateText(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestReportBounded(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	args := map[string]any{"path": "a.txt", "content": big, "nested": map[string]any{"k": big}, "list": []any{big}}
	r := Report{
		ToolInvocation: &ToolInvocation{RequestPayload: ToolCall{Arguments: args}, ResponsePayload: map[string]any{"content": big}},
		Output:         &Output{Content: big, Data: map[string]any{"additional_context": big}},
		Error:          &Failure{LastErrorSummary: big, ToolInvocations: []ToolInvocation{{RequestPayload: ToolCall{Arguments: args}}}},
	}
	b := r.Bounded()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 4*EchoBytes {
		t.Errorf("bounded report is %d bytes", len(raw))
	}
	if got := b.ToolInvocation.RequestPayload.Arguments["path"]; got != "a.txt" {
		t.Errorf("a short argument changed: %v", got)
	}
	if len(r.ToolInvocation.RequestPayload.Arguments["content"].(string)) != 1<<20 || len(r.Output.Content) != 1<<20 {
		t.Error("Bounded changed the original report")
	}
	small := Report{ToolInvocation: &ToolInvocation{RequestPayload: ToolCall{Arguments: map[string]any{"expression": "2 + 2"}}}}
	if got := small.Bounded().ToolInvocation.RequestPayload.Arguments["expression"]; got != "2 + 2" {
		t.Errorf("a small report changed: %v", got)
	}
}

// A value over EchoBytes is copied EchoDepth objects deep; what lies
// deeper is a note.
func TestBoundMapFollowsNestedObjectsEchoDepthDeep(t *testing.T) {
	var deep any = strings.Repeat("x", EchoBytes)
	for range 20 {
		deep = map[string]any{"a": deep}
	}
	got := BoundMap(deep.(map[string]any), EchoBytes)
	levels := 0
	var v any = got
	for {
		m, ok := v.(map[string]any)
		if !ok {
			break
		}
		levels++
		v = m["a"]
	}
	if levels != EchoDepth {
		t.Fatalf("copied %d levels, want %d", levels, EchoDepth)
	}
	if s, _ := v.(string); !strings.Contains(s, "nested deeper than") {
		t.Fatalf("below the copy: %v, want a note", v)
	}
}
