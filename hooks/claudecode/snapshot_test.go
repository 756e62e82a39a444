package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// loadRegistry loads paths as a worker does and returns the registry and
// what it was loaded from.
func loadRegistry(t *testing.T, paths []string, opts LoadOptions) (*hooks.Registry, Snapshot) {
	t.Helper()
	sources, err := LoadSources(paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := hooks.NewRegistry()
	for _, src := range sources {
		r.AddSource(src.Registered())
	}
	if p := NewPermissions(sources); p != nil {
		r.SetPermissionPolicy(p)
	}
	snap, err := SnapshotOf(sources)
	if err != nil {
		t.Fatal(err)
	}
	return r, snap
}

// A project whose guard an agent switched off on disk — the settings
// rewritten to allow everything, the guard's helper rewritten, a local
// settings file added — loads as accepted from the snapshot: the same
// guard blocks, the same rules deny, and Changes names each file.
func TestSnapshotLoadsTheAcceptedPolicy(t *testing.T) {
	project, settings := pinProject(t)
	writeFileAt(t, settings, `{"permissions": {"deny": ["Bash(curl:*)"]},
 "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "onFailure": "block"}]}]}}`)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{Scripts: store}
	accepted, snap := loadRegistry(t, []string{project}, opts)
	if res := accepted.RunPreToolUse(context.Background(), rmEvent(project)); !res.Blocked() {
		t.Fatalf("the accepted guard: %+v, want blocked", res)
	}

	// What a command in the project can do.
	writeFileAt(t, settings, `{"permissions": {"allow": ["Bash(*)"]}}`)
	writeFileAt(t, filepath.Join(project, ".claude", "settings.local.json"), `{"permissions": {"allow": ["Bash(curl:*)"]}}`)
	if err := os.WriteFile(filepath.Join(project, ".claude", "hooks", "lib.sh"), []byte("deny() { exit 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	onDisk, now := loadRegistry(t, []string{project}, opts)
	if res := onDisk.RunPreToolUse(context.Background(), rmEvent(project)); res.Blocked() {
		t.Fatalf("the policy on disk blocked %+v; the test's tampering did not take", res)
	}
	changes := snap.Changes(now)
	want := []SnapshotChange{
		{Path: settings, What: "changed"},
		{Path: filepath.Join(project, ".claude", "hooks"), What: "scripts changed"}, // no longer launched
		{Path: filepath.Join(project, ".claude", "settings.local.json"), What: "created"},
	}
	if !slices.Equal(changes, want) {
		t.Errorf("Changes = %v, want %v", changes, want)
	}

	// The scripts changed too, which the settings (no hooks) no longer
	// show; with the hooks kept, the helper's rewrite is reported.
	writeFileAt(t, settings, string(snap.Files[0].Data))
	if err := os.Remove(filepath.Join(project, ".claude", "settings.local.json")); err != nil {
		t.Fatal(err)
	}
	_, now = loadRegistry(t, []string{project}, opts)
	if changes := snap.Changes(now); !slices.Equal(changes, []SnapshotChange{{Path: filepath.Join(project, ".claude", "hooks"), What: "scripts changed"}}) {
		t.Errorf("with the helper rewritten, Changes = %v", changes)
	}

	writeFileAt(t, settings, `{"permissions": {"allow": ["Bash(*)"]}}`)
	fromSnapshot := opts
	fromSnapshot.Snapshot = &snap
	kept, again := loadRegistry(t, []string{project}, fromSnapshot)
	if changes := snap.Changes(again); len(changes) != 0 {
		t.Errorf("the policy loaded from the snapshot differs from it: %v", changes)
	}
	res := kept.RunPreToolUse(context.Background(), rmEvent(project))
	if !res.Blocked() || !strings.Contains(res.Action.Reason, "blocked by the pinned guard: rm") {
		t.Errorf("loaded from the snapshot, the guard gave %+v, want its block", res)
	}
	if kept.PolicyFingerprint(nil) != accepted.PolicyFingerprint(nil) {
		t.Errorf("fingerprint from the snapshot %s, accepted %s", kept.PolicyFingerprint(nil), accepted.PolicyFingerprint(nil))
	}
	curl := rmEvent(project)
	curl.ToolInput = map[string]any{"command_line": "curl https://example.com"}
	if res := kept.RunPreToolUse(context.Background(), curl); !res.Blocked() {
		t.Errorf("the accepted deny rule did not apply from the snapshot: %+v", res)
	}
}

// A stored copy that no longer holds what was accepted is an error
// naming it, not a guard that runs something else.
func TestSnapshotRefusesAnAlteredStoredCopy(t *testing.T) {
	project, _ := pinProject(t)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	_, snap := loadRegistry(t, []string{project}, LoadOptions{Scripts: store})
	stored := snap.Files[0].Trees[0].Stored
	lib := filepath.Join(stored, "lib.sh")
	if err := os.Chmod(stored, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(lib, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("deny() { exit 0; }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadSources(nil, LoadOptions{Scripts: store, Snapshot: &snap})
	if err == nil || !strings.Contains(err.Error(), "no longer holds what was accepted") || !strings.Contains(err.Error(), stored) {
		t.Fatalf("loading an altered copy: %v, want an error naming %s", err, stored)
	}
}

// A file added between two others is one change; two files swapped are a
// move, since a later file's rules are read after an earlier one's.
func TestSnapshotChangesOfTheLoadOrder(t *testing.T) {
	file := func(path string) SnapshotFile { return SnapshotFile{Path: path, Data: []byte(path)} }
	accepted := Snapshot{Files: []SnapshotFile{file("/a"), file("/b")}}
	inserted := Snapshot{Files: []SnapshotFile{file("/a"), file("/n"), file("/b")}}
	if got := accepted.Changes(inserted); !slices.Equal(got, []SnapshotChange{{Path: "/n", What: "created"}}) {
		t.Errorf("a file inserted: %v", got)
	}
	swapped := Snapshot{Files: []SnapshotFile{file("/b"), file("/a")}}
	if got := accepted.Changes(swapped); !slices.Equal(got, []SnapshotChange{{Path: "/a", What: "moved in the load order"}}) {
		t.Errorf("two files swapped: %v", got)
	}
}

// A command can leave a sparse file of a terabyte where the settings or
// a hook's helper was; the next load refuses it by its size instead of
// reading it (which took the worker down at its start).
func TestOversizedPolicyFilesAreRefusedUnread(t *testing.T) {
	sparse := func(t *testing.T, path string) {
		t.Helper()
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(1 << 40); err != nil {
			t.Skipf("no sparse files here: %v", err)
		}
	}
	project, settings := pinProject(t)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	sparse(t, filepath.Join(project, ".claude", "hooks", "lib.sh"))
	if _, err := LoadSources([]string{project}, LoadOptions{Scripts: store}); err == nil || !strings.Contains(err.Error(), "holds more than") {
		t.Errorf("a 1 TiB helper next to the guard: %v, want the directory refused as too large", err)
	}
	sparse(t, settings)
	if _, err := LoadSources([]string{project}, LoadOptions{Scripts: store}); err == nil || !strings.Contains(err.Error(), "over the 4194304-byte limit") {
		t.Errorf("a 1 TiB settings file: %v, want it refused by its size", err)
	}
}

// Prune keeps the copies a snapshot runs and removes the rest, read-only
// copies and a half-made one included.
func TestScriptStorePrune(t *testing.T) {
	project, _ := pinProject(t)
	store, err := OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	_, old := loadRegistry(t, []string{project}, LoadOptions{Scripts: store})
	if err := os.WriteFile(filepath.Join(project, ".claude", "hooks", "lib.sh"), []byte("deny() { exit 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, now := loadRegistry(t, []string{project}, LoadOptions{Scripts: store})
	if err := os.Mkdir(filepath.Join(store.Dir(), ".pin-123"), 0o500); err != nil {
		t.Fatal(err)
	}
	removed, err := store.Prune(now.Stored())
	if err != nil || removed != 2 {
		t.Fatalf("Prune removed %d (%v), want the old copy and the half-made one", removed, err)
	}
	entries, _ := os.ReadDir(store.Dir())
	if len(entries) != 1 || filepath.Join(store.Dir(), entries[0].Name()) != now.Stored()[0] {
		t.Errorf("left %v, want only %s", entries, now.Stored()[0])
	}
	if _, err := os.Stat(old.Stored()[0]); !os.IsNotExist(err) {
		t.Errorf("the old copy %s is still there: %v", old.Stored()[0], err)
	}
}
