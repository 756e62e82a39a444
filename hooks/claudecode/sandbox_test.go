package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/hooks"
)

// A hook gets the environment Claude Code gives it — PATH, HOME, the
// CLAUDE_* variables and the settings file's "env" — never the worker's
// secrets.
func TestCommandHookEnvironmentHoldsNoWorkerSecrets(t *testing.T) {
	t.Setenv("FENIX_OPENAI_API_KEY", "sk-proj-worker-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "worker-aws-secret")
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(project, ".claude", "hooks"), "env.sh", `env > "$CLAUDE_PROJECT_DIR/env.out"`)
	path := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{"env": {"PROJECT_STAGE": "dev", "GIT_CONFIG_GLOBAL": "/project/gitconfig"},
	  "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/env.sh"}]}]}}`)
	// The worker's own variables for hooks (LoadOptions.HookEnv) reach
	// them under the settings file's.
	src, err := LoadSource(path, LoadOptions{HookEnv: map[string]string{"PYTHONNOUSERSITE": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	r := hooks.NewRegistry()
	r.AddSource(src.Registered())
	r.RunPreToolUse(context.Background(), commandPreEvent(project))
	raw, err := os.ReadFile(filepath.Join(project, "env.out"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(raw)
	for _, secret := range []string{"FENIX_OPENAI_API_KEY", "sk-proj-worker-secret", "AWS_SECRET_ACCESS_KEY"} {
		if strings.Contains(env, secret) {
			t.Errorf("the hook saw %s:\n%s", secret, env)
		}
	}
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "HOME=", "CLAUDE_PROJECT_DIR=" + project, "PROJECT_STAGE=dev",
		"PYTHONNOUSERSITE=1", "GIT_CONFIG_GLOBAL=/project/gitconfig"} {
		if !strings.Contains(env, want) {
			t.Errorf("the hook's environment lacks %s:\n%s", want, env)
		}
	}
}

// detachedScript starts a grandchild in a session of its own (out of the
// hook's process group) and records its PID.
const detachedScript = `setsid sleep 1000 &
echo "$!" > "$PWD/pids"`

// A hook's detached descendants die with it: when it exits normally and
// when its timeout kills it.
func TestCommandHookKillsDetachedDescendants(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
	}{
		{"normal exit", detachedScript},
		{"timeout", detachedScript + "\nsleep 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "detach.sh", tc.script), Timeout: 500 * time.Millisecond})
			start := time.Now()
			_, _ = h.PreToolUse(context.Background(), commandPreEvent(dir))
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("hook took %s with a 500ms timeout", elapsed)
			}
			assertProcessesGone(t, readPIDs(t, filepath.Join(dir, "pids")))
		})
	}
}

// A hook that cannot start (its script is missing) is a hook failure named
// after the file: with onFailure "block" it blocks, as Claude Code does.
func TestCommandHookThatCannotStart(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "gone", "guard.py")
	for _, command := range []string{missing, "python3 " + missing, "bash " + filepath.Join(dir, "gone.sh")} {
		t.Run(command, func(t *testing.T) {
			h := newCommandHook(t, cmdHook{Command: command, FailClosed: true})
			action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
			if err == nil || !strings.Contains(err.Error(), "could not start") || action.Kind != hooks.KindBlock {
				t.Fatalf("action = %+v, err = %v, want a fail-closed block saying it could not start", action, err)
			}
			h = newCommandHook(t, cmdHook{Command: command})
			action, err = h.PreToolUse(context.Background(), commandPreEvent(dir))
			if err == nil || !strings.Contains(err.Error(), "could not start") || action.Kind != hooks.KindContinue {
				t.Fatalf("action = %+v, err = %v, want a non-blocking error saying it could not start", action, err)
			}
		})
	}
}
