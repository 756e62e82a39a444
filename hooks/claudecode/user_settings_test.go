package claudecode

import (
	"path/filepath"
	"testing"
)

// The user's ~/.claude/settings.json ranks below a project's files, as
// in Claude Code: a project's defaultMode, env and a local file's
// disableAllHooks: false win over the user's; the user's hooks see the
// session's project as $CLAUDE_PROJECT_DIR and its "/path" rules name
// paths in that project, not in the home. It was taken for a project
// rooted at the home: listed after the project, its bypassPermissions
// won and its disableAllHooks turned every project hook off.
func TestTheUsersSettingsRankBelowTheProjects(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	saved := userHomes
	userHomes = func() []string { return []string{home} }
	t.Cleanup(func() { userHomes = saved })

	userFile := writeFileAt(t, filepath.Join(home, ".claude", "settings.json"), `{
  "disableAllHooks": true,
  "env": {"FLAVOR": "from-user-file", "EDITOR_ONLY": "user"},
  "permissions": {"defaultMode": "bypassPermissions", "deny": ["Edit(/src/**)"]},
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo user"}]}]}}`)
	projectFile := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{
  "env": {"FLAVOR": "café"},
  "permissions": {"defaultMode": "dontAsk"},
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo project"}]}]}}`)
	localFile := writeFileAt(t, filepath.Join(project, ".claude", "settings.local.json"), `{"disableAllHooks": false}`)

	// The order an operator lists them in does not matter.
	for _, order := range [][]string{{projectFile, localFile, userFile}, {userFile, projectFile, localFile}} {
		sources, err := LoadSources(order, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var user *Source
		hooksRun := 0
		for _, src := range sources {
			if src.Path == userFile {
				user = src
			}
			hooksRun += len(src.Hooks)
		}
		if user == nil || user.Kind != SourceUser || user.Paths.ProjectDir != "" {
			t.Fatalf("the user's file loaded as %+v", user)
		}
		if hooksRun != 2 {
			t.Errorf("%d hooks run, want the user's and the project's: the local file's disableAllHooks: false wins", hooksRun)
		}
		if mode := settingsMode(sources); mode != "dontAsk" {
			t.Errorf("defaultMode = %q, want the project's dontAsk", mode)
		}
		env, _ := CommandEnv(sources)
		if env["FLAVOR"] != "café" || env["EDITOR_ONLY"] != "user" {
			t.Errorf("env = %v, want the project's FLAVOR and the user's EDITOR_ONLY", env)
		}
		p := NewPermissions(sources)
		if !p.WriteDenied(project, "src/app.ts", nil) {
			t.Error("the user's Edit(/src/**) does not hold in the session's project")
		}
		if p.WriteDenied(project, "docs/app.ts", nil) {
			t.Error("the user's Edit(/src/**) denies outside src/")
		}
	}
}
