package workspace

import (
	"io/fs"
	"slices"
	"syscall"
)

// gitGoverning are the files in a git directory through which a write
// becomes code a later git runs outside the command's sandbox: the hooks,
// the config (core.fsmonitor, core.hooksPath, filter and diff drivers),
// commondir (which moves git to another directory's hooks and config) and
// config.worktree (read instead of config with extensions.worktreeConfig).
// Claude Code's sandbox keeps its commands out of the same files.
var gitGoverning = []string{".git/hooks", ".git/config", ".git/commondir", ".git/config.worktree"}

// CommandReadOnly lists, relative to the root, what the agent's shell
// commands may read but never write, replace or remove where the worker
// can hold them to it (confine.CommandOptions.ReadOnly): the project's
// hook settings and scripts, its MCP configuration, the paths given to
// Protect, and git's hooks and config. The file tools refuse them anyway;
// a command is held by a mount namespace, which needs something to mount
// on, so a .git directory without hooks gets an empty one, as git init
// makes. A .git file (a linked worktree's or submodule's pointer) is
// read-only itself.
func (w *Workspace) CommandReadOnly() []string {
	out := slices.Clone(protectedPrefixes)
	if st, err := w.root.Lstat(gitDir); err == nil {
		switch {
		case st.IsDir():
			w.makeGitHooksDir(st)
			out = append(out, gitGoverning...)
		case st.Mode()&fs.ModeType == 0:
			out = append(out, gitDir)
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
