package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fenixrt/fenix/fenixerr"
)

// BasesSetting is the worker setting that lists the allowed bases; errors
// name it so an operator knows what to change.
const BasesSetting = "FENIX_WORKSPACE_BASES"

// CodeRootNotAllowed is the error code of a workspace root outside every base.
const CodeRootNotAllowed = "workspace_root_not_allowed"

// Bases is the allow-list of directories an assignment's workspace root
// must resolve inside (after following symlinks). Without it an assignment
// could name "/" as its workspace and the file tools would read /etc/passwd
// as a workspace file.
type Bases struct {
	// dirs are absolute and symlink-free, so a prefix test is meaningful.
	dirs []string
	// origin says where the list came from, for messages.
	origin string
}

// ParseList splits a FENIX_WORKSPACE_BASES value: directories separated by
// the OS path-list separator (":" on Unix), like PATH. Empty entries are
// dropped.
func ParseList(value string) []string {
	var out []string
	for _, d := range filepath.SplitList(value) {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// NewBases resolves each directory to its absolute, symlink-free form. Every
// base must be an existing directory: a typo would otherwise reject every
// assignment with a confusing error. origin describes where the list came
// from ("FENIX_WORKSPACE_BASES" or "FENIX_WORKSPACE_ROOT (the default of
// FENIX_WORKSPACE_BASES)") and appears in errors.
func NewBases(origin string, dirs ...string) (*Bases, error) {
	b := &Bases{origin: origin}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("%s entry %q: %w", origin, d, err)
		}
		resolved, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("%s entry %q: %w", origin, d, err)
		}
		info, err := os.Stat(resolved)
		if err != nil {
			return nil, fmt.Errorf("%s entry %q: %w", origin, d, err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%s entry %q is not a directory", origin, d)
		}
		b.dirs = append(b.dirs, resolved)
	}
	return b, nil
}

// Dirs are the resolved bases.
func (b *Bases) Dirs() []string { return append([]string(nil), b.dirs...) }

// Holds reports whether path lies in one of the bases, where workspaces
// are: its links are resolved as far as it exists (a file not created yet
// is judged by its directory).
func (b *Bases) Holds(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	resolved, rest := abs, ""
	for {
		if real, err := filepath.EvalSymlinks(resolved); err == nil {
			resolved = filepath.Join(real, rest)
			break
		}
		parent := filepath.Dir(resolved)
		if parent == resolved {
			break
		}
		rest = filepath.Join(filepath.Base(resolved), rest)
		resolved = parent
	}
	_, ok := b.contains(resolved)
	return ok
}

// contains returns the base that holds p (absolute, cleaned), if any.
func (b *Bases) contains(p string) (string, bool) {
	for _, base := range b.dirs {
		if p == base || base == string(filepath.Separator) || strings.HasPrefix(p, base+string(filepath.Separator)) {
			return base, true
		}
	}
	return "", false
}

func (b *Bases) notAllowed(root, resolved string) error {
	if len(b.dirs) == 0 {
		return fenixerr.WorkspaceEscape("workspace root %q is not allowed: no workspace base is configured (set %s on the worker, or FENIX_WORKSPACE_ROOT, which is its default)",
			root, BasesSetting).WithCode(CodeRootNotAllowed)
	}
	via := ""
	if resolved != "" && resolved != root {
		via = fmt.Sprintf(" (it resolves to %q)", resolved)
	}
	return fenixerr.WorkspaceEscape("workspace root %q%s is outside the directories allowed by %s: %s",
		root, via, b.origin, strings.Join(b.dirs, string(filepath.ListSeparator))).WithCode(CodeRootNotAllowed)
}

// Resolve checks root against the bases and returns its absolute,
// symlink-free form and the base that holds it. A root outside every base
// is an authorization error (WorkspaceEscapeError, code
// workspace_root_not_allowed) naming the setting; a root that does not
// exist is reported as such only when it would be allowed, so the check
// does not reveal which paths exist elsewhere on the worker.
func (b *Bases) Resolve(root string) (resolved, base string, err error) {
	if root == "" {
		return "", "", fenixerr.Validation("workspace root is not set: pass workspace_root in the assignment or set FENIX_WORKSPACE_ROOT on the worker")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", "", fenixerr.Validation("workspace root %q cannot be made absolute: %v", root, err)
	}
	resolved, evalErr := filepath.EvalSymlinks(abs)
	if evalErr != nil {
		if _, ok := b.contains(abs); !ok {
			return "", "", b.notAllowed(root, "")
		}
		if errors.Is(evalErr, fs.ErrNotExist) {
			return "", "", fenixerr.Validation("workspace root %q does not exist", root).WithCode("not_found").WithCause(evalErr)
		}
		return "", "", fenixerr.Validation("workspace root %q cannot be resolved: %v", root, evalErr).WithCause(evalErr)
	}
	base, ok := b.contains(resolved)
	if !ok {
		return "", "", b.notAllowed(root, resolved)
	}
	return resolved, base, nil
}

// Open checks root against the bases and opens it as a workspace. The
// root is opened through its base's os.Root, so a symlink swapped into the
// path after the check cannot lead outside the base.
func (b *Bases) Open(root string) (*Workspace, error) {
	resolved, base, err := b.Resolve(root)
	if err != nil {
		return nil, err
	}
	baseRoot, err := os.OpenRoot(base)
	if err != nil {
		return nil, fenixerr.Validation("workspace base %q cannot be opened: %v", base, err).WithCause(err)
	}
	defer baseRoot.Close()
	rel, err := filepath.Rel(base, resolved)
	if err != nil {
		return nil, fenixerr.Validation("workspace root %q: %v", root, err)
	}
	sub, err := baseRoot.OpenRoot(rel)
	if err != nil {
		if strings.Contains(err.Error(), "path escapes from parent") {
			return nil, b.notAllowed(root, "")
		}
		return nil, fenixerr.Validation("workspace root %q cannot be opened: %v", root, err).WithCause(err)
	}
	fd, err := rootFD(sub)
	if err != nil {
		sub.Close()
		return nil, fenixerr.Validation("workspace root %q cannot be opened: %v", root, err).WithCause(err)
	}
	return &Workspace{dir: resolved, root: sub, rootFD: fd}, nil
}

// DefaultBases is the allow-list when FENIX_WORKSPACE_BASES is not set: the
// default workspace root alone, or nothing when that is not set either.
func DefaultBases(defaultRoot string) (*Bases, error) {
	return NewBases("FENIX_WORKSPACE_ROOT (the default of "+BasesSetting+")", defaultRoot)
}
