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
// Protect, and git's hooks and config: the repository's, and those of
// every submodule's git directory under .git/modules, nested ones
// included (a commit or checkout in a submodule runs its hooks, and the
// hooks' git status reads its config). The file tools refuse them anyway;
// a command is held by a mount namespace, which needs something to mount
// on, so a git directory without hooks gets an empty one, as git init
// makes. A .git file (a linked worktree's or submodule's pointer) is
// read-only itself, and so are the files above of the git directory it
// names and of that one's common directory: absolute paths where they lie
// outside the workspace (a worktree per task, the repository beside it),
// which a command without a write boundary could otherwise rewrite, and
// with them the hooks the main checkout's commits run. What governs the
// agent from outside the workspace is read-only too (governingOutside).
func (w *Workspace) CommandReadOnly() []string {
	out := slices.Clone(protectedPrefixes)
	if st, err := w.root.Lstat(gitDir); err == nil {
		switch {
		case st.IsDir():
			w.makeGitHooksDir(gitDir, st)
			for _, f := range gitGoverning {
				out = append(out, path.Join(gitDir, f))
			}
			out = append(out, submoduleGoverning(w.root.FS(), gitDir, w.makeSubmoduleHooksDir)...)
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
	out = append(out, w.governingOutside()...)
	slices.Sort(out)
	return slices.Compact(out)
}

// hookPolicyFiles are the project's policy files at the root: what a
// hook may not write of the project (HookReadOnly).
var hookPolicyFiles = []string{".claude/settings.json", ".claude/settings.local.json", ".fenix/hooks.json", ".mcp.json"}

// HookReadOnly lists what a hook — and the code from the workspace it
// runs, a PostToolUse npm test running the agent's scripts.test — may
// read but never write, where the worker can hold it to that: the
// project's settings files and MCP configuration that exist, so that no
// such code rewrites them for an operator's SIGHUP to adopt. Far less
// than CommandReadOnly: hooks keep their logs and state in .claude/ and
// beside their scripts, and run git (a Stop hook that commits); the paths
// given to Protect are read off the hooks' commands and name their log
// files too. What such code writes elsewhere a restart does not adopt
// unseen (the worker's HooksReach).
func (w *Workspace) HookReadOnly() []string {
	var out []string
	for _, rel := range hookPolicyFiles {
		if st, err := w.root.Lstat(rel); err == nil && st.Mode().IsRegular() {
			out = append(out, rel)
		}
	}
	return out
}

// governingOutside are the absolute paths given to Protect that lie
// outside the workspace (a hook project given apart from it: its
// settings, hook and MCP server scripts, its .mcp.json), neither hidden
// (Hide: the domain keeps commands out of those) nor holding the
// workspace, which must stay writable. A command or an MCP server rewrote
// them there: the worker kept its pinned hooks, but started another
// server's changed script at its next restart.
func (w *Workspace) governingOutside() []string {
	var out []string
	for _, p := range w.extraAbs {
		if !filepath.IsAbs(p) || w.unwatched[p] || len(w.namesInside([]string{p})) > 0 {
			continue
		}
		p = filepath.Clean(p)
		if rel, err := filepath.Rel(p, w.dir); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
			continue // the workspace is in it
		}
		out = append(out, p)
	}
	return out
}

// makeGitHooksDir makes the hooks directory of the git directory dir
// where it is missing, owned as dir is (a root worker's would keep the
// repository's owner from installing hooks later). Best effort: without
// it, a command creating the hooks is not refused (at the workspace's
// .git, it is reported).
func (w *Workspace) makeGitHooksDir(dir string, gitInfo fs.FileInfo) {
	hooks := path.Join(dir, "hooks")
	if err := w.root.Mkdir(hooks, 0o755); err != nil {
		return
	}
	if sys, ok := gitInfo.Sys().(*syscall.Stat_t); ok {
		_ = w.root.Lchown(hooks, int(sys.Uid), int(sys.Gid))
	}
}

// makeSubmoduleHooksDir makes a submodule git directory's missing hooks
// directory, as makeGitHooksDir does the repository's.
func (w *Workspace) makeSubmoduleHooksDir(hooks string) {
	dir := path.Dir(hooks)
	if st, err := w.root.Stat(dir); err == nil {
		w.makeGitHooksDir(dir, st)
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
	var governing []string
	for _, dir := range dirs {
		for _, f := range gitGoverning {
			governing = append(governing, filepath.Join(dir, f))
		}
	}
	// The submodules' git directories are in the common directory's
	// modules/ (the last of dirs).
	common := dirs[len(dirs)-1]
	for _, p := range submoduleGoverning(os.DirFS(common), ".", nil) {
		governing = append(governing, filepath.Join(common, filepath.FromSlash(p)))
	}
	var out []string
	for _, p := range governing {
		if rel, err := filepath.Rel(w.dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			p = filepath.ToSlash(rel)
		}
		out = append(out, p)
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
