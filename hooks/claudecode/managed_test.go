package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// settingsTree writes managed/managed-settings.json (when managed is not
// empty) and the project's settings files, and loads them in that order.
func settingsTree(t *testing.T, managed string, files map[string]string) (dir string, sources []*Source) {
	t.Helper()
	dir = t.TempDir()
	var paths []string
	if managed != "" {
		paths = append(paths, writeFileAt(t, filepath.Join(dir, "managed", "managed-settings.json"), managed))
	}
	project := filepath.Join(dir, "project")
	for name, body := range files {
		writeFileAt(t, filepath.Join(project, ".claude", name), body)
	}
	sources, err := LoadSources(append(paths, project), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return project, sources
}

// hookCount counts the loaded hooks, and warnings joins the warnings.
func hookCount(sources []*Source) (n int, warnings string) {
	var all []string
	for _, src := range sources {
		n += len(src.Hooks)
		all = append(all, src.Warnings...)
	}
	return n, strings.Join(all, "\n")
}

const oneHook = `"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}`

// An administrator's kill switch and lock were ignored: disableAllHooks in
// managed-settings.json turned off only its own hooks, and
// allowManagedHooksOnly was an unknown key, so the project's hooks ran
// beside the managed ones. As Claude Code reads them, the managed
// settings' disableAllHooks turns every file's hooks off, its
// allowManagedHooksOnly runs its hooks alone, and another file's
// disableAllHooks leaves only the managed settings' hooks (it cannot turn
// those off).
func TestManagedSettingsGovernTheOtherFilesHooks(t *testing.T) {
	project := map[string]string{"settings.json": `{` + oneHook + `}`, "settings.local.json": `{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "echo local"}]}]}}`}
	tests := []struct {
		name, managed string
		local         string
		want          int
		warning       string
	}{
		{"no managed settings", "", "", 2, ""},
		{"managed hooks beside the others", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo managed"}]}]}}`, "", 3, ""},
		{"managed disableAllHooks", `{"disableAllHooks": true, ` + oneHook + `}`, "", 0, "disableAllHooks is set in the managed settings"},
		{"managed allowManagedHooksOnly", `{"allowManagedHooksOnly": true, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo managed"}]}]}}`, "", 1, "allowManagedHooksOnly is set in the managed settings"},
		{"a project file's disableAllHooks leaves the managed hooks", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo managed"}]}]}}`,
			`{"disableAllHooks": true}`, 1, "it leaves only the managed settings' hooks"},
	}
	for _, tc := range tests {
		files := map[string]string{"settings.json": project["settings.json"], "settings.local.json": project["settings.local.json"]}
		if tc.local != "" {
			files["settings.local.json"] = tc.local
		}
		_, sources := settingsTree(t, tc.managed, files)
		n, warnings := hookCount(sources)
		if n != tc.want || !strings.Contains(warnings, tc.warning) {
			t.Errorf("%s: %d hooks, warnings:\n%s\nwant %d and %q", tc.name, n, warnings, tc.want, tc.warning)
		}
		if strings.Contains(warnings, "unknown settings key") {
			t.Errorf("%s: %s", tc.name, warnings)
		}
	}
	// Set anywhere else, the managed-only keys do nothing, and say so.
	_, sources := settingsTree(t, "", map[string]string{"settings.json": `{"allowManagedHooksOnly": true, ` + oneHook + `}`})
	if n, warnings := hookCount(sources); n != 1 || !strings.Contains(warnings, "apply in managed-settings.json only") {
		t.Errorf("allowManagedHooksOnly in a project file: %d hooks, warnings:\n%s", n, warnings)
	}
}

// allowManagedPermissionRulesOnly keeps the other files' allow, ask and
// deny rules out: the project's allow no longer lets its command through,
// and the managed deny still holds.
func TestManagedPermissionRulesOnly(t *testing.T) {
	files := map[string]string{"settings.json": `{"permissions": {"allow": ["Bash(curl:*)"]}}`}
	managed := `{"permissions": {"deny": ["Bash(rm:*)"]}}`
	for _, only := range []bool{false, true} {
		body := managed
		if only {
			body = `{"allowManagedPermissionRulesOnly": true, "permissions": {"deny": ["Bash(rm:*)"]}}`
		}
		dir, sources := settingsTree(t, body, files)
		p := NewPermissions(sources)
		curl := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "curl https://example.com"}), false)
		rm := p.Evaluate(call(dir, "exec_command", map[string]any{"command_line": "rm -rf build"}), false)
		if rm.Decision != hooks.KindDeny {
			t.Errorf("only=%v: rm = %+v, want the managed deny", only, rm)
		}
		wantCurl := hooks.KindAllow
		if only {
			wantCurl = ""
		}
		if curl.Decision != wantCurl {
			t.Errorf("only=%v: curl = %+v, want %q", only, curl, wantCurl)
		}
		if _, warnings := hookCount(sources); only != strings.Contains(warnings, "its permission rules do not apply") {
			t.Errorf("only=%v: warnings:\n%s", only, warnings)
		}
	}
}

// The files' env is one session's, as Claude Code gives it to every
// process of a session: a hook of settings.json sees the webhook URL kept
// in settings.local.json, and the local value wins where both set one.
func TestHooksSeeEveryFilesEnv(t *testing.T) {
	dir, sources := settingsTree(t, "", map[string]string{
		"settings.json":       `{"env": {"STAGE": "project", "TEAM": "infra"}, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "echo \"$STAGE $TEAM $WEBHOOK_URL\" > \"$CLAUDE_PROJECT_DIR/env.out\""}]}]}}`,
		"settings.local.json": `{"env": {"STAGE": "local", "WEBHOOK_URL": "https://hooks.example/x"}}`,
	})
	r := hooks.NewRegistry()
	for _, src := range sources {
		r.AddSource(src.Registered())
	}
	r.RunPreToolUse(context.Background(), commandPreEvent(dir))
	raw, err := os.ReadFile(filepath.Join(dir, "env.out"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(raw)); got != "local infra https://hooks.example/x" {
		t.Errorf("the settings.json hook saw %q", got)
	}
}
