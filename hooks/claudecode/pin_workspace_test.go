package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// A settings file outside every project (a fleet's, given with
// -claude-settings) whose hooks name their scripts from the workspace —
// "$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh, sh .claude/hooks/guard.sh
// — ran each workspace's script live: an agent's command that rewrote it
// turned the guard off for its next call. Each workspace's scripts are now
// pinned at the hook's first run there, and later runs there run that
// copy; another workspace gets its own.
func TestFleetHooksPinEachWorkspacesScriptsAtFirstRun(t *testing.T) {
	for name, command := range map[string]string{
		"from CLAUDE_PROJECT_DIR": `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`,
		"relative":                `sh .claude/hooks/guard.sh`,
	} {
		t.Run(name, func(t *testing.T) {
			r := fleetGuard(t, command)
			workspaces := map[string]string{}
			for _, name := range []string{"alpha", "beta"} {
				w := filepath.Join(t.TempDir(), name)
				hooksDir := filepath.Join(w, ".claude", "hooks")
				if err := os.MkdirAll(hooksDir, 0o755); err != nil {
					t.Fatal(err)
				}
				writeScript(t, hooksDir, "lib.sh", `deny() { echo "blocked by `+name+`'s pinned guard: $1" >&2; exit 2; }`)
				writeScript(t, hooksDir, "guard.sh", `. "$(dirname "$0")/lib.sh"
grep -q '"rm' && deny rm
exit 0`)
				workspaces[name] = w
			}
			check := func(when string) {
				t.Helper()
				for name, w := range workspaces {
					res := r.RunPreToolUse(context.Background(), rmEvent(w))
					if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by "+name+"'s pinned guard: rm") {
						t.Errorf("%s, in %s: %+v, want %s's guard's block", when, name, res, name)
					}
				}
			}
			check("at the first run")
			for _, w := range workspaces {
				for _, f := range []string{"guard.sh", "lib.sh"} {
					if err := os.WriteFile(filepath.Join(w, ".claude", "hooks", f), []byte("deny() { exit 0; }\nexit 0\n"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			check("after the agent rewrote the scripts")

		})
	}
}

// A workspace that has no script where the fleet's hook names it at the
// hook's first run there does not get one later: the hook cannot start
// there until the hooks are reloaded, whatever the agent writes.
func TestFleetHooksDoNotRunAScriptWrittenAfterTheFirstRun(t *testing.T) {
	r := fleetGuard(t, `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`)
	w := filepath.Join(t.TempDir(), "workspace")
	if err := os.MkdirAll(w, 0o755); err != nil {
		t.Fatal(err)
	}
	if res := r.RunPreToolUse(context.Background(), rmEvent(w)); !res.Blocked() {
		t.Fatalf("first run, no script: %+v, want the fail-closed hook to block", res)
	}
	hooksDir := filepath.Join(w, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, hooksDir, "guard.sh", `echo ran > "$CLAUDE_PROJECT_DIR/planted-ran.txt"; exit 0`)
	res := r.RunPreToolUse(context.Background(), rmEvent(w))
	if !res.Blocked() || !strings.Contains(res.Action.Reason, "did not exist when the hook first ran in this workspace") {
		t.Errorf("%+v, want the hook blocked as not started", res)
	}
	if _, err := os.Stat(filepath.Join(w, "planted-ran.txt")); err == nil {
		t.Error("the script written after the first run ran")
	}
}

// fleetGuard loads a settings file outside every project with command as
// a fail-closed PreToolUse hook for Bash, with a fresh store.
func fleetGuard(t *testing.T, command string) *hooks.Registry {
	t.Helper()
	settings := writeFileAt(t, filepath.Join(t.TempDir(), "fleet", "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "`+command+`", "onFailure": "block"}]}]}}`)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := pinnedRegistry(t, settings, store)
	return r
}

// A restarted worker used to pin a fleet hook's workspace scripts again at
// their first run, from what an agent had written there meanwhile. With
// the book of pins kept across the restart it runs the copies of the
// first run; a book whose copies are gone does not start the hook.
func TestFleetPinsSurviveARestart(t *testing.T) {
	settings := writeFileAt(t, filepath.Join(t.TempDir(), "fleet", "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "onFailure": "block"}]}]}}`)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	var saved []WorkspacePin
	start := func(book *WorkspacePinBook) *hooks.Registry {
		r, _ := loadRegistry(t, []string{settings}, LoadOptions{Scripts: store, WorkspacePins: book})
		return r
	}
	w := filepath.Join(t.TempDir(), "workspace")
	hooksDir := filepath.Join(w, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	guard := writeScript(t, hooksDir, "guard.sh", `grep -q '"rm' && { echo "blocked by the pinned guard: rm" >&2; exit 2; }
exit 0`)
	first := start(NewWorkspacePinBook(nil, func(p []WorkspacePin) error { saved = p; return nil }))
	if res := first.RunPreToolUse(context.Background(), rmEvent(w)); !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
		t.Fatalf("first run: %+v, want the guard's block", res)
	}
	if len(saved) != 1 || saved[0].Workspace != w || len(saved[0].Stored) != 1 {
		t.Fatalf("saved pins %+v, want one for %s with its stored copy", saved, w)
	}
	if err := os.WriteFile(guard, []byte("exit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res := start(NewWorkspacePinBook(saved, nil)).RunPreToolUse(context.Background(), rmEvent(w)); !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
		t.Errorf("restarted with the book: %+v, want the guard of the first run", res)
	}
	if res := start(nil).RunPreToolUse(context.Background(), rmEvent(w)); res.Blocked() {
		t.Errorf("restarted without the book: %+v; the test no longer shows what the book keeps", res)
	}
	gone := saved[0]
	gone.Stored = []string{filepath.Join(store.Dir(), "gone")}
	res := start(NewWorkspacePinBook([]WorkspacePin{gone}, nil)).RunPreToolUse(context.Background(), rmEvent(w))
	if !res.Blocked() || !strings.Contains(res.Action.Reason, "is gone") {
		t.Errorf("a pin whose copy is gone: %+v, want the hook not started", res)
	}
}
