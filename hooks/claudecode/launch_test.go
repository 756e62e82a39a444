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
