package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenixrt/fenix/fenixerr"
)

// protectedPrefixes are paths an agent may read but never write: writing
// them would install code that runs outside Fenix's hooks and audit.
// Besides these, everything with a .git component is protected (gitDir).
var protectedPrefixes = []string{
	// Claude Code's project directory: settings, hook scripts, agents.
	".claude",
	".fenix/hooks.json",
	// The project's MCP servers: the worker launches the commands it names
	// when it starts.
	".mcp.json",
}

// commandsHomeConfig are, at the root, the git configuration of the
// agent's commands, which get their workspace as HOME: git reads
// ~/.gitconfig and ~/.config/git/config as its global configuration, so
// a core.fsmonitor or a diff driver written there runs in the next
// git status a rule allows (Bash(git status)) as surely as one in
// .git/config. The file tools never write them; commands may (git config
// --global), as the rules allow them to.
var commandsHomeConfig = []string{".gitconfig", ".config/git"}

// gitDir is protected wherever it appears, not only at the root: git
// runs the hooks and reads the config (core.hooksPath, core.fsmonitor,
// filter and diff drivers) of the repository it is in, a nested one or a
// submodule's .git/modules included, and a .git file redirects git to
// another directory.
const gitDir = ".git"

// Protect adds protected paths: absolute ones (kept when they lie inside
// the workspace, by the path given or the one its symlinks lead to; the
// root already confines the rest, and a hard link to one is refused by
// inode) and paths relative to the root. The loaded hooks' scripts and
// the worker's MCP configurations are protected this way.
func (w *Workspace) Protect(absolute, relative []string) {
	w.extraAbs = append(w.extraAbs, absolute...)
	w.extra = append(w.extra, w.namesInside(absolute)...)
	for _, p := range relative {
		if cleaned, err := Clean(p); err == nil && cleaned != "." {
			w.extra = append(w.extra, cleaned)
		}
	}
}

// Hide makes absolute paths private (the worker's data directory, its
// keys and audit files, where a workspace holds them: a workspace of the
// worker's home): tools neither read nor write them or anything beneath
// them, by the path given or the one its symlinks lead to. Commands are
// kept out of them by their domain. Names beneath them may still be
// listed, as commands may list them.
//
// Their changes are not reported (ProtectedState leaves them out): the
// worker writes them itself, its audit log on every call.
func (w *Workspace) Hide(absolute []string) {
	w.Protect(absolute, nil)
	names := w.namesInside(absolute)
	w.private = append(w.private, names...)
	if w.unwatched == nil {
		w.unwatched = map[string]bool{}
	}
	for _, p := range slices.Concat(absolute, names) {
		w.unwatched[p] = true
	}
}

// namesInside are the workspace-relative names of those absolute paths that
// lie inside the workspace, by the path given or the one its symlinks
// lead to, through the root as given or as its symlinks resolve.
func (w *Workspace) namesInside(absolute []string) []string {
	roots := []string{w.dir}
	if real, err := filepath.EvalSymlinks(w.dir); err == nil && real != w.dir {
		roots = append(roots, real)
	}
	var out []string
	for _, p := range absolute {
		for _, abs := range withRealPath(p) {
			for _, root := range roots {
				rel, err := filepath.Rel(root, abs)
				if err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
					out = append(out, filepath.ToSlash(rel))
				}
			}
		}
	}
	return out
}

// isPrivate reports whether rel (cleaned) is or lies under a path Hide
// made private.
func (w *Workspace) isPrivate(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range w.private {
		if underFold(parts, p) {
			return true
		}
	}
	return false
}

// RefusePrivate refuses rel, with the error ReadFile gives, when it or
// the path its symlinks lead to is private (Hide): for callers that read
// beneath a path they opened (a skill install walking its source).
func (w *Workspace) RefusePrivate(rel string) error {
	cleaned, err := Clean(rel)
	if err != nil {
		return err
	}
	target, err := w.resolveLinks(cleaned)
	if err != nil {
		target = cleaned
	}
	return w.refusePrivate(cleaned, target)
}

// refusePrivate refuses reaching cleaned, which leads to target, when
// either is private.
func (w *Workspace) refusePrivate(cleaned, target string) error {
	for _, p := range []string{cleaned, target} {
		if !w.isPrivate(p) {
			continue
		}
		if p == cleaned {
			return fenixerr.WorkspaceEscape("path %q is the worker's own (its data directory, keys and audit files are neither read nor written by tools)", cleaned).WithCode("private_path")
		}
		return fenixerr.WorkspaceEscape("path %q leads through a symlink to %q, which is the worker's own (its data directory, keys and audit files are neither read nor written by tools)", cleaned, target).WithCode("private_path")
	}
	return nil
}

// withRealPath is p and every name symlinks make it: /etc/fenix/mcp.json,
// with /etc/fenix a link into the workspace, is a file in the workspace,
// and so is the target of a dangling link the worker would read through
// once something creates it. Directories are resolved for files that do
// not exist yet, so they cannot be created there either.
func withRealPath(p string) []string {
	out := []string{p}
	add := func(q string) {
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	for range maxSymlinkHops {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(dir, filepath.Base(p))
			add(p)
		}
		target, err := os.Readlink(p)
		if err != nil {
			break // not a symlink, or nothing there yet
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = filepath.Clean(target)
		add(p)
	}
	return out
}

func (w *Workspace) isProtected(rel string) bool {
	if IsProtected(rel) {
		return true
	}
	parts := strings.Split(rel, "/")
	for _, p := range w.extra {
		if underFold(parts, p) {
			return true
		}
	}
	return false
}

// IsProtected reports whether rel (already cleaned) may not be written.
// Names are compared ignoring case: on a case-insensitive mount (vfat,
// CIFS, ext4 with casefold) .GIT/hooks and .Claude are the protected
// directories themselves, and refusing them elsewhere costs nothing.
func IsProtected(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, part := range parts {
		if strings.EqualFold(part, gitDir) {
			return true
		}
	}
	for _, p := range slices.Concat(protectedPrefixes, commandsHomeConfig) {
		if underFold(parts, p) {
			return true
		}
	}
	return false
}

// underFold reports whether the path split into parts is prefix or lies
// under it, component by component and ignoring case (with Unicode
// folding, as such mounts do: "ſ" is "s").
func underFold(parts []string, prefix string) bool {
	pre := strings.Split(prefix, "/")
	if len(pre) > len(parts) {
		return false
	}
	for i, p := range pre {
		if !strings.EqualFold(parts[i], p) {
			return false
		}
	}
	return true
}

// writableTarget cleans rel and refuses the root itself and protected
// paths, including a protected file reached through in-root symlinks.
func (w *Workspace) writableTarget(rel string) (cleaned, target string, err error) {
	cleaned, err = Clean(rel)
	if err != nil {
		return "", "", err
	}
	if cleaned == "." {
		return "", "", fenixerr.Validation("path %q is the workspace root, not a file", rel)
	}
	if w.isProtected(cleaned) {
		return "", "", protectedError(cleaned, cleaned)
	}
	target, err = w.resolveLinks(cleaned)
	if err != nil {
		return "", "", err
	}
	if target == "." {
		return "", "", fenixerr.Validation("path %q resolves to the workspace root, not a file", rel)
	}
	if w.isProtected(target) {
		return "", "", protectedError(cleaned, target)
	}
	return cleaned, target, nil
}

// protectedSet names what is protected, for messages.
const protectedSet = ".git at any depth, .claude/, hook settings, the scripts hooks run, MCP server configurations and the worker's own files (data directory, skills, profiles, audit log)"

func protectedError(rel, target string) error {
	if rel == target {
		return fenixerr.WorkspaceEscape("path %q is protected (%s are not writable by tools)", rel, protectedSet).WithCode("protected_path")
	}
	return fenixerr.WorkspaceEscape("path %q leads through a symlink to protected path %q (%s are not writable by tools)", rel, target, protectedSet).WithCode("protected_path")
}
