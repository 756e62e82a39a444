package claudecode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// Scripts reached through symlinks — a guard linked in from a dotfiles
// checkout or a tools/ directory, a helper or a lib/ directory linked next
// to it, an interpreter linked into the hooks directory — used to be left
// out of the pinned copy: a linked guard ran from the project, where the
// agent can replace the link, and a guard whose linked helper was missing
// from its copy failed, which lets the call through unless the hook
// blocks on failure. Each is pinned now, as the script sees it when it
// runs: the link's name holds the target's bytes, and the files next to
// the target (where Python, Node and `readlink -f "$0"` look) come along.
// Rewriting the targets or replacing the links after the load changes
// nothing, loaded from disk or from the accepted snapshot.
func TestScriptsReachedThroughLinksArePinned(t *testing.T) {
	python, _ := exec.LookPath("python3")
	for _, layout := range []struct {
		name string
		// build lays the project out and returns the hook's command and
		// the files an agent rewrites or replaces afterwards.
		build func(t *testing.T, project, elsewhere string) (command string, tamper []string)
	}{
		{"the guard is a link out of the project", func(t *testing.T, project, elsewhere string) (string, []string) {
			writeScript(t, elsewhere, "lib.sh", `deny() { echo "blocked by the pinned guard: $1" >&2; exit 2; }`)
			guard := writeScript(t, elsewhere, "guard.sh", `. "$(dirname "$(readlink -f "$0")")/lib.sh"
grep -q '"rm' && deny rm
exit 0`)
			link := symlink(t, guard, filepath.Join(project, ".claude", "hooks", "guard.sh"))
			return `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`, []string{link, guard, filepath.Join(elsewhere, "lib.sh")}
		}},
		{"a Python guard linked from tools/, its module beside the target", func(t *testing.T, project, elsewhere string) (string, []string) {
			if python == "" {
				t.Skip("python3 is not installed")
			}
			tools := filepath.Join(project, "tools", "hooks")
			if err := os.MkdirAll(tools, 0o755); err != nil {
				t.Fatal(err)
			}
			lib := writeFileAt(t, filepath.Join(tools, "denylist.py"), "WORDS = ['rm']\n")
			guard := writeFileAt(t, filepath.Join(tools, "guard.py"), `import json, sys
from denylist import WORDS
command = json.load(sys.stdin)["tool_input"].get("command", "")
if command.split()[:1] and command.split()[0] in WORDS:
    print("blocked by the pinned guard: " + command.split()[0], file=sys.stderr)
    sys.exit(2)
`)
			link := symlink(t, "../../tools/hooks/guard.py", filepath.Join(project, ".claude", "hooks", "guard.py"))
			return python + ` \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py`, []string{link, guard, lib}
		}},
		{"a helper is a link", func(t *testing.T, project, elsewhere string) (string, []string) {
			lib := writeScript(t, elsewhere, "lib.sh", `deny() { echo "blocked by the pinned guard: $1" >&2; exit 2; }`)
			hooksDir := filepath.Join(project, ".claude", "hooks")
			symlink(t, lib, filepath.Join(hooksDir, "lib.sh"))
			guard := writeScript(t, hooksDir, "guard.sh", `. "$(dirname "$0")/lib.sh" || exit 0
grep -q '"rm' && deny rm
exit 0`)
			return `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`, []string{lib, guard}
		}},
		{"a helper directory is a link", func(t *testing.T, project, elsewhere string) (string, []string) {
			shared := filepath.Join(elsewhere, "lib")
			if err := os.MkdirAll(shared, 0o755); err != nil {
				t.Fatal(err)
			}
			lib := writeScript(t, shared, "deny.sh", `deny() { echo "blocked by the pinned guard: $1" >&2; exit 2; }`)
			hooksDir := filepath.Join(project, ".claude", "hooks")
			symlink(t, shared, filepath.Join(hooksDir, "lib"))
			symlink(t, hooksDir, filepath.Join(shared, "loop")) // a cycle is walked once
			guard := writeScript(t, hooksDir, "guard.sh", `. "$(dirname "$0")/lib/deny.sh" || exit 0
grep -q '"rm' && deny rm
exit 0`)
			return `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`, []string{lib, guard}
		}},
	} {
		t.Run(layout.name, func(t *testing.T) {
			project := filepath.Join(t.TempDir(), "project")
			elsewhere := filepath.Join(t.TempDir(), "dotfiles")
			for _, d := range []string{filepath.Join(project, ".claude", "hooks"), elsewhere} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			command, tamper := layout.build(t, project, elsewhere)
			_, src, store := loadGuardCommand(t, project, command)
			if len(src.Warnings) != 0 {
				t.Errorf("warnings %q, want none", src.Warnings)
			}
			loaded, snap := loadRegistry(t, []string{project}, LoadOptions{Scripts: store})
			allowed := rmEvent(project)
			allowed.ToolInput = map[string]any{"command_line": "ls"}
			if res := loaded.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
				t.Fatalf("before tampering: %+v, want the guard's block", res)
			}
			if res := loaded.RunPreToolUse(context.Background(), allowed); res.Blocked() {
				t.Fatalf("before tampering, ls: %+v, want it through", res)
			}
			for _, f := range tamper {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, []byte("#!/bin/sh\ndeny() { exit 0; }\nexit 0\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			fromSnapshot, _ := loadRegistry(t, nil, LoadOptions{Scripts: store, Snapshot: &snap})
			for name, r := range map[string]*hooks.Registry{"loaded": loaded, "from the snapshot": fromSnapshot} {
				res := r.RunPreToolUse(context.Background(), rmEvent(project))
				if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
					t.Errorf("%s, after tampering: %+v, want the pinned guard's block", name, res)
				}
			}
		})
	}
}

// A guard that is a dangling link at load is absent: whatever the agent
// creates where the link points later is not run.
func TestADanglingLinkedGuardIsAbsent(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	hooksDir := filepath.Join(project, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(project, "scratch", "guard.sh")
	symlink(t, target, filepath.Join(hooksDir, "guard.sh"))
	r, _, _ := loadGuardCommand(t, project, `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Dir(target), "guard.sh", `echo ran > "$CLAUDE_PROJECT_DIR/planted-ran.txt"; exit 0`)
	res := r.RunPreToolUse(context.Background(), rmEvent(project))
	if !res.Blocked() || !strings.Contains(res.Action.Reason, "did not exist when the hook settings were loaded") {
		t.Errorf("%+v, want the hook blocked as not started", res)
	}
	if _, err := os.Stat(filepath.Join(project, "planted-ran.txt")); err == nil {
		t.Error("the script planted behind the dangling link ran")
	}
}

// A virtualenv's bin/python is a link to the system's interpreter, which
// finds the environment's packages beside the link: it runs through the
// link, as before, and the load says that whoever can write the link's
// directory can change what runs. The script it runs is pinned.
func TestALinkToTheSystemsInterpreterRunsThroughTheLink(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	venv := filepath.Join(project, ".venv", "bin")
	hooksDir := filepath.Join(project, ".claude", "hooks")
	for _, d := range []string{venv, hooksDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "/bin/sh", filepath.Join(venv, "sh"))
	guard := writeScript(t, hooksDir, "guard.sh", `grep -q '"rm' && { echo "blocked by the pinned guard: rm" >&2; exit 2; }
exit 0`)
	r, src, store := loadGuardCommand(t, project, `\"$CLAUDE_PROJECT_DIR\"/.venv/bin/sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`)
	if w := strings.Join(src.Warnings, "\n"); !strings.Contains(w, filepath.Join(venv, "sh")+" is a link to ") || !strings.Contains(w, "it runs through the link") {
		t.Errorf("warnings %q, want one naming the linked interpreter", src.Warnings)
	}
	commands := strings.Join(hookCommands(src), "\n")
	if !strings.Contains(commands, "$CLAUDE_PROJECT_DIR\"/.venv/bin/sh") || !strings.Contains(commands, store.Dir()) {
		t.Errorf("the hook runs %q, want the linked interpreter on the stored guard", commands)
	}
	if err := os.WriteFile(guard, []byte("exit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res := r.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
		t.Errorf("%+v, want the pinned guard's block", res)
	}
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// A link to / in a hooks directory ends the walk as too large, with the
// directory named, instead of copying the disk.
func TestALinkToTheRootIsRefusedAsTooLarge(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	hooksDir := filepath.Join(project, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, hooksDir, "guard.sh", "exit 0")
	symlink(t, "/", filepath.Join(hooksDir, "everything"))
	settings := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}]}}`)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadSource(settings, LoadOptions{Scripts: store})
	if err == nil || !strings.Contains(err.Error(), hooksDir+" holds more than") {
		t.Fatalf("load: %v, want the hooks directory refused as too large", err)
	}
}

// A project whose path has a space or a $ in it ("/home/ana/My Projects")
// had its scripts neither pinned nor protected: the rendered path was
// taken for something other than a path, and the guard ran from the
// project, where the agent can rewrite it.
func TestScriptsOfAProjectWhosePathHasSpacesArePinned(t *testing.T) {
	for _, name := range []string{"My Projects", "cost$1", "tab\there"} {
		t.Run(name, func(t *testing.T) {
			project := filepath.Join(t.TempDir(), name, "app")
			hooksDir := filepath.Join(project, ".claude", "hooks")
			if err := os.MkdirAll(hooksDir, 0o755); err != nil {
				t.Fatal(err)
			}
			guard := writeScript(t, hooksDir, "guard.sh", `grep -q '"rm' && { echo "blocked by the pinned guard: rm" >&2; exit 2; }
exit 0`)
			r, src, store := loadGuardCommand(t, project, `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`)
			if commands := strings.Join(hookCommands(src), "\n"); !strings.Contains(commands, store.Dir()) {
				t.Errorf("the hook runs %q, not the stored copy", commands)
			}
			if !slices.Contains(src.Protected, guard) {
				t.Errorf("%s is not protected: %q", guard, src.Protected)
			}
			if err := os.WriteFile(guard, []byte("exit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if res := r.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
				t.Errorf("after rewriting the guard: %+v, want the pinned guard's block", res)
			}
		})
	}
}
