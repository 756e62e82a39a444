package claudecode

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/hooks"
)

// failingLauncher is a worker that cannot confine a hook.
type failingLauncher struct{}

func (failingLauncher) Start(*exec.Cmd, string) (func(), error) {
	return nil, errors.New("its ruleset could not be cut")
}

// A hook the worker cannot start in its confinement fails closed, though
// it does not say onFailure: block — not running a guard must not let the
// call through — and nothing of it runs.
func TestHookThatCannotBeConfinedFailsClosed(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	h, err := NewCommandHook(CommandHookConfig{Command: "touch " + ran, ExternalHookConfig: ExternalHookConfig{
		Event: "PreToolUse", Timeout: 10 * time.Second, Launcher: failingLauncher{}}})
	if err != nil {
		t.Fatal(err)
	}
	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	if err == nil || action.Kind != hooks.KindBlock || !strings.Contains(action.Reason, "could not be started in the worker's confinement") {
		t.Fatalf("action = %+v, err = %v, want a fail-closed block naming the confinement", action, err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the hook ran unconfined")
	}
}

// realLauncher starts the process as a confining launcher would, with its
// own start errors.
type realLauncher struct{}

func (realLauncher) Start(cmd *exec.Cmd, _ string) (func(), error) { return func() {}, cmd.Start() }

// An exec-form hook whose program is missing could not start, confined or
// not: it fails open as in Claude Code (unless onFailure: block), not
// closed as a confinement failure does.
func TestConfinedHookWhoseProgramIsMissingCouldNotStart(t *testing.T) {
	dir := t.TempDir()
	h, err := NewCommandHook(CommandHookConfig{Command: "fenix-no-such-guard-program", Args: []string{}, ExternalHookConfig: ExternalHookConfig{
		Event: "PreToolUse", Timeout: 10 * time.Second, Launcher: realLauncher{}}})
	if err != nil {
		t.Fatal(err)
	}
	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	if err == nil || action.Kind != hooks.KindContinue || strings.Contains(err.Error(), "confinement") {
		t.Fatalf("action = %+v, err = %v, want a could-not-start failure that fails open", action, err)
	}
}

// A guard whose script lost its executable bit, or whose #! names an
// interpreter the host lacks, failed on every call and, without
// onFailure "block", let each through, with nothing said until the
// first call. The load warns, naming the script and why.
func TestUnrunnableHookScriptsWarnAtLoad(t *testing.T) {
	dir := t.TempDir()
	hooksDir := filepath.Join(dir, ".claude", "hooks")
	writeFileAt(t, filepath.Join(hooksDir, "noexec.sh"), "#!/bin/sh\nexit 2\n")
	for name, body := range map[string]string{"nointerp.py": "#!/usr/bin/python9\nimport sys\n", "noenv.py": "#!/usr/bin/env python9\nimport sys\n"} {
		if err := os.WriteFile(filepath.Join(hooksDir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeScript(t, hooksDir, "fine.sh", "exit 0")
	sources := project(t, dir, map[string]string{"settings.json": `{"hooks": {"PreToolUse": [{"hooks": [
		{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/noexec.sh"},
		{"type": "command", "command": ".claude/hooks/nointerp.py"},
		{"type": "command", "command": ".claude/hooks/noenv.py"},
		{"type": "command", "command": ".claude/hooks/fine.sh && sh .claude/hooks/noexec.sh"}]}]}}`})
	_, warnings := hookCount(sources)
	for _, want := range []string{"noexec.sh is not executable (mode -rw-r--r--)", "nointerp.py names the interpreter /usr/bin/python9, which is not there",
		"noenv.py names the interpreter python9 (#!/usr/bin/env python9), which is not on the worker's PATH"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
	if strings.Contains(warnings, "fine.sh") || strings.Count(warnings, "noexec.sh is not executable") != 1 {
		t.Errorf("a runnable script, or one an interpreter is given, warned:\n%s", warnings)
	}
}
