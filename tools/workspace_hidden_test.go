package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workspace_list and workspace_search skip what a permission rule hides
// from reading, and say how many entries they skipped without naming
// them.
func TestListAndSearchSkipHiddenPaths(t *testing.T) {
	r := newRig(t)
	r.write(t, ".env", "API_KEY=hunter2\n")
	r.write(t, "secrets/key.pem", "API_KEY=pem\n")
	r.write(t, "src/main.go", "// API_KEY is read from the environment\n")
	if err := os.Symlink(".env", filepath.Join(r.dir, "envlink")); err != nil {
		t.Fatal(err)
	}
	r.env.Hidden = func(rel string) bool {
		return rel == ".env" || rel == "envlink" || rel == "secrets" || strings.HasPrefix(rel, "secrets/")
	}

	p, raw := r.mustCall(t, "workspace_list", map[string]any{"recursive": true})
	if want := "Workspace directory . (2 entries, 3 hidden by permission rules):\nsrc/\nsrc/main.go (40 B)"; p.Content != want {
		t.Errorf("list =\n%s\nwant\n%s", p.Content, want)
	}
	if res := decode[WorkspaceListResult](t, raw); res.Hidden != 3 || strings.Contains(string(raw), "secrets") || strings.Contains(string(raw), ".env") {
		t.Errorf("list result %s: want 3 hidden, none named", raw)
	}

	p, raw = r.mustCall(t, "workspace_search", map[string]any{"pattern": "API_KEY"})
	if !strings.Contains(p.Content, "src/main.go:1:") || strings.Contains(p.Content, "hunter2") || strings.Contains(p.Content, "pem") ||
		!strings.Contains(p.Content, "(2 entries hidden by permission rules)") {
		t.Errorf("search =\n%s", p.Content)
	}
	if res := decode[WorkspaceSearchResult](t, raw); res.Hidden != 2 || len(res.Matches) != 1 {
		t.Errorf("search result %s: want 1 match and 2 hidden entries (.env, secrets)", raw)
	}

	// Without a filter nothing is hidden.
	r.env.Hidden = nil
	if _, raw := r.mustCall(t, "workspace_search", map[string]any{"pattern": "API_KEY"}); len(decode[WorkspaceSearchResult](t, raw).Matches) != 3 {
		t.Errorf("unfiltered search %s: want 3 matches", raw)
	}
}
