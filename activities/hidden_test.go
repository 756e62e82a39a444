package activities

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/tools"
)

// A file a Read deny rule keeps from workspace_read does not surface
// through workspace_list or workspace_search either: ExecuteTool hands
// the tools the permission rules' verdict on each path, symlinks
// followed.
func TestListAndSearchHonourReadDenyRules(t *testing.T) {
	ws := t.TempDir()
	for rel, body := range map[string]string{".env": "API_KEY=hunter2\n", "deploy/.env": "API_KEY=prod\n", "src/main.go": "// API_KEY comes from the environment\n",
		".claude/settings.json": `{"permissions": {"deny": ["Read(./.env)", "Read(./deploy)"]}}`} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("deploy/.env", filepath.Join(ws, "prod.env")); err != nil {
		t.Fatal(err)
	}
	sources, err := claudecode.LoadSources([]string{ws}, claudecode.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registry := hooks.NewRegistry()
	registry.SetPermissionPolicy(claudecode.NewPermissions(sources))
	a := &Activities{Tools: tools.Builtin(), Hooks: registry, DefaultWorkspaceRoot: ws}
	run := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := a.ExecuteTool(context.Background(), ExecuteToolInput{WorkspaceRoot: ws, ToolCall: contract.ToolCall{CallID: "c1", ToolName: tool, Arguments: args}})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Raw)
	}

	search := run("workspace_search", map[string]any{"pattern": "API_KEY"})
	var found tools.WorkspaceSearchResult
	if err := json.Unmarshal([]byte(search), &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Matches) != 1 || found.Matches[0].Path != "src/main.go" || found.Hidden != 2 || strings.Contains(search, "hunter2") || strings.Contains(search, "prod") {
		t.Errorf("search = %s: want only src/main.go, 2 hidden (.env, deploy)", search)
	}
	list := run("workspace_list", map[string]any{"recursive": true})
	if strings.Contains(list, ".env") || strings.Contains(list, "deploy") || !strings.Contains(list, `"hidden":3`) {
		t.Errorf("list = %s: want .env, deploy and the prod.env link hidden", list)
	}
}
