package workspace

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// watchedFiles are the protected files a command most plausibly rewrites
// to change what governs the next run: the settings, the MCP servers and
// git's config and hooks. Together with the paths given to Protect they
// are what ProtectedState records.
var watchedFiles = []string{
	".claude/settings.json", ".claude/settings.local.json", ".fenix/hooks.json", ".mcp.json", ".git/config",
	".git/commondir", ".git/config.worktree",
}

// watchedDirs are listed one level deep: a new hook script appears there.
var watchedDirs = []string{".claude/hooks", ".git/hooks"}

// maxWatchedEntries bounds what one ProtectedState records per directory.
const maxWatchedEntries = 256

// fileState is what tells a rewritten, replaced, created or removed file
// from an untouched one.
type fileState struct {
	exists     bool
	ino, size  uint64
	mtime      int64
	ctime      int64
	mode       fs.FileMode
	linkTarget string
}

// ProtectedState is a record of the protected files a shell command could
// rewrite behind the workspace's back: exec_command is not confined by
// the workspace (it runs with the worker's user), so its changes to what
// governs the agent are found by comparing the state before and after.
type ProtectedState map[string]fileState

// ProtectedState records the watched protected files of the workspace and
// every path given to Protect. It reads no file contents.
func (w *Workspace) ProtectedState() ProtectedState {
	s := ProtectedState{}
	for _, rel := range append(append(slices.Clone(watchedFiles), w.extra...), watchedDirs...) {
		if !w.unwatched[rel] {
			s[rel] = w.stateOf(rel)
		}
	}
	for _, dir := range watchedDirs {
		entries, err := os.ReadDir(filepath.Join(w.dir, dir))
		if err != nil {
			continue
		}
		for i, e := range entries {
			if i == maxWatchedEntries {
				break
			}
			p := path.Join(dir, e.Name())
			s[p] = w.stateOf(p)
		}
	}
	for _, abs := range w.extraAbs {
		if w.inside(abs) || w.unwatched[abs] {
			continue // recorded by its relative name, which Protect kept, or private
		}
		info, err := os.Lstat(abs)
		s[abs] = stateFromInfo(info, err, func() string { t, _ := os.Readlink(abs); return t })
	}
	return s
}

// inside reports whether an absolute path lies in the workspace.
func (w *Workspace) inside(abs string) bool {
	rel, err := filepath.Rel(w.dir, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// stateOf stats rel by path rather than through the root: only metadata
// is read, so a symlinked parent leading out costs nothing, and a path
// lstat is a tenth of the root's component-by-component walk, on every
// exec_command call.
func (w *Workspace) stateOf(rel string) fileState {
	abs := filepath.Join(w.dir, filepath.FromSlash(rel))
	info, err := os.Lstat(abs)
	return stateFromInfo(info, err, func() string { t, _ := os.Readlink(abs); return t })
}

func stateFromInfo(info fs.FileInfo, err error, readlink func() string) fileState {
	if err != nil {
		return fileState{}
	}
	st := fileState{exists: true, size: uint64(info.Size()), mtime: info.ModTime().UnixNano(), mode: info.Mode()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
		st.ctime = changeTime(sys)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		st.linkTarget = readlink()
	}
	return st
}

// Changed lists, sorted, the paths whose state differs in after: written,
// replaced, created, removed, relinked or re-permissioned.
func (s ProtectedState) Changed(after ProtectedState) []string {
	var out []string
	for p, st := range after {
		if s[p] != st {
			out = append(out, p)
		}
	}
	for p, st := range s {
		if _, ok := after[p]; !ok && st.exists {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
