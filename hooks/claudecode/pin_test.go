package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// pinProject is a project whose PreToolUse guard (a shell script that
// sources a helper next to it) blocks "rm" and records the project
// directory it was given.
func pinProject(t *testing.T) (project, settings string) {
	t.Helper()
	project = filepath.Join(t.TempDir(), "project")
	hooksDir := filepath.Join(project, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, hooksDir, "lib.sh", `deny() { echo "blocked by the pinned guard: $1" >&2; exit 2; }`)
	writeScript(t, hooksDir, "guard.sh", `. "$(dirname "$0")/lib.sh"
echo "$CLAUDE_PROJECT_DIR" > "$CLAUDE_PROJECT_DIR/project-dir.txt"
grep -q '"rm' && deny rm
exit 0`)
	settings = writeFileAt(t, filepath.Join(project, ".claude", "settings.json"),
		`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "onFailure": "block"}]}]}}`)
	return project, settings
}

func pinnedRegistry(t *testing.T, settings string, store *ScriptStore) (*hooks.Registry, *Source) {
	t.Helper()
	src, err := LoadSource(settings, LoadOptions{Scripts: store})
	if err != nil {
		t.Fatal(err)
	}
	r := hooks.NewRegistry()
	r.AddSource(src.Registered())
	return r, src
}

func rmEvent(project string) hooks.PreToolUseEvent {
	return hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "s", WorkspaceRoot: project},
		ToolName: "exec_command", CallID: "c", ToolInput: map[string]any{"command_line": "rm -rf /"}}
}

// What the worker runs is the copy pinned at load: rewriting the guard
// through a hard link, overwriting it, or moving .claude away leaves the
// guard blocking, and the script still sees the project as
// $CLAUDE_PROJECT_DIR.
func TestPinnedScriptsSurviveTampering(t *testing.T) {
	for _, tamper := range []struct {
		name string
		do   func(t *testing.T, project string)
	}{
		{"hard link then rewrite", func(t *testing.T, project string) {
			if err := os.Link(filepath.Join(project, ".claude", "hooks", "guard.sh"), filepath.Join(project, "notes.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("exit 0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"overwrite", func(t *testing.T, project string) {
			if err := os.WriteFile(filepath.Join(project, ".claude", "hooks", "guard.sh"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"helper rewritten", func(t *testing.T, project string) {
			if err := os.WriteFile(filepath.Join(project, ".claude", "hooks", "lib.sh"), []byte("deny() { exit 0; }\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"move .claude away", func(t *testing.T, project string) {
			if err := os.Rename(filepath.Join(project, ".claude"), filepath.Join(project, ".claude2")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tamper.name, func(t *testing.T) {
			project, settings := pinProject(t)
			store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
			if err != nil {
				t.Fatal(err)
			}
			r, _ := pinnedRegistry(t, settings, store)
			if res := r.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() {
				t.Fatalf("before tampering: %+v, want blocked", res)
			}
			tamper.do(t, project)
			res := r.RunPreToolUse(context.Background(), rmEvent(project))
			if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
				t.Fatalf("after tampering: %+v, want the pinned guard's block", res)
			}
			got, err := os.ReadFile(filepath.Join(project, "project-dir.txt"))
			if err != nil || strings.TrimSpace(string(got)) != project {
				t.Errorf("the pinned script saw CLAUDE_PROJECT_DIR %q (%v), want %s", got, err, project)
			}
		})
	}
}

// The store is the worker's alone: 0700, its copies read-only.
func TestScriptStoreModes(t *testing.T) {
	_, settings := pinProject(t)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	pinnedRegistry(t, settings, store)
	info, err := os.Stat(store.Dir())
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("store %s: mode %v (%v), want 0700", store.Dir(), info.Mode(), err)
	}
	entries, _ := os.ReadDir(store.Dir())
	if len(entries) != 1 {
		t.Fatalf("store holds %d entries, want the one pinned directory", len(entries))
	}
	pinned := filepath.Join(store.Dir(), entries[0].Name())
	for name, want := range map[string]os.FileMode{".": 0o500, "guard.sh": 0o500, "lib.sh": 0o500} {
		info, err := os.Stat(filepath.Join(pinned, name))
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", name, info.Mode().Perm(), err, want)
		}
	}
	// Loading the same scripts again reuses the copy.
	pinnedRegistry(t, settings, store)
	if again, _ := os.ReadDir(store.Dir()); len(again) != 1 {
		t.Errorf("store holds %d entries after a second load of the same scripts, want 1", len(again))
	}
}

// The scripts' bytes are part of the policy fingerprint: a rewritten
// guard (or helper) is a different policy, the same scripts in another
// checkout the same one.
func TestPolicyFingerprintCoversScripts(t *testing.T) {
	fingerprint := func(settings string) string {
		r, _ := pinnedRegistry(t, settings, nil)
		return r.PolicyFingerprint(nil)
	}
	project, settings := pinProject(t)
	base := fingerprint(settings)
	_, elsewhere := pinProject(t)
	if got := fingerprint(elsewhere); got != base {
		t.Errorf("the same project in another directory: %s, want %s", got, base)
	}
	// A log the guard writes next to itself is data, not policy.
	if err := os.WriteFile(filepath.Join(project, ".claude", "hooks", "calls.log"), []byte("PreToolUse\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := fingerprint(settings); got != base {
		t.Errorf("a log next to the guard changed the fingerprint to %s, want %s", got, base)
	}
	if err := os.WriteFile(filepath.Join(project, ".claude", "hooks", "lib.sh"), []byte("deny() { exit 0; }\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := fingerprint(settings); got == base {
		t.Errorf("a rewritten helper keeps fingerprint %s", got)
	}
}
