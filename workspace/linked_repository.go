package workspace

import (
	"os"
	"path/filepath"
	"strings"
)

// LinkedRepository is the common git directory of the linked worktree
// (`git worktree add`) checked out at dir, when that repository lies
// elsewhere — a worktree per task beside the repository, both in the
// workspace bases, where each conversation's commands reach only their
// own workspace (confine.Policy.Workspaces): git in the worktree writes
// its objects and refs there. The worktree's .git file is the agent's to
// rewrite, so it is believed only where the repository's administrative
// directory for the worktree points back at that .git file, as git
// itself checks (`git worktree repair`): an agent cannot name another
// conversation's repository and gain it. Empty when dir is no such
// worktree.
func LinkedRepository(dir string) string {
	dotGit := filepath.Join(dir, gitDir)
	raw, err := readBounded(dotGit)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(raw, "\n")
	admin, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir: ")
	if !ok || strings.TrimSpace(admin) == "" {
		return ""
	}
	admin = resolvedFrom(dir, strings.TrimSpace(admin))
	back, err := readBounded(filepath.Join(admin, "gitdir"))
	if err != nil || resolvedFrom(admin, firstLine(back)) != resolvedFrom(dir, gitDir) {
		return ""
	}
	common, err := readBounded(filepath.Join(admin, "commondir"))
	if err != nil {
		return ""
	}
	repository := resolvedFrom(admin, firstLine(common))
	if rel, err := filepath.Rel(repository, admin); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "" // an administrative directory is the repository's worktrees/<name>
	}
	if st, err := os.Stat(repository); err != nil || !st.IsDir() {
		return ""
	}
	return repository
}

// resolvedFrom is p, relative to dir unless absolute, free of symlinks
// where it exists.
func resolvedFrom(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return filepath.Clean(p)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}
