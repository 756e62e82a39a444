package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

func TestMemoryTools(t *testing.T) {
	r := newRig(t)
	steps := []struct {
		name    string
		profile string
		tool    string
		args    map[string]any
		want    string // prefix of the content
	}{
		{"empty list", "main", "memory_list", map[string]any{}, "No memory entries for profile main."},
		{"save", "main", "memory_write", map[string]any{"key": "stack", "title": "Tech stack", "content": "Go + Temporal"}, "Saved memory stack for profile main (13 bytes)."},
		{"update", "main", "memory_write", map[string]any{"key": "stack", "title": "Tech stack", "content": "Go 1.26 + Temporal"}, "Updated memory stack for profile main (18 bytes)."},
		{"read", "main", "memory_read", map[string]any{"key": "stack"}, "Memory stack (Tech stack), updated "},
		{"list", "main", "memory_list", map[string]any{}, "Memory entries for profile main:\n1. stack - Tech stack (updated "},
		{"other profile is separate", "researcher", "memory_list", map[string]any{}, "No memory entries for profile researcher."},
		{"prefix filter", "main", "memory_list", map[string]any{"prefix": "zzz"}, "No memory entries for profile main."},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r.env.AgentProfile = s.profile
			p, _ := r.mustCall(t, s.tool, s.args)
			if !strings.HasPrefix(p.Content, s.want) {
				t.Errorf("content = %q, want prefix %q", p.Content, s.want)
			}
		})
	}
	r.env.AgentProfile = "main"
	p, _ := r.mustCall(t, "memory_read", map[string]any{"key": "stack"})
	if !strings.HasSuffix(p.Content, ":\nGo 1.26 + Temporal") {
		t.Errorf("read content = %q", p.Content)
	}
	_, _, err := r.call(t, "memory_read", map[string]any{"key": "missing"})
	errorIs(t, err, fenixerr.ErrValidation, "not_found")
}

// A profile directory the agent's commands filled with other files lists
// what it read and tells the agent the listing is incomplete.
func TestMemoryListSaysWhenItIsIncomplete(t *testing.T) {
	r := newRig(t)
	r.mustCall(t, "memory_write", map[string]any{"key": "stack", "content": "Go"})
	profileDir := filepath.Join(r.dir, ".fenix/memory/main")
	for i := range 2100 {
		if err := os.WriteFile(filepath.Join(profileDir, fmt.Sprintf("junk-%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := r.mustCall(t, "memory_list", map[string]any{})
	if !strings.Contains(p.Content, "holds more files than a listing reads, so some entries may be missing: remove the files there that are not entries") {
		t.Errorf("content = %q, want the incomplete-listing notice", p.Content)
	}
}
