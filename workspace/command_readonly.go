package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// gitGoverning are the files in a git directory through which a write
// becomes code a later git runs outside the command's sandbox: the hooks,
// the config (core.fsmonitor, core.hooksPath, filter and diff drivers),
// commondir (which moves git to another directory's hooks and config) and
// config.worktree (read instead of config with extensions.worktreeConfig).
// Claude Code's sandbox keeps its commands out of the same files.
var gitGoverning = []string{"hooks", "config", "commondir", "config.worktree"}

// maxGitPointerBytes bounds a .git file or commondir read: git accepts
// a .git file of up to 1 MiB, but a path is far shorter.
const maxGitPointerBytes = 4096

// CommandReadOnly lists, relative to the root, what the agent's shell
// commands may read but never write, replace or remove where the worker
// can hold them to it (confine.CommandOptions.ReadOnly): the project's
// hook settings and scripts, its MCP configuration, the paths given to
// Protect, and git's hooks and config. The file tools refuse them anyway;
// a command is held by a mount namespace, which needs something to mount
// on, so a .git directory without hooks gets an empty one, as git init
// makes. A .git file (a linked worktree's or submodule's pointer) is
// read-only itself, and so are the files above of the git directory it
// names and of that one's common directory: absolute paths where they lie
// outside the workspace (a worktree per task, the repository beside it),
// which a command without a write boundary could otherwise rewrite, and
// with them the hooks the main checkout's commits run.
func (w *Workspace) CommandReadOnly() []string {
	out := slices.Clone(protectedPrefixes)
	if st, err := w.root.Lstat(gitDir); err == nil {
		switch {
		case st.IsDir():
			w.makeGitHooksDir(st)
			for _, f := range gitGoverning {
				out = append(out, path.Join(gitDir, f))
			}
		case st.Mode()&fs.ModeType == 0:
			out = append(out, gitDir)
			out = append(out, w.linkedGitDirs()...)
		}
	}
	for _, rel := range w.extra {
		if !slices.Contains(w.private, rel) {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// makeGitHooksDir makes .git/hooks where it is missing, owned as .git is
// (a root worker's would keep the repository's owner from installing
// hooks later). Best effort: without it, a command creating the hooks is
// reported, not refused.
func (w *Workspace) makeGitHooksDir(gitInfo fs.FileInfo) {
	const hooks = ".git/hooks"
	if err := w.root.Mkdir(hooks, 0o755); err != nil {
		return
	}
	if sys, ok := gitInfo.Sys().(*syscall.Stat_t); ok {
		_ = w.root.Lchown(hooks, int(sys.Uid), int(sys.Gid))
	}
}

// linkedGitDirs are the governing files of the git directory a .git file
// names ("gitdir: <path>", relative to the workspace) and of its common
// directory (its commondir, relative to it): relative to the root when
// inside the workspace, else absolute. Nothing when the file names no
// directory.
func (w *Workspace) linkedGitDirs() []string {
	gitdir, ok := w.pointer(gitDir, "gitdir: ")
	if !ok {
		return nil
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(w.dir, gitdir)
	}
	dirs := []string{filepath.Clean(gitdir)}
	if raw, err := readBounded(filepath.Join(gitdir, "commondir")); err == nil {
		common := strings.TrimSpace(raw)
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		dirs = append(dirs, filepath.Clean(common))
	}
	var out []string
	for _, dir := range dirs {
		for _, f := range gitGoverning {
			p := filepath.Join(dir, f)
			if rel, err := filepath.Rel(w.dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				p = filepath.ToSlash(rel)
			}
			out = append(out, p)
		}
	}
	return out
}

// pointer reads the workspace file rel, which must start with prefix, and
// returns the rest of its first line.
func (w *Workspace) pointer(rel, prefix string) (string, bool) {
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false
	}
	raw, err := readRegular(f)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(raw, "\n")
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	return strings.TrimSpace(rest), ok && strings.TrimSpace(rest) != ""
}

// readBounded reads at most maxGitPointerBytes of the regular file at
// path, which the agent may have named: opened without blocking, so a
// FIFO in its place holds nothing up.
func readBounded(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	return readRegular(f)
}

// readRegular reads at most maxGitPointerBytes of f, which must be a
// regular file, and closes it.
func readRegular(f *os.File) (string, error) {
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	buf := make([]byte, maxGitPointerBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	return string(buf[:n]), nil
}
