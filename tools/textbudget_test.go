package tools

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONSizeMatchesTheEncoder(t *testing.T) {
	for _, s := range []string{"", "plain", `quote" back\ `, "tab\tnl\n", "\x00\x1f\x7f", "\b\f", "<html>&amp;", "日本語", "\u2028", "bad\xffutf8"} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		want := buf.Len() - 3 // quotes and newline
		if got := jsonSize(s); got != want {
			t.Errorf("jsonSize(%q) = %d, want %d (%s)", s, got, want, buf.String())
		}
	}
}

func TestClipForJSON(t *testing.T) {
	tests := []struct {
		in      string
		budget  int
		want    string
		wantCut bool
	}{
		{"short", 100, "short", false},
		{strings.Repeat("a", 10), 4, "aaaa", true},
		{"日本語", 7, "日本", true},
		{"\x00\x00\x00", 12, "\x00\x00", true},
	}
	for _, tt := range tests {
		got, cut := clipForJSON(tt.in, tt.budget)
		if got != tt.want || cut != tt.wantCut {
			t.Errorf("clipForJSON(%q, %d) = %q, %v; want %q, %v", tt.in, tt.budget, got, cut, tt.want, tt.wantCut)
		}
	}
}
