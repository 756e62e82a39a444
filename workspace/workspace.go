// Package workspace confines file access to an assignment's workspace root.
//
// Every access goes through os.Root, which refuses ".." escapes, absolute
// paths and symlinks that resolve outside the root, including dangling and
// racing ones, at the system-call level. On top of that the package refuses
// non-regular files (devices, FIFOs, sockets) and writes to protected paths
// (every .git, hook settings, the scripts loaded hooks run, MCP server
// configurations) that would let an agent run code outside governance.
// Reads and writes resolve a path's symlinks once, let a Judge (the
// permission rules) see the file they reach, and open exactly that file
// without following a symlink, so the file judged is the file opened.
package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fenixrt/fenix/fenixerr"
)

// DefaultMaxReadBytes caps a single read.
const DefaultMaxReadBytes = 1 << 20

// DefaultMaxWriteBytes caps a single write.
const DefaultMaxWriteBytes = 4 << 20

// Workspace is an open, confined workspace root.
type Workspace struct {
	dir  string
	root *os.Root
	// rootFD is the root as an O_PATH descriptor for fd-relative opens.
	rootFD int
	// extra are further protected paths, relative to the root.
	extra []string
	// extraAbs are the absolute protected paths given to Protect, inside
	// the workspace or not: a hard link to one is refused by inode.
	extraAbs []string
	// private are paths relative to the root that are neither read nor
	// written (Hide).
	private []string
	// unwatched are the absolute and relative names Hide made private:
	// ProtectedState leaves them out.
	unwatched map[string]bool
	// judge, when set, is asked about every file ReadFile and WriteFile
	// open (SetJudge).
	judge Judge
}

// Open opens dir as a workspace root. dir must be an existing directory.
func Open(dir string) (*Workspace, error) {
	if dir == "" {
		return nil, fenixerr.Validation("workspace root is not set: pass workspace_root in the assignment or set FENIX_WORKSPACE_ROOT on the worker")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fenixerr.Validation("workspace root %q cannot be made absolute: %v", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fenixerr.Validation("workspace root %q cannot be opened: %v", abs, err).WithCause(err)
	}
	fd, err := rootFD(root)
	if err != nil {
		root.Close()
		return nil, fenixerr.Validation("workspace root %q cannot be opened: %v", abs, err).WithCause(err)
	}
	return &Workspace{dir: abs, root: root, rootFD: fd}, nil
}

// Dir is the absolute workspace root.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the root handle.
func (w *Workspace) Close() error { return errors.Join(w.root.Close(), closeFD(w.rootFD)) }

// FS exposes the workspace as a read-only fs.FS, still confined. Its
// directory listings (fs.ReadDir, fs.WalkDir) refuse a FIFO swapped in
// for a directory instead of blocking on it, as ReadDir does.
func (w *Workspace) FS() fs.FS { return ListingFS(w.root) }

// Clean validates a workspace-relative path and returns its canonical,
// slash-separated form ("." for the root). It rejects absolute paths, ".."
// segments that leave the root and NUL bytes with a WorkspaceEscapeError or
// ValidationError naming the path.
func Clean(rel string) (string, error) {
	if strings.ContainsRune(rel, 0) {
		return "", fenixerr.Validation("path %q contains a NUL byte", rel)
	}
	if rel == "" {
		return ".", nil
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) {
		return "", fenixerr.WorkspaceEscape("path %q is absolute: workspace paths are relative to the workspace root", rel)
	}
	cleaned := path.Clean(filepath.ToSlash(rel))
	if cleaned == ".." || strings.HasPrefix(cleaned, "../") {
		return "", fenixerr.WorkspaceEscape("path %q leaves the workspace root", rel)
	}
	return cleaned, nil
}

// translate maps os.Root's errors to Fenix errors that name the path.
func translate(rel string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "path escapes from parent"):
		return fenixerr.WorkspaceEscape("path %q resolves outside the workspace root (through \"..\" or a symlink)", rel).WithCause(err)
	case errors.Is(err, fs.ErrNotExist):
		return fenixerr.Validation("path %q does not exist in the workspace", rel).WithCode("not_found").WithCause(err)
	case errors.Is(err, fs.ErrPermission):
		return fenixerr.Validation("path %q is not accessible: permission denied", rel).WithCode("permission_denied").WithCause(err)
	case errors.Is(err, syscall.ELOOP):
		return fenixerr.WorkspaceEscape("path %q is a symlink loop or a symlink where none is allowed", rel).WithCause(err)
	case errors.Is(err, syscall.ENOTDIR):
		return fenixerr.Validation("path %q goes through something that is not a directory", rel).WithCause(err)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fenixerr.Validation("path %q is too long for the file system", preview(rel)).WithCode("name_too_long").WithCause(err)
	case errors.Is(err, syscall.EISDIR):
		return fenixerr.Validation("path %q is a directory", rel).WithCode("is_directory").WithCause(err)
	}
	return fenixerr.Runtime("workspace access to %q failed: %v", rel, err).WithCause(err)
}

// ReadResult is the content of a read, possibly truncated.
type ReadResult struct {
	Path      string
	Content   []byte
	Size      int64
	Truncated bool
}

// ReadFile reads a regular file, at most maxBytes of it (0 means the
// default). Devices, FIFOs, sockets and directories are refused without
// blocking: the file is opened non-blocking and checked before reading.
// The path's symlinks are resolved once, the judge (SetJudge) asked about
// the file they reach, and that file opened without following any symlink
// (openat2 on Linux), so a link repointed in between fails the read
// instead of redirecting it.
func (w *Workspace) ReadFile(rel string, maxBytes int64) (ReadResult, error) {
	cleaned, err := Clean(rel)
	if err != nil {
		return ReadResult{}, err
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxReadBytes
	}
	target, err := w.resolveLinks(cleaned)
	if err != nil {
		return ReadResult{}, err
	}
	if err := w.refusePrivate(cleaned, target); err != nil {
		return ReadResult{}, err
	}
	if err := w.judged(AccessRead, cleaned, target); err != nil {
		return ReadResult{}, err
	}
	f, err := w.openForRead(target)
	if err != nil {
		return ReadResult{}, raced(cleaned, target, "read", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return ReadResult{}, translate(cleaned, err)
	}
	if err := requireRegular(cleaned, info); err != nil {
		return ReadResult{}, err
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return ReadResult{}, translate(cleaned, err)
	}
	res := ReadResult{Path: cleaned, Size: info.Size()}
	if int64(len(buf)) > maxBytes {
		buf = buf[:maxBytes]
		res.Truncated = true
	}
	res.Content = buf
	return res, nil
}

// raced translates an error opening target, the file cleaned resolved
// to: a symlink met on the way (ELOOP, EXDEV) appeared after the path was
// resolved and judged, and is never followed.
func raced(cleaned, target, doing string, err error) error {
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EXDEV) {
		return fenixerr.WorkspaceEscape("path %q changed while it was being %s: a symlink appeared on the way to %q, and workspace tools never follow one that was not there when the path was checked", cleaned, doing, target).WithCode("path_changed").WithCause(err)
	}
	return translate(cleaned, err)
}

func requireRegular(rel string, info fs.FileInfo) error {
	mode := info.Mode()
	switch {
	case mode.IsRegular():
		return nil
	case mode.IsDir():
		return fenixerr.Validation("path %q is a directory, not a file", rel).WithCode("is_directory")
	case mode&fs.ModeDevice != 0 || mode&fs.ModeCharDevice != 0:
		return fenixerr.Validation("path %q is a device file and is not read or written", rel).WithCode("not_regular_file")
	default:
		return fenixerr.Validation("path %q is not a regular file (mode %s)", rel, mode.Type()).WithCode("not_regular_file")
	}
}

// WriteFile writes data to a regular file, creating parent directories.
// Protected paths (also when reached through a symlink), files with more
// than one hard link and non-regular existing targets (devices, FIFOs,
// sockets, directories) are refused. The target is resolved first, then opened beneath the root
// without following any symlink (openat2 on Linux), so a symlink swapped
// in between fails the write instead of redirecting it.
func (w *Workspace) WriteFile(rel string, data []byte, maxBytes int64) (string, error) {
	cleaned, target, err := w.writableTarget(rel)
	if err != nil {
		return "", err
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxWriteBytes
	}
	if int64(len(data)) > maxBytes {
		return "", fenixerr.PayloadTooLarge("write to %q of %d bytes exceeds the limit of %d bytes", cleaned, len(data), maxBytes)
	}
	if err := w.judged(AccessWrite, cleaned, target); err != nil {
		return "", err
	}
	f, err := w.openForWrite(target)
	if err != nil {
		if errors.Is(err, errNotRegular) {
			if info, serr := w.root.Lstat(target); serr == nil {
				return "", requireRegular(cleaned, info)
			}
		}
		return "", raced(cleaned, target, "written", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err == nil {
		err = requireRegular(cleaned, info)
	}
	if err == nil {
		err = w.refuseHardLink(cleaned, info)
	}
	if err != nil {
		return "", err
	}
	if err := f.Truncate(0); err != nil {
		return "", translate(cleaned, err)
	}
	if _, err := f.Write(data); err != nil {
		return "", translate(cleaned, err)
	}
	if err := f.Close(); err != nil {
		return "", translate(cleaned, err)
	}
	return cleaned, nil
}

// ResolveLinks cleans rel and follows its symlinks inside the root to the
// path an open of it would reach, as resolveLinks does: components that
// do not exist yet are kept as written. A path that leaves the root, goes
// through an absolute symlink or loops is an error naming it: the
// workspace would refuse to open it.
func (w *Workspace) ResolveLinks(rel string) (string, error) {
	cleaned, err := Clean(rel)
	if err != nil {
		return "", err
	}
	return w.resolveLinks(cleaned)
}

// maxSymlinkHops matches the kernel's limit.
const maxSymlinkHops = 40

// resolveLinks follows symlinks inside the root to the path an open of
// cleaned would reach. Components that do not exist yet are kept as
// written; absolute or escaping targets are refused like os.Root does.
//
// A path that exists with no symlink on the way is its own target: one
// openat2 that refuses every symlink (O_PATH, so nothing is opened for
// reading or writing) tells it, and the walk, an lstat per component,
// each through os.Root, runs only when that probe fails.
func (w *Workspace) resolveLinks(cleaned string) (string, error) {
	if w.reachableWithoutLinks(cleaned) {
		return cleaned, nil
	}
	pending := strings.Split(cleaned, "/")
	var resolved []string
	hops := 0
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(resolved) == 0 {
				return "", fenixerr.WorkspaceEscape("path %q resolves outside the workspace root (through a symlink)", cleaned)
			}
			resolved = resolved[:len(resolved)-1]
			continue
		}
		candidate := path.Join(append(resolved, part)...)
		info, err := w.root.Lstat(candidate)
		if errors.Is(err, fs.ErrNotExist) {
			rest := path.Join(append(append(resolved, part), pending...)...)
			if rest == ".." || strings.HasPrefix(rest, "../") {
				return "", fenixerr.WorkspaceEscape("path %q resolves outside the workspace root (through a symlink)", cleaned)
			}
			return rest, nil
		}
		if err != nil {
			return "", translate(cleaned, err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = append(resolved, part)
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", fenixerr.WorkspaceEscape("path %q goes through more than %d symlinks", cleaned, maxSymlinkHops).WithCause(syscall.ELOOP)
		}
		target, err := w.root.Readlink(candidate)
		if errors.Is(err, syscall.EINVAL) {
			return "", fenixerr.WorkspaceEscape("path %q changed while it was being resolved: %q stopped being a symlink", cleaned, candidate).WithCode("path_changed").WithCause(err)
		}
		if err != nil {
			return "", translate(candidate, err)
		}
		if path.IsAbs(target) {
			return "", fenixerr.WorkspaceEscape("path %q goes through symlink %q with absolute target %q: workspace symlinks must be relative and stay inside the root", cleaned, candidate, target)
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	if len(resolved) == 0 {
		return ".", nil
	}
	return path.Join(resolved...), nil
}

// Stat describes a path, following symlinks that stay inside the root.
func (w *Workspace) Stat(rel string) (fs.FileInfo, string, error) {
	cleaned, err := Clean(rel)
	if err != nil {
		return nil, "", err
	}
	info, err := w.root.Stat(cleaned)
	if err != nil {
		return nil, cleaned, translate(cleaned, err)
	}
	return info, cleaned, nil
}

// OpenSource opens rel for reading what lies there, a directory (dir,
// itself confined like the workspace) or anything else (file, opened
// non-blocking so a FIFO cannot hold the caller; check its type), through
// the workspace root: symlinks are followed only inside it. A caller that
// reads a whole tree (a skill install) reads what the handle reaches,
// not what the name leads to later, so a source swapped for a link out
// of the workspace after the caller judged it is never read.
func (w *Workspace) OpenSource(rel string) (dir *os.Root, file *os.File, cleaned string, err error) {
	cleaned, err = Clean(rel)
	if err != nil {
		return nil, nil, "", err
	}
	target, err := w.resolveLinks(cleaned)
	if err != nil {
		return nil, nil, cleaned, err
	}
	if err := w.refusePrivate(cleaned, target); err != nil {
		return nil, nil, cleaned, err
	}
	info, err := w.root.Stat(cleaned)
	if err != nil {
		return nil, nil, cleaned, translate(cleaned, err)
	}
	if info.IsDir() {
		dir, err = w.root.OpenRoot(cleaned)
		if err != nil {
			return nil, nil, cleaned, translate(cleaned, err)
		}
		return dir, nil, cleaned, nil
	}
	file, err = w.root.OpenFile(cleaned, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, cleaned, translate(cleaned, err)
	}
	return nil, file, cleaned, nil
}

// Lstat describes a path without following a final symlink.
func (w *Workspace) Lstat(rel string) (fs.FileInfo, string, error) {
	cleaned, err := Clean(rel)
	if err != nil {
		return nil, "", err
	}
	info, err := w.root.Lstat(cleaned)
	if err != nil {
		return nil, cleaned, translate(cleaned, err)
	}
	return info, cleaned, nil
}

// Readlink returns a symlink's target as stored (not resolved).
func (w *Workspace) Readlink(rel string) (string, error) {
	cleaned, err := Clean(rel)
	if err != nil {
		return "", err
	}
	target, err := w.root.Readlink(cleaned)
	if err != nil {
		return "", translate(cleaned, err)
	}
	return target, nil
}

// Resolve returns the absolute host path of a confined, existing directory,
// for tools (exec_command) that must hand a working directory to a child
// process. It verifies the directory through the root first.
func (w *Workspace) Resolve(rel string) (string, error) {
	info, cleaned, err := w.Stat(rel)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", fenixerr.Validation("path %q is not a directory", cleaned)
	}
	return filepath.Join(w.dir, filepath.FromSlash(cleaned)), nil
}

// preview shortens a path for an error message.
func preview(p string) string {
	if len(p) > 200 {
		return p[:200] + "…"
	}
	return p
}

// String is the root path, for messages.
func (w *Workspace) String() string { return fmt.Sprintf("workspace %s", w.dir) }
