package claudecode

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/hooks"
)

func writeSettings(t *testing.T, body string) string {
	t.Helper()
	return writeFileAt(t, filepath.Join(t.TempDir(), "hooks.json"), body)
}

func writeFileAt(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadSource(t *testing.T, path string) *Source {
	t.Helper()
	src, err := LoadSource(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func external(t *testing.T, h hooks.AgentHook) *ExternalHook {
	t.Helper()
	eh, ok := h.(*ExternalHook)
	if !ok {
		t.Fatalf("%T is not an external hook", h)
	}
	return eh
}

func TestLoadCommandHooks(t *testing.T) {
	path := writeSettings(t, `{
	  "permissions": {"allow": ["Bash"]},
	  "hooks": {
	    "PreToolUse": [
	      {"matcher": "exec_command|workspace_.*", "hooks": [
	        {"type": "command", "command": "./guard.sh", "timeout": 10, "fail_closed": true},
	        {"type": "command", "command": "./audit.sh", "name": "pre-audit"}
	      ]}
	    ],
	    "PostToolUse": [{"hooks": [{"type": "command", "command": "./redact.sh", "timeout": 0.5}]}],
	    "SessionEnd": [{"matcher": "*", "hooks": [{"type": "command", "command": "./bye.sh"}]}],
	    "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}],
	    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./prompt.sh"}]}]
	  }
	}`)
	loaded, err := LoadCommandHooks(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 6 {
		t.Fatalf("loaded %d hooks, want 6", len(loaded))
	}
	guard := external(t, loaded[0])
	if guard.Event() != hooks.EventPreToolUse || !guard.FailClosed() || guard.Timeout() != 10*time.Second || guard.Dialect() != DialectFenix {
		t.Errorf("guard = %+v", guard)
	}
	if guard.paths.Dir != filepath.Dir(path) {
		t.Errorf("dir = %q, want the settings file's directory", guard.paths.Dir)
	}
	if loaded[1].Name() != "pre-audit" || external(t, loaded[1]).FailClosed() {
		t.Errorf("second hook = %+v", loaded[1])
	}
	redact := external(t, loaded[2])
	if redact.Event() != hooks.EventPostToolUse || redact.Timeout() != 500*time.Millisecond {
		t.Errorf("redact = %+v", redact)
	}
	// SessionEnd is the session's end; Stop is the agent's turn stop.
	if external(t, loaded[3]).Event() != hooks.EventSessionStop || external(t, loaded[4]).Event() != hooks.EventStop {
		t.Errorf("SessionEnd must map to session_stop and Stop to stop")
	}
	if d := external(t, loaded[4]).Timeout(); d != 600*time.Second {
		t.Errorf("default timeout = %s, want Claude Code's 600s", d)
	}
	if d := external(t, loaded[5]).Timeout(); d != 30*time.Second {
		t.Errorf("UserPromptSubmit default timeout = %s, want Claude Code's 30s", d)
	}
	if !strings.Contains(guard.Name(), "PreToolUse") || !strings.Contains(guard.Name(), "./guard.sh") {
		t.Errorf("default name %q should say the event and command", guard.Name())
	}
}

// A real project's settings file, full of events and handler fields Fenix
// does not use, loads: what Fenix skips is reported as a warning.
func TestSettingsFullOfUnusedEventsAndKeysLoadWithWarnings(t *testing.T) {
	project := t.TempDir()
	path := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{
	  "$schema": "https://json.schemastore.org/claude-code-settings.json",
	  "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"]},
	  "model": "opus",
	  "statusLine": {"type": "command", "command": "status.sh"},
	  "hooks": {
	    "Setup": [{"matcher": "init", "hooks": [{"type": "command", "command": "npm ci"}]}],
	    "CwdChanged": [{"hooks": [{"type": "command", "command": "echo changed"}]}],
	    "FancyFutureEvent": [{"hooks": [{"type": "command", "command": "echo future"}]}],
	    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo ctx", "statusMessage": "Thinking", "once": true}]}],
	    "Notification": [{"matcher": "permission_prompt|idle_prompt", "hooks": [{"type": "command", "command": "notify.sh", "async": true}]}],
	    "PreToolUse": [
	      {"matcher": "Bash", "description": "guards", "hooks": [
	        {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py", "if": "Bash(rm *)", "onFailure": "block", "statusMessage": "Checking"},
	        {"type": "prompt", "prompt": "Is this safe? $ARGUMENTS", "model": "haiku"},
	        {"type": "mcp_tool", "server": "sec", "tool": "scan", "input": {"cmd": "${tool_input.command}"}},
	        {"type": "command", "command": "audit.sh", "sparkle": 3}
	      ]}
	    ],
	    "Stop": [{"hooks": [{"type": "agent", "prompt": "verify"}]}]
	  }
	}`)
	src := loadSource(t, path)
	if src.Kind != SourceProject || src.Dialect != DialectClaude {
		t.Fatalf("kind %s, dialect %s, want a project file in the claude dialect", src.Kind, src.Dialect)
	}
	if len(src.Hooks) != 4 {
		t.Fatalf("loaded %d hooks, want the 4 command hooks", len(src.Hooks))
	}
	guard := external(t, src.Hooks[2])
	if guard.Event() != hooks.EventPreToolUse || !guard.FailClosed() || guard.selectors[0].rule == nil {
		t.Errorf("guard = %+v, want onFailure block and the if rule", guard)
	}
	if !external(t, src.Hooks[1]).async {
		t.Error("async was not kept")
	}
	joined := strings.Join(src.Warnings, "\n")
	for _, want := range []string{
		`Claude Code event "Setup" is not fired`, `Claude Code event "CwdChanged" is not fired`,
		`unknown event "FancyFutureEvent"`, `"statusMessage" is ignored`, `"once" is ignored`,
		`prompt handler skipped: this worker has no model to evaluate it`, `mcp_tool handler skipped: this worker has no MCP servers configured`, `agent handler skipped: nothing here can evaluate it`,
		`unknown handler field "sparkle"`, `unknown matcher-group field "description"`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings do not mention %s:\n%s", want, joined)
		}
	}
	if !strings.Contains(joined, path) {
		t.Errorf("warnings do not name the file:\n%s", joined)
	}
}

func TestLoadSourceErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"bad regex", `{"hooks": {"PreToolUse": [{"matcher": "exec(", "hooks": [{"type": "command", "command": "x"}]}]}}`,
			[]string{"hooks.PreToolUse[0].matcher", `"exec("`, "regular expression"}},
		{"missing command", `{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "ok"}, {"type": "command"}]}]}}`,
			[]string{"hooks.PostToolUse[0].hooks[1]", "command is missing"}},
		{"missing url", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "http"}]}]}}`,
			[]string{"hooks.PreToolUse[0].hooks[0]", "url is missing"}},
		{"fail-closed hook Fenix cannot run", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "x", "onFailure": "block"}]}]}}`,
			[]string{"hooks.PreToolUse[0].hooks[0]", `prompt handler cannot run: this worker has no model`, "fail closed"}},
		{"bad timeout", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}`,
			[]string{"hooks.PreToolUse[0].hooks[0]", "timeout"}},
		{"groups not a list", `{"hooks": {"PreToolUse": {"matcher": "x"}}}`,
			[]string{"hooks.PreToolUse", "list"}},
		{"bad dialect", `{"fenixDialect": "cobol", "hooks": {}}`, []string{`fenixDialect "cobol"`}},
		{"not JSON", `{"hooks": `, []string{"not a JSON object"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSettings(t, tc.body)
			_, err := LoadSource(path, LoadOptions{})
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, want := range append(tc.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestLoadCommandHooksMissingFileAndNoHooks(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.json")
	if _, err := LoadCommandHooks(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("err = %v, want it to name the missing file", err)
	}
	hooks, err := LoadCommandHooks(writeSettings(t, `{"permissions": {}}`))
	if err != nil || len(hooks) != 0 {
		t.Errorf("hooks = %v, err = %v, want none", hooks, err)
	}
	src := loadSource(t, writeSettings(t, `{"disableAllHooks": true, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}}`))
	if len(src.Hooks) != 0 || !strings.Contains(strings.Join(src.Warnings, "\n"), "disableAllHooks") {
		t.Errorf("disableAllHooks: hooks %v, warnings %v", src.Hooks, src.Warnings)
	}
}

func TestDialectDetection(t *testing.T) {
	bash := `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}}`
	fenix := `{"hooks": {"PreToolUse": [{"matcher": "exec_command", "hooks": [{"type": "command", "command": "x"}]}]}}`
	neutral := `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}}`
	dir := t.TempDir()
	tests := []struct {
		name, path, body string
		want             Dialect
		warns            bool
	}{
		{"project settings", filepath.Join(dir, "p", ".claude", "settings.json"), neutral, DialectClaude, false},
		{"local settings", filepath.Join(dir, "p", ".claude", "settings.local.json"), fenix, DialectClaude, false},
		{"plugin hooks.json", filepath.Join(dir, "plug", "hooks", "hooks.json"), neutral, DialectClaude, false},
		{"Claude tool names", filepath.Join(dir, "a.json"), bash, DialectClaude, false},
		{"Fenix tool names", filepath.Join(dir, "b.json"), fenix, DialectFenix, false},
		{"Claude handler field", filepath.Join(dir, "c.json"), `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "onFailure": "block"}]}]}}`, DialectClaude, false},
		{"nothing to go by", filepath.Join(dir, "d.json"), neutral, DialectFenix, true},
		{"override beats location", filepath.Join(dir, "q", ".claude", "settings.json"), `{"fenixDialect": "fenix", "hooks": {}}`, DialectFenix, false},
		{"override beats contents", filepath.Join(dir, "e.json"), `{"fenixDialect": "claude", "hooks": {"PreToolUse": [{"matcher": "exec_command", "hooks": [{"type": "command", "command": "x"}]}]}}`, DialectClaude, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := loadSource(t, writeFileAt(t, tc.path, tc.body))
			if src.Dialect != tc.want {
				t.Errorf("dialect = %s (%s), want %s", src.Dialect, src.DialectReason, tc.want)
			}
			warned := strings.Contains(strings.Join(src.Warnings, "\n"), DialectKey)
			if warned != tc.warns {
				t.Errorf("dialect warning = %v, want %v: %v", warned, tc.warns, src.Warnings)
			}
		})
	}
}

// $CLAUDE_PROJECT_DIR is the directory holding the settings file's
// .claude/, ${CLAUDE_PLUGIN_ROOT} the plugin's root, whatever the
// workspace.
func TestProjectAndPluginDirectories(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "project")
	plugin := filepath.Join(root, "plugins", "fmt")
	writeFileAt(t, filepath.Join(plugin, ".claude-plugin", "plugin.json"), `{"name": "formatter"}`)
	record := `printf '%s\n%s\n%s\n%s\n' "$CLAUDE_PROJECT_DIR" "$CLAUDE_PLUGIN_ROOT" "$CLAUDE_PLUGIN_DATA" "$PWD" > "$OUT"`
	writeFileAt(t, filepath.Join(project, ".claude", "settings.json"),
		`{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "OUT=\"$FENIX_HOOKS_DIR/../project.out\"; `+strings.ReplaceAll(record, `"`, `\"`)+`"}]}]}}`)
	writeFileAt(t, filepath.Join(plugin, "hooks", "hooks.json"),
		`{"description": "fmt", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "OUT=\"${CLAUDE_PLUGIN_ROOT}/plugin.out\"; `+strings.ReplaceAll(record, `"`, `\"`)+`"}]}]}}`)
	dataDir := filepath.Join(root, "data")
	sources, err := LoadSources([]string{project, plugin}, LoadOptions{PluginDataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 2 || sources[0].Kind != SourceProject || sources[1].Kind != SourcePlugin {
		t.Fatalf("sources = %+v", sources)
	}
	r := hooks.NewRegistry()
	for _, s := range sources {
		r.AddSource(s.Registered())
	}
	workspace := t.TempDir()
	sum := r.RunSessionStart(context.Background(), hooks.SessionStartEvent{Session: hooks.Session{SessionID: "s", WorkspaceRoot: workspace}, Source: hooks.SourceStartup})
	if err := sum.Err(); err != nil {
		t.Fatal(err)
	}
	read := func(p string) []string {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	}
	got := read(filepath.Join(project, ".claude", "..", "project.out"))
	if got[0] != project || got[1] != "" || got[3] != workspace {
		t.Errorf("project hook saw CLAUDE_PROJECT_DIR=%q CLAUDE_PLUGIN_ROOT=%q PWD=%q, want %q, unset, %q", got[0], got[1], got[3], project, workspace)
	}
	got = read(filepath.Join(plugin, "plugin.out"))
	if got[1] != plugin || got[2] != filepath.Join(dataDir, "formatter") || got[0] != workspace {
		t.Errorf("plugin hook saw %q, want root %q, data %q and the workspace as project", got, plugin, filepath.Join(dataDir, "formatter"))
	}
	if info := r.Sources(); len(info) != 2 || info[0].Path != sources[0].Path || len(info[0].Data) == 0 {
		t.Errorf("registry sources = %+v", info)
	}
}

func TestResolveSourcePathsOrder(t *testing.T) {
	project := t.TempDir()
	settings := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{}`)
	local := writeFileAt(t, filepath.Join(project, ".claude", "settings.local.json"), `{}`)
	plugin := t.TempDir()
	pluginHooks := writeFileAt(t, filepath.Join(plugin, "hooks", "hooks.json"), `{}`)
	single := writeSettings(t, `{}`)
	got, err := ResolveSourcePaths([]string{single, project, plugin, filepath.Join(project, ".claude")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{single, settings, local, pluginHooks, settings, local}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ResolveSourcePaths([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "must hold") {
		t.Errorf("an empty directory: err = %v", err)
	}
}

// Identical handlers run once, as in Claude Code: the duplicate's matcher
// is folded into the first.
func TestDuplicateHandlersRunOnce(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "count.sh", `echo x >> "$FENIX_HOOKS_DIR/count"`)
	a := writeFileAt(t, filepath.Join(dir, "a.json"), `{"fenixDialect": "claude", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "`+script+`"}]}]}}`)
	b := writeFileAt(t, filepath.Join(dir, "b.json"), `{"fenixDialect": "claude", "hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "`+script+`"}]}]}}`)
	sources, err := LoadSources([]string{a, b}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sources[0].Hooks) != 1 || len(sources[1].Hooks) != 0 || !strings.Contains(strings.Join(sources[1].Warnings, ""), "runs once") {
		t.Fatalf("hooks %d/%d, warnings %v", len(sources[0].Hooks), len(sources[1].Hooks), sources[1].Warnings)
	}
	r := hooks.NewRegistry()
	for _, s := range sources {
		r.AddSource(s.Registered())
	}
	ws := t.TempDir()
	for _, tool := range []string{"exec_command", "workspace_write", "workspace_read"} {
		r.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{Session: hooks.Session{WorkspaceRoot: ws}, ToolName: tool, ToolInput: map[string]any{}})
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "count"))
	if n := strings.Count(string(raw), "x"); n != 2 {
		t.Errorf("the merged hook ran %d times, want 2 (Bash and Write, not Read)", n)
	}
}

// Every file a hooks file references is protected from tool writes, with
// the settings file and the whole .claude/ directory.
func TestReferencedFilesAreProtected(t *testing.T) {
	project := t.TempDir()
	path := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{"hooks": {
	  "PreToolUse": [{"matcher": "Bash", "hooks": [
	    {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py --strict"},
	    {"type": "command", "command": "bash scripts/check.sh && node tools/lint.js 2>/dev/null"},
	    {"type": "command", "command": "/opt/policy/bin/guard"},
	    {"type": "command", "command": "node", "args": ["${CLAUDE_PROJECT_DIR}/hooks/fmt.mjs", "--fix"]}
	  ]}]}}`)
	src := loadSource(t, path)
	for _, want := range []string{path, filepath.Join(project, ".claude"), filepath.Join(project, ".claude", "hooks", "guard.py"),
		"/opt/policy/bin/guard", filepath.Join(project, "hooks", "fmt.mjs")} {
		if !slices.Contains(src.Protected, want) {
			t.Errorf("%s is not protected: %v", want, src.Protected)
		}
	}
	for _, want := range []string{"scripts/check.sh", "tools/lint.js"} {
		if !slices.Contains(src.ProtectedRelative, want) {
			t.Errorf("%s is not protected in workspaces: %v", want, src.ProtectedRelative)
		}
	}
	for _, never := range []string{"--strict", "python3", "bash", "/dev/null"} {
		if slices.Contains(src.Protected, never) || slices.Contains(src.ProtectedRelative, never) {
			t.Errorf("%q is not a referenced file", never)
		}
	}
}

// A settings file outside every project names scripts from the workspace
// with "$CLAUDE_PROJECT_DIR"/...: quoted, that used to render as
// /.claude/hooks/guard.py, so the hook never started ("could not start",
// letting every call through unless it blocks on failure) and the
// workspaces' guard was left unprotected.
func TestQuotedProjectDirOutsideAProjectNamesTheWorkspace(t *testing.T) {
	path := writeFileAt(t, filepath.Join(t.TempDir(), "fleet", "settings.json"), `{"hooks": {
	  "PreToolUse": [{"matcher": "Bash", "hooks": [
	    {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py"},
	    {"type": "command", "command": "\"${CLAUDE_PROJECT_DIR}\"/tools/lint.sh"}
	  ]}]}}`)
	src := loadSource(t, path)
	for _, want := range []string{".claude/hooks/guard.py", "tools/lint.sh"} {
		if !slices.Contains(src.ProtectedRelative, want) {
			t.Errorf("%s is not protected in workspaces: %v (absolute: %v)", want, src.ProtectedRelative, src.Protected)
		}
	}
	w := t.TempDir()
	if err := os.MkdirAll(filepath.Join(w, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(w, "tools"), "lint.sh", `echo ran > "$CLAUDE_PROJECT_DIR/lint-ran.txt"`)
	r := hooks.NewRegistry()
	r.AddSource(src.Registered())
	r.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "s", WorkspaceRoot: w},
		ToolName: "exec_command", CallID: "c", ToolInput: map[string]any{"command_line": "ls"}})
	if _, err := os.Stat(filepath.Join(w, "lint-ran.txt")); err != nil {
		t.Errorf("the workspace's script did not run: %v", err)
	}
}

func TestLoadedHooksRunEndToEnd(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "guard.sh", `grep -q '"rm' && { echo "no rm" >&2; exit 2; }; exit 0`)
	settings := filepath.Join(dir, "hooks.json")
	body := `{"hooks": {"PreToolUse": [{"matcher": "exec_command", "hooks": [{"type": "command", "command": "\"$FENIX_HOOKS_DIR/guard.sh\"", "fail_closed": true}]}]}}`
	if err := os.WriteFile(settings, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCommandHooks(settings)
	if err != nil {
		t.Fatal(err)
	}
	r := hooks.NewRegistry()
	for _, h := range loaded {
		r.Add(h)
	}
	workspace := t.TempDir()
	ev := commandPreEvent(workspace)
	ev.ToolInput = map[string]any{"command_line": "rm -rf /"}
	if res := r.RunPreToolUse(context.Background(), ev); !res.Blocked() || res.Action.Reason != "no rm" {
		t.Errorf("rm: %+v, want blocked", res)
	}
	ev.ToolInput = map[string]any{"command_line": "ls"}
	if res := r.RunPreToolUse(context.Background(), ev); res.Blocked() {
		t.Errorf("ls: %+v, want allowed", res)
	}
}

// The settings file's env reaches its hook processes (see
// TestCommandHookEnvironmentHoldsNoWorkerSecrets) and, merged across the
// files with the later one winning, every command (CommandEnv), also
// from a file whose hooks are all disabled; the load no longer warns
// about the key.
func TestSettingsEnvReachesHooksAndCommands(t *testing.T) {
	project := loadSource(t, writeSettings(t, `{"env": {"PROJECT_STAGE": "dev", "NODE_ENV": "development"}, "hooks": {}}`))
	joined := strings.Join(project.Warnings, "\n")
	if strings.Contains(joined, `"env"`) {
		t.Errorf("warnings = %s", joined)
	}
	local := loadSource(t, writeSettings(t, `{"env": {"NODE_ENV": "test"}, "disableAllHooks": true}`))
	none := loadSource(t, writeSettings(t, `{"hooks": {}}`))
	env, from := CommandEnv([]*Source{project, none, local})
	if want := map[string]string{"PROJECT_STAGE": "dev", "NODE_ENV": "test"}; !maps.Equal(env, want) {
		t.Errorf("CommandEnv = %v, want %v", env, want)
	}
	if len(from) != 2 || from[0] != project.Path || from[1] != local.Path {
		t.Errorf("from = %v, want the two files that set env", from)
	}
	if env, from := CommandEnv([]*Source{none}); env != nil || from != nil {
		t.Errorf("no env: got %v from %v", env, from)
	}
}
