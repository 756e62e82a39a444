package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A worktree git made beside its repository reaches the repository; a
// workspace whose .git file names that repository's worktree without
// being it, a .git directory and no .git do not.
func TestLinkedRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo := filepath.Join(base, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	git(repo, "commit", "-q", "--allow-empty", "-m", "first")
	git(repo, "worktree", "add", "-q", filepath.Join(base, "task-1"))
	want, _ := filepath.EvalSymlinks(filepath.Join(repo, ".git"))
	if got := LinkedRepository(filepath.Join(base, "task-1")); got != want {
		t.Errorf("LinkedRepository(the worktree) = %q, want %q", got, want)
	}

	forged := filepath.Join(base, "forged")
	if err := os.MkdirAll(forged, 0o755); err != nil {
		t.Fatal(err)
	}
	pointer, err := os.ReadFile(filepath.Join(base, "task-1", ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(forged, ".git"), pointer, 0o644); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(base, "linked")
	if err := os.MkdirAll(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "task-1", ".git"), filepath.Join(linked, ".git")); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"a copy of the worktree's .git file": forged, "a link to the worktree's .git file": linked,
		"the repository itself": repo, "no repository": t.TempDir()} {
		if got := LinkedRepository(dir); got != "" {
			t.Errorf("LinkedRepository(%s) = %q, want none", name, got)
		}
	}
}

// A commondir rewritten to name a directory above the repository (the
// workspace holding it, the base) is not believed: the administrative
// directory must be the repository's worktrees/<name>.
func TestLinkedRepositoryIgnoresAWidenedCommondir(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	repo := filepath.Join(base, "conv-c")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "first"}, {"worktree", "add", "-q", filepath.Join(base, "task")}} {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if got := LinkedRepository(filepath.Join(base, "task")); got == "" {
		t.Fatal("the worktree reaches no repository")
	}
	for _, widened := range []string{repo, base, "/"} {
		if err := os.WriteFile(filepath.Join(repo, ".git", "worktrees", "task", "commondir"), []byte(widened+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := LinkedRepository(filepath.Join(base, "task")); got != "" {
			t.Errorf("with commondir %s: LinkedRepository = %q, want none", widened, got)
		}
	}
}
