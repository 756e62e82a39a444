package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// What a command may not write is what the file tools refuse at the root
// (.claude, .fenix/hooks.json, .mcp.json), the paths given to Protect but
// not the private ones, and git's hooks and config: those of a .git
// directory, whose missing hooks directory is made for a mount to hold
// it, or a .git file itself.
func TestCommandReadOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Protect([]string{filepath.Join(dir, "servers", "notes.sh")}, []string{"scripts/guard.sh"})
	w.Hide([]string{filepath.Join(dir, "state")})
	got := w.CommandReadOnly()
	want := []string{".claude", ".fenix/hooks.json", ".git/commondir", ".git/config", ".git/config.worktree", ".git/hooks", ".mcp.json", "scripts/guard.sh", "servers/notes.sh"}
	if !slices.Equal(got, want) {
		t.Errorf("CommandReadOnly() = %q, want %q", got, want)
	}
	if st, err := os.Stat(filepath.Join(dir, ".git", "hooks")); err != nil || !st.IsDir() {
		t.Errorf(".git/hooks was not made: %v", err)
	}

	worktree := t.TempDir()
	if err := os.WriteFile(filepath.Join(worktree, ".git"), []byte("gitdir: /srv/repo/.git/worktrees/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w2, err := Open(worktree)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got := w2.CommandReadOnly(); !slices.Contains(got, ".git") || slices.Contains(got, ".git/config") ||
		!slices.Contains(got, "/srv/repo/.git/worktrees/x/config") {
		t.Errorf("a .git file: CommandReadOnly() = %q, want the git directory it names", got)
	}

	// A linked worktree's git directory and its common directory, one
	// named relative to the other; a FIFO for commondir holds nothing up.
	repo := t.TempDir()
	gitdir := filepath.Join(repo, ".git", "worktrees", "y")
	if err := os.MkdirAll(gitdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(worktree, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = w2.CommandReadOnly()
	for _, want := range []string{filepath.Join(gitdir, "commondir"), filepath.Join(repo, ".git", "config"), filepath.Join(repo, ".git", "hooks")} {
		if !slices.Contains(got, want) {
			t.Errorf("a linked worktree: CommandReadOnly() = %q, want %s", got, want)
		}
	}
	if err := os.Remove(filepath.Join(gitdir, "commondir")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(gitdir, "commondir"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := w2.CommandReadOnly(); slices.Contains(got, filepath.Join(repo, ".git", "config")) {
		t.Errorf("a FIFO commondir was read: %q", got)
	}
}

// A submodule's git directory lives in the repository's .git/modules,
// named by the submodule's path (modules/vendor/lib) and holding its own
// nested submodules in its modules/: its hooks and config are held as
// the repository's are, a missing hooks directory is made, and a tree
// past the walk's bounds is held whole.
func TestCommandReadOnlyHoldsSubmodules(t *testing.T) {
	dir := t.TempDir()
	mkdirs := func(rels ...string) {
		t.Helper()
		for _, rel := range rels {
			if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkdirs(".git/hooks", ".git/modules/docs/hooks", ".git/modules/docs/objects",
		".git/modules/vendor/lib/objects", ".git/modules/vendor/lib/modules/deep/objects",
		".git/modules/vendor/notes")
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got := w.CommandReadOnly()
	for _, gitdir := range []string{".git/modules/docs", ".git/modules/vendor/lib", ".git/modules/vendor/lib/modules/deep"} {
		for _, f := range []string{"hooks", "config", "commondir", "config.worktree"} {
			if !slices.Contains(got, gitdir+"/"+f) {
				t.Errorf("CommandReadOnly() = %q, want %s/%s", got, gitdir, f)
			}
		}
		if st, err := os.Stat(filepath.Join(dir, gitdir, "hooks")); err != nil || !st.IsDir() {
			t.Errorf("%s/hooks was not made: %v", gitdir, err)
		}
	}
	if slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, ".git/modules/vendor/notes") }) {
		t.Errorf("a directory that is no git directory is held: %q", got)
	}

	// A symbolic link back up would be walked without end.
	if err := os.Symlink("..", filepath.Join(dir, ".git", "modules", "vendor", "loop")); err != nil {
		t.Fatal(err)
	}
	if got := w.CommandReadOnly(); !slices.Contains(got, ".git/modules") {
		t.Errorf("a walk without end: CommandReadOnly() = %q, want .git/modules whole", got)
	}
}
