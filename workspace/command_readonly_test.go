package workspace

import (
	"os"
	"path/filepath"
	"slices"
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
	if got := w2.CommandReadOnly(); !slices.Contains(got, ".git") || slices.Contains(got, ".git/config") {
		t.Errorf("a .git file: CommandReadOnly() = %q", got)
	}
}
