package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeSettings(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hooks.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
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
	    "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}]
	  }
	}`)
	hooks, err := LoadCommandHooks(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 5 {
		t.Fatalf("loaded %d hooks, want 5", len(hooks))
	}
	guard := hooks[0].(*CommandHook)
	if guard.Event() != EventPreToolUse || !guard.FailClosed() || guard.timeout != 10*time.Second || guard.matcher == nil {
		t.Errorf("guard = %+v", guard)
	}
	if guard.dir != filepath.Dir(path) {
		t.Errorf("dir = %q, want the settings file's directory", guard.dir)
	}
	if hooks[1].Name() != "pre-audit" || hooks[1].(*CommandHook).FailClosed() {
		t.Errorf("second hook = %+v", hooks[1])
	}
	redact := hooks[2].(*CommandHook)
	if redact.Event() != EventPostToolUse || redact.timeout != 500*time.Millisecond || redact.matcher != nil {
		t.Errorf("redact = %+v", redact)
	}
	if hooks[3].(*CommandHook).Event() != EventSessionStop || hooks[4].(*CommandHook).Event() != EventSessionStop {
		t.Errorf("SessionEnd and Stop must both map to session_stop")
	}
	if d := hooks[4].(*CommandHook).timeout; d != DefaultCommandTimeout {
		t.Errorf("default timeout = %s, want %s", d, DefaultCommandTimeout)
	}
	if !strings.Contains(guard.Name(), "PreToolUse") || !strings.Contains(guard.Name(), "./guard.sh") {
		t.Errorf("default name %q should say the event and command", guard.Name())
	}
}

func TestLoadCommandHooksErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"unknown event", `{"hooks": {"PreToolUse": [], "UserPromptSubmit": []}}`,
			[]string{"hooks.UserPromptSubmit", `unknown event "UserPromptSubmit"`, "PreToolUse"}},
		{"bad regex", `{"hooks": {"PreToolUse": [{"matcher": "exec(", "hooks": [{"type": "command", "command": "x"}]}]}}`,
			[]string{"hooks.PreToolUse[0].matcher", `"exec("`, "regular expression"}},
		{"missing command", `{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "ok"}, {"type": "command"}]}]}}`,
			[]string{"hooks.PostToolUse[0].hooks[1]", "command is missing"}},
		{"unsupported type", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}`,
			[]string{"hooks.PreToolUse[0].hooks[0]", `type "prompt"`}},
		{"misspelled field", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "failclosed": true}]}]}}`,
			[]string{"hooks.PreToolUse[0].hooks[0]", "failclosed"}},
		{"bad timeout", `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}`,
			[]string{"hooks.PreToolUse[0].hooks[0]", "timeout"}},
		{"empty group", `{"hooks": {"PreToolUse": [{"matcher": "x"}]}}`,
			[]string{"hooks.PreToolUse[0]", "empty"}},
		{"groups not a list", `{"hooks": {"PreToolUse": {"matcher": "x"}}}`,
			[]string{"hooks.PreToolUse", "list"}},
		{"not JSON", `{"hooks": `, []string{"not a JSON object"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSettings(t, tc.body)
			_, err := LoadCommandHooks(path)
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
	r := NewRegistry()
	for _, h := range loaded {
		r.Add(h)
	}
	workspace := t.TempDir()
	ev := commandPreEvent(workspace)
	ev.ToolInput = map[string]any{"command": "rm -rf /"}
	if res := r.RunPreToolUse(context.Background(), ev); !res.Blocked() || res.Action.Reason != "no rm" {
		t.Errorf("rm: %+v, want blocked", res)
	}
	ev.ToolInput = map[string]any{"command": "ls"}
	if res := r.RunPreToolUse(context.Background(), ev); res.Blocked() {
		t.Errorf("ls: %+v, want allowed", res)
	}
}
