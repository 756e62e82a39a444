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
