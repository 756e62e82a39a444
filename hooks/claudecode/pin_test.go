package claudecode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

// Programs outside the project in a directory of many files, as
// `/usr/bin/env bash "$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh` names,
// used to fail the whole settings file ("holds more than 512 files"). The
// system's programs (/usr/bin/env) run where they are; any other program
// or script in such a directory is pinned alone, so rewriting it after
// load changes nothing; the project's own guard is pinned as before.
func TestProgramsInLargeDirectoriesOutsideTheProject(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxPinnedFiles + 10 {
		writeScript(t, bin, fmt.Sprintf("tool%03d", i), "exit 0")
	}
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env program")
	}
	native, err := os.ReadFile(envPath)
	if err != nil {
		t.Fatal(err)
	}
	binEnv := filepath.Join(bin, "env")
	if err := os.WriteFile(binEnv, native, 0o755); err != nil {
		t.Fatal(err)
	}
	// run-guard is a script next to them: it runs the guard it is given.
	runGuard := writeScript(t, bin, "run-guard", `exec sh "$1"`)
	const guard = ` \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`
	for _, tc := range []struct {
		name, command string
		// inPlace is what the hook runs where it is, pinned what it must
		// run from the store.
		inPlace, pinned string
	}{
		{"the system's env", "/usr/bin/env sh" + guard, "/usr/bin/env ", ""},
		{"a program in a large directory", binEnv + " sh" + guard, "", binEnv},
		{"a script in a large directory", runGuard + guard, "", runGuard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.inPlace != "" {
				if _, err := os.Stat(strings.TrimSpace(tc.inPlace)); err != nil {
					t.Skip(err)
				}
			}
			project, _ := pinProject(t)
			r, src, store := loadGuardCommand(t, project, tc.command)
			if len(src.Warnings) != 0 {
				t.Errorf("warnings: %q", src.Warnings)
			}
			commands := strings.Join(hookCommands(src), "\n")
			if !strings.Contains(commands, store.Dir()) || (tc.inPlace != "" && !strings.Contains(commands, tc.inPlace)) ||
				(tc.pinned != "" && strings.Contains(commands, tc.pinned)) {
				t.Errorf("the hook runs %q: want the guard from the store, %q where it is, %q from the store", commands, tc.inPlace, tc.pinned)
			}
			// Rewrite the guard and, when it was pinned, the program.
			if err := os.WriteFile(filepath.Join(project, ".claude", "hooks", "guard.sh"), []byte("exit 0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.pinned != "" {
				saved, err := os.ReadFile(tc.pinned)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tc.pinned, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				defer os.WriteFile(tc.pinned, saved, 0o755)
			}
			res := r.RunPreToolUse(context.Background(), rmEvent(project))
			if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
				t.Fatalf("after rewriting: %+v, want the pinned guard's block", res)
			}
		})
	}
}

// hookCommands are the command lines src's command hooks run.
func hookCommands(src *Source) []string {
	var out []string
	for _, h := range src.Hooks {
		if e, ok := h.(*ExternalHook); ok {
			if c, ok := e.transport.(*commandTransport); ok {
				out = append(out, c.command)
			}
		}
	}
	return out
}

// User-level hooks live in ~/.claude/hooks and are named with ~ or $HOME,
// which sh expands. `~/.claude/hooks/guard.sh` used to be taken for a
// path relative to the project: the hook "could not start" and did not
// run. Both forms now run the guard, pinned like a project's: rewriting it
// after load changes nothing.
func TestUserLevelHooksUnderHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	hooksDir := filepath.Join(home, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, hooksDir, "lib.sh", `deny() { echo "blocked by the pinned guard: $1" >&2; exit 2; }`)
	guard := writeScript(t, hooksDir, "guard.sh", `. "$(dirname "$0")/lib.sh"
grep -q '"rm' && deny rm
exit 0`)
	for _, command := range []string{`~/.claude/hooks/guard.sh`, `\"$HOME\"/.claude/hooks/guard.sh`, `${HOME}/.claude/hooks/guard.sh --flag`,
		`/usr/bin/env sh ~/.claude/hooks/guard.sh`} {
		t.Run(command, func(t *testing.T) {
			if strings.HasPrefix(command, "/usr/bin/env") {
				if _, err := os.Stat("/usr/bin/env"); err != nil {
					t.Skip(err)
				}
			}
			if err := os.WriteFile(guard, []byte("#!/bin/sh\n. \"$(dirname \"$0\")/lib.sh\"\ngrep -q '\"rm' && deny rm\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			r, src, _ := loadGuardCommand(t, home, command)
			if len(src.Warnings) != 0 {
				t.Errorf("warnings: %q", src.Warnings)
			}
			project := t.TempDir()
			if res := r.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
				t.Fatalf("%+v, want the guard's block", res)
			}
			if err := os.WriteFile(guard, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if res := r.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() {
				t.Fatalf("after rewriting ~/.claude/hooks/guard.sh: %+v, want the pinned guard's block", res)
			}
		})
	}
}

// A hooks directory reached through a symlink (a dotfiles checkout linked
// as .claude/hooks, a bin/ link inside it) used to be walked as the link
// itself: nothing was read, and the scripts ran from where the project
// has them, so rewriting them changed the guard. They are pinned like any
// other now.
func TestHooksDirectoryThroughASymlinkIsPinned(t *testing.T) {
	for _, layout := range []string{".claude/hooks is a link", "a link inside .claude/hooks"} {
		t.Run(layout, func(t *testing.T) {
			project := filepath.Join(t.TempDir(), "project")
			dotfiles := filepath.Join(t.TempDir(), "dotfiles", "claude-hooks")
			for _, d := range []string{filepath.Join(project, ".claude"), dotfiles} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeScript(t, dotfiles, "lib.sh", `deny() { echo "blocked by the pinned guard: $1" >&2; exit 2; }`)
			guard := writeScript(t, dotfiles, "guard.sh", `. "$(dirname "$0")/lib.sh"
grep -q '"rm' && deny rm
exit 0`)
			command := `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh`
			if layout == ".claude/hooks is a link" {
				if err := os.Symlink(dotfiles, filepath.Join(project, ".claude", "hooks")); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(dotfiles, filepath.Join(project, ".claude", "hooks", "bin")); err != nil {
					t.Fatal(err)
				}
				command = `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/bin/guard.sh`
			}
			r, src, store := loadGuardCommand(t, project, command)
			if commands := strings.Join(hookCommands(src), "\n"); !strings.Contains(commands, store.Dir()) {
				t.Errorf("the hook runs %q, not the stored copy", commands)
			}
			if res := r.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() {
				t.Fatalf("before rewriting: %+v, want blocked", res)
			}
			for _, f := range []string{guard, filepath.Join(dotfiles, "lib.sh")} {
				if err := os.WriteFile(f, []byte("#!/bin/sh\ndeny() { exit 0; }\nexit 0\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			res := r.RunPreToolUse(context.Background(), rmEvent(project))
			if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
				t.Fatalf("after rewriting the linked scripts: %+v, want the pinned guard's block", res)
			}
		})
	}
}

// A JavaScript hook that requires a package installed next to it
// (.claude/hooks/node_modules) failed with "Cannot find module" once its
// directory was pinned without node_modules. The pinned copy now links
// node_modules (too large to copy, so the load warns that it is not
// pinned); the script itself stays pinned.
func TestPinnedJavaScriptHookFindsItsPackages(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	project, _ := pinProject(t)
	hooksDir := filepath.Join(project, ".claude", "hooks")
	pkg := filepath.Join(hooksDir, "node_modules", "denylist")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "index.js"), []byte("module.exports = ['rm'];\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	guard := filepath.Join(hooksDir, "guard.js")
	if err := os.WriteFile(guard, []byte(`const deny = require('denylist');
let input = '';
process.stdin.on('data', c => input += c).on('end', () => {
  const command = JSON.parse(input).tool_input.command || '';
  if (deny.some(w => command.startsWith(w))) { console.error('blocked by the pinned guard: rm'); process.exit(2); }
});
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, src, _ := loadGuardCommand(t, project, node+` \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.js`)
	if !strings.Contains(strings.Join(src.Warnings, "\n"), filepath.Join(hooksDir, "node_modules")+" is linked into the pinned copy") {
		t.Errorf("warnings %q, want one naming the linked node_modules", src.Warnings)
	}
	if err := os.WriteFile(guard, []byte("process.exit(0)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := r.RunPreToolUse(context.Background(), rmEvent(project))
	if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
		t.Fatalf("%+v, want the pinned guard's block (its package found through the link)", res)
	}
}

// loadGuardCommand writes <dir>/.claude/settings.json with command as a
// fail-closed PreToolUse hook for Bash and loads it with a fresh store.
func loadGuardCommand(t *testing.T, dir, command string) (*hooks.Registry, *Source, *ScriptStore) {
	t.Helper()
	settings := writeFileAt(t, filepath.Join(dir, ".claude", "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "`+command+`", "onFailure": "block"}]}]}}`)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	r, src := pinnedRegistry(t, settings, store)
	return r, src, store
}

// A guard that reads its rules from files next to it (blocklist.txt, an
// extensionless "denylist") used to find them missing in its pinned copy:
// it failed, and a failing hook that does not block lets the call
// through. The data files are pinned with the script (and rewriting them
// after load changes nothing); its log is not copied.
func TestPinnedGuardReadsItsDataFiles(t *testing.T) {
	project, _ := pinProject(t)
	hooksDir := filepath.Join(project, ".claude", "hooks")
	for name, body := range map[string]string{"blocklist.txt": "rm\n", "denylist": "curl\n", "guard.log": "old output\n"} {
		if err := os.WriteFile(filepath.Join(hooksDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeScript(t, hooksDir, "data-guard.sh", `here="$(dirname "$0")"
command=$(sed -n 's/.*"command": *"\([^"]*\)".*/\1/p')
for word in $(cat "$here/blocklist.txt" "$here/denylist"); do
  case "$command" in "$word "*) echo "blocked by the pinned guard: $word" >&2; exit 2;; esac
done
exit 0`)
	r, _, store := loadGuardCommand(t, project, `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/data-guard.sh`)
	for _, f := range []string{"blocklist.txt", "denylist"} {
		if err := os.WriteFile(filepath.Join(hooksDir, f), []byte("nothing\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, command := range []string{"rm -rf /", "curl http://evil.example"} {
		ev := rmEvent(project)
		ev.ToolInput = map[string]any{"command_line": command}
		res := r.RunPreToolUse(context.Background(), ev)
		if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard") {
			t.Errorf("%q: %+v, want the pinned guard's block from its pinned data", command, res)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(store.Dir(), "*", "guard.log"))
	if len(logs) != 0 {
		t.Errorf("the guard's log was copied: %v", logs)
	}
}

// A script that works out paths from where it lies — a log or a state
// file beside itself, the project two directories up — runs from its
// pinned copy, where those writes fail and the project is not two
// directories up: a guard written so fails without blocking, and the
// call goes on. The load says so, naming the script, for each language's
// way of finding itself; a script that does not is not named.
func TestScriptsThatLocateThemselvesAreNamedAtLoad(t *testing.T) {
	quiet := map[string]bool{"plain.sh": true, "reads-beside.sh": true, "reads-beside.py": true}
	for name, body := range map[string]string{
		"log-beside.sh": "set -e\nLOG=\"$(dirname \"$0\")/guard.log\"\ncmd=$(cat)\necho \"$cmd\" >> \"$LOG\"",
		"root-up.sh":    `ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"`,
		"state.py":      "import json\nfrom pathlib import Path\nSTATE = Path(__file__).parent / \"state.json\"\njson.dump({}, open(STATE, \"w\"))",
		"plain.sh":      `cat "$CLAUDE_PROJECT_DIR/.blocked" > /dev/null; exit 0`,
		// Reading what lies beside the script works in its pinned copy.
		"reads-beside.sh": `. "$(dirname "$0")/lib.sh"; grep -q x "$(dirname "$0")/rules.txt"`,
		"reads-beside.py": "import json, os\nRULES = os.path.join(os.path.dirname(__file__), \"rules.json\")\nrules = json.load(open(RULES))",
	} {
		t.Run(name, func(t *testing.T) {
			project, _ := pinProject(t)
			writeScript(t, filepath.Join(project, ".claude", "hooks"), name, body)
			_, src, _ := loadGuardCommand(t, project, `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/`+name)
			warned := strings.Contains(strings.Join(src.Warnings, "\n"), name+" works out a path from its own location")
			if warned == quiet[name] {
				t.Errorf("warned = %v; warnings: %v", warned, src.Warnings)
			}
		})
	}
}

// A settings file that names a script which does not exist yet — a hook
// added before its script, a script left out of the checkout — gave the
// agent the hook: whatever it wrote there ran as the guard, and a hook
// may allow what the rules would ask about. What is absent at load cannot
// start until a reload, whatever appears there later, and the snapshot of
// the policy carries that too.
func TestAScriptAbsentAtLoadDoesNotRunWhatAppearsLater(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	hooksDir := filepath.Join(project, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, filepath.Join(project, ".claude", "settings.json"),
		`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "onFailure": "block"}]}]}}`)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	loaded, snap := loadRegistry(t, []string{project}, LoadOptions{Scripts: store})
	fromSnapshot, _ := loadRegistry(t, nil, LoadOptions{Scripts: store, Snapshot: &snap})
	planted := filepath.Join(project, "planted-ran.txt")
	writeScript(t, hooksDir, "guard.sh", `echo ran > "$CLAUDE_PROJECT_DIR/planted-ran.txt"
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'`)
	for name, r := range map[string]*hooks.Registry{"loaded": loaded, "from the snapshot": fromSnapshot} {
		res := r.RunPreToolUse(context.Background(), rmEvent(project))
		if !res.Blocked() || !strings.Contains(res.Action.Reason, "did not exist when the hook settings were loaded") {
			t.Errorf("%s: %+v, want the hook blocked as not started", name, res)
		}
		if _, err := os.Stat(planted); err == nil {
			t.Fatalf("%s: the script written after the load ran", name)
		}
	}
	// A reload (the operator's) pins and runs it.
	reloaded, _ := loadRegistry(t, []string{project}, LoadOptions{Scripts: store})
	if res := reloaded.RunPreToolUse(context.Background(), rmEvent(project)); res.Blocked() {
		t.Errorf("after a reload: %+v, want the script's allow", res)
	}
	if _, err := os.Stat(planted); err != nil {
		t.Errorf("after a reload the script did not run: %v", err)
	}
}
