package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
//
// The .git file must be the workspace's own regular file, not a link to
// another worktree's (whose administrative directory would point back at
// the link's target); the administrative directory must be the
// repository's worktrees/<name> exactly, so a commondir rewritten to name
// a directory above the repository (a whole workspace, the base) is not
// believed; and the repository must be a git directory.
func LinkedRepository(dir string) string {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	dotGit := filepath.Join(realDir, gitDir)
	f, err := os.OpenFile(dotGit, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	raw, err := readRegular(f)
	if err != nil {
		return ""
	}
	admin, ok := strings.CutPrefix(firstLine(raw), "gitdir: ")
	if !ok || strings.TrimSpace(admin) == "" {
		return ""
	}
	admin = resolvedFrom(realDir, strings.TrimSpace(admin))
	back, err := readBounded(filepath.Join(admin, "gitdir"))
	if err != nil || resolvedFrom(admin, firstLine(back)) != dotGit {
		return ""
	}
	common, err := readBounded(filepath.Join(admin, "commondir"))
	if err != nil {
		return ""
	}
	repository := resolvedFrom(admin, firstLine(common))
	if filepath.Dir(filepath.Dir(admin)) != repository || filepath.Base(filepath.Dir(admin)) != "worktrees" {
		return ""
	}
	for _, part := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(repository, part)); err != nil {
			return ""
		}
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
