package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/agent/prompt"
	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/agent/skills"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/tools"
)

// A file a Read deny rule keeps from workspace_read does not surface
// through workspace_list or workspace_search either: ExecuteTool hands
// the tools the permission rules' verdict on each path, symlinks
// followed.
func TestListAndSearchHonourReadDenyRules(t *testing.T) {
	ws, registry := denyRulesWorkspace(t, map[string]string{"deploy/.env": "API_KEY=prod\n", "src/main.go": "// API_KEY comes from the environment\n"}, "deploy/.env", "prod.env")
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

// The Operator State snapshot of a round lists the workspace for the
// model: a file a Read deny rule hides from workspace_list is left out of
// it too (and counted), in the prompt and in operator_state.json.
func TestOperatorSnapshotHonoursReadDenyRules(t *testing.T) {
	ws, registry := denyRulesWorkspace(t, map[string]string{"deploy/prod-db-password.txt": "x\n", "src/main.go": "package main\n"}, "deploy/prod-db-password.txt", "db.txt")
	a := &Activities{Hooks: registry, DefaultWorkspaceRoot: ws,
		Assembler: &prompt.Assembler{DefaultWorkspaceRoot: ws, Operator: &operator.Snapshotter{}}}
	res, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: contract.Assignment{
		ConversationID: "conv-1", WorkspaceRoot: ws, AgentContext: contract.AgentContext{Profile: "main"},
		ContextMessages: []contract.Message{{Role: contract.RoleUser, Content: "what is here?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	system := res.Messages.Messages[0].Content
	state, err := os.ReadFile(filepath.Join(ws, ".fenix", "sessions", "conv-1", operator.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"system prompt": system, "operator_state.json": string(state)} {
		if !strings.Contains(text, "src/main.go") || strings.Contains(text, ".env") || strings.Contains(text, "deploy") || strings.Contains(text, "db.txt") {
			t.Errorf("%s lists a path a Read deny rule hides (or misses src/main.go):\n%s", name, text)
		}
		if !strings.Contains(text, `"files_hidden": 3`) {
			t.Errorf("%s does not count the 3 hidden paths:\n%s", name, text)
		}
	}
}

// A skill installed from the workspace is readable in full afterwards
// (skills_read_file, its SKILL.md in the prompt): a source holding a file
// a Read deny rule keeps from workspace_read, or lying under one, is
// refused, naming the path, rather than copied out of the rules' reach.
func TestSkillInstallHonoursReadDenyRules(t *testing.T) {
	ws := t.TempDir()
	manifest := "---\nname: %s\ndescription: A skill.\n---\n# Body\n"
	for rel, body := range map[string]string{
		"leaky/SKILL.md": fmt.Sprintf(manifest, "leaky"), "leaky/config/.env": "API_KEY=hunter2\n",
		"secrets/inside/SKILL.md": fmt.Sprintf(manifest, "inside"),
		"clean/SKILL.md":          fmt.Sprintf(manifest, "clean"), "clean/notes.md": "fine\n",
		".claude/settings.json": `{"permissions": {"deny": ["Read(**/.env)", "Read(./secrets)"]}}`} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sources, err := claudecode.LoadSources([]string{ws}, claudecode.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registry := hooks.NewRegistry()
	registry.SetPermissionPolicy(claudecode.NewPermissions(sources))
	catalog, err := skills.Open(skills.Roots{Installed: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Hooks: registry, DefaultWorkspaceRoot: ws, Skills: catalog}
	install := func(source string) error {
		_, err := a.RunSkill(context.Background(), RunSkillInput{Mode: contract.ModeSkillsInstall, WorkspaceRoot: ws,
			Request: contract.SkillRequest{SourcePath: source}})
		return err
	}
	for source, named := range map[string]string{"leaky": `leaky" entry "config/.env"`, "secrets/inside": "secrets/inside"} {
		err := install(source)
		if err == nil || fenixerr.FromTemporal(err).Code != "read_denied" || !strings.Contains(err.Error(), named) {
			t.Errorf("install %s = %v, want a read_denied error naming %s", source, err, named)
		}
	}
	if _, ok := catalog.Lookup("leaky"); ok {
		t.Error("the refused skill is in the catalog")
	}
	if err := install("clean"); err != nil {
		t.Errorf("install clean: %v", err)
	}
}

// denyRulesWorkspace makes a workspace whose settings deny Read of ./.env
// (holding a key) and of ./deploy, with the given other files and a
// symlink link leading to target, and a registry judging by its rules.
func denyRulesWorkspace(t *testing.T, files map[string]string, target, link string) (string, *hooks.Registry) {
	t.Helper()
	ws := t.TempDir()
	files[".env"] = "API_KEY=hunter2\n"
	files[".claude/settings.json"] = `{"permissions": {"deny": ["Read(./.env)", "Read(./deploy)"]}}`
	for rel, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
		t.Fatal(err)
	}
	sources, err := claudecode.LoadSources([]string{ws}, claudecode.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registry := hooks.NewRegistry()
	registry.SetPermissionPolicy(claudecode.NewPermissions(sources))
	return ws, registry
}

// swappingFilter is a permission policy that denies nothing and, the
// first time it is asked about swap, replaces that workspace directory
// with a symlink to target: what a process the agent left running does
// between the install's check of its source and the copy.
type swappingFilter struct {
	hooks.PermissionPolicy
	ws, swap, target string
	swapped          bool
}

func (f *swappingFilter) ReadDenied(_, rel string, _ func(string) (string, error)) bool {
	if rel == f.swap && !f.swapped {
		f.swapped = true
		p := filepath.Join(f.ws, f.swap)
		if err := os.Rename(p, p+".old"); err != nil {
			panic(err)
		}
		if err := os.Symlink(f.target, p); err != nil {
			panic(err)
		}
	}
	return false
}

func (f *swappingFilter) WriteDenied(string, string, func(string) (string, error)) bool { return false }

// A skill source checked inside the workspace and then swapped for a
// symlink to a directory outside it must not be copied: the install used
// to reopen the source by its host path, following the new link, and the
// outside directory (another workspace's skill with its secrets) became a
// skill whose files skills_read_file returns in full. The directory
// opened and checked is the one copied.
func TestSkillInstallSourceSwappedForALinkOutsideIsRefused(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	manifest := "---\nname: %s\ndescription: A skill.\n---\n# Body\n"
	for dir, files := range map[string]map[string]string{
		ws:      {"skill/SKILL.md": fmt.Sprintf(manifest, "mine")},
		outside: {"SKILL.md": fmt.Sprintf(manifest, "theirs"), "id_rsa": "PRIVATE KEY\n"},
	} {
		for rel, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	catalog, err := skills.Open(skills.Roots{Installed: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	registry := hooks.NewRegistry()
	filter := &swappingFilter{PermissionPolicy: claudecode.NewPermissions(nil), ws: ws, swap: "skill", target: outside}
	registry.SetPermissionPolicy(filter)
	a := &Activities{Hooks: registry, DefaultWorkspaceRoot: ws, Skills: catalog}
	_, err = a.RunSkill(context.Background(), RunSkillInput{Mode: contract.ModeSkillsInstall, WorkspaceRoot: ws,
		Request: contract.SkillRequest{SourcePath: "skill"}})
	if !filter.swapped {
		t.Fatal("the source was not swapped during the install")
	}
	if _, ok := catalog.Lookup("theirs"); ok {
		t.Fatalf("the install copied the directory outside the workspace the swapped link leads to (err %v)", err)
	}
	if _, ok := catalog.Lookup("mine"); !ok || err != nil {
		t.Errorf("the install did not copy the directory it checked: %v", err)
	}
}

// A skill's files are read in full once installed (skills_read_file), so
// an install must not copy the worker's private files: in a workspace of
// the worker's home, ".config" with a SKILL.md the agent wrote there held
// ~/.config/temporalio/temporal.toml, the Temporal API key, and the
// install copied it where the skill's files are read.
func TestSkillInstallDoesNotCopyTheWorkersPrivateFiles(t *testing.T) {
	home := t.TempDir()
	manifest := "---\nname: config\ndescription: A skill.\n---\n# Body\n"
	for rel, body := range map[string]string{
		".config/SKILL.md":                 manifest,
		".config/temporalio/temporal.toml": "api_key = \"tmprl-secret\"\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".config", filepath.Join(home, "cfg")); err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{".config", "cfg"} {
		catalog, err := skills.Open(skills.Roots{Installed: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		a := &Activities{Hooks: hooks.NewRegistry(), DefaultWorkspaceRoot: home, Skills: catalog,
			Private: []string{filepath.Join(home, ".config", "temporalio", "temporal.toml")}}
		_, err = a.RunSkill(context.Background(), RunSkillInput{Mode: contract.ModeSkillsInstall, WorkspaceRoot: home,
			Request: contract.SkillRequest{SourcePath: source}})
		if _, ok := catalog.Lookup("config"); ok || err == nil {
			t.Errorf("install %s copied the worker's key (err %v)", source, err)
			continue
		}
		if !strings.Contains(err.Error(), "temporal.toml") {
			t.Errorf("install %s: %v, want an error naming the private file", source, err)
		}
	}
}
