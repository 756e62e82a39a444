package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"syscall"

	"github.com/fenixrt/fenix/fenixerr"
)

// errNotRegular is openForWrite's refusal of an existing device, FIFO or
// socket; WriteFile turns it into the error naming the file's type.
var errNotRegular = errors.New("not a regular file")

// maxProtectedScan bounds the walk of protected directories that names
// the protected file a refused hard link shares its inode with.
const maxProtectedScan = 20000

type fileID struct{ dev, ino uint64 }

func idOf(info fs.FileInfo) (fileID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true
}

// refuseHardLink refuses a write whose opened file has more than one
// link. openat2 confines names, not inodes: after ln /outside/file x (by
// exec_command or any earlier process) x is the outside file, and writing
// x writes it. The count is read from the descriptor the write goes
// through, so the inode judged is the inode written. A link to a
// protected file is reported as that, naming it, when the bounded walk
// finds it.
func (w *Workspace) refuseHardLink(rel string, opened fs.FileInfo) error {
	st, ok := opened.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink <= 1 {
		return nil
	}
	id, _ := idOf(opened)
	if name, found := w.protectedWithID(id); found {
		return fenixerr.WorkspaceEscape("path %q is a hard link to protected path %q (%s are not writable by tools under any name)", rel, name, protectedSet).WithCode("protected_path")
	}
	return fenixerr.WorkspaceEscape("path %q has %d links: it shares its contents with another name, possibly outside the workspace, and a write through one name changes them all, so tools do not write it (remove this name first; a write then creates a file of its own)", rel, uint64(st.Nlink)).WithCode("hard_link")
}

// protectedWithID finds the protected file with the given device and
// inode: under the protected prefixes and the extra paths inside the
// root (files, symlinks inside the root followed), and the absolute extra
// paths wherever they are.
func (w *Workspace) protectedWithID(id fileID) (string, bool) {
	match := func(info fs.FileInfo) bool {
		got, ok := idOf(info)
		return ok && got == id
	}
	scanned := 0
	var found string
	visit := func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if scanned++; scanned > maxProtectedScan {
			return fs.SkipAll
		}
		if d.IsDir() {
			return nil
		}
		info, err := w.root.Stat(p)
		if err == nil && match(info) {
			found = p
			return fs.SkipAll
		}
		return nil
	}
	// The whole of .git comes last: its objects can use up the budget
	// before a hook script is found.
	roots := slices.Concat(protectedPrefixes, w.extra, []string{".git/hooks", ".git/config", gitDir})
	for _, p := range roots {
		if _, err := w.root.Lstat(p); err != nil {
			continue
		}
		_ = fs.WalkDir(w.root.FS(), path.Clean(p), visit)
		if found != "" {
			return found, true
		}
	}
	for _, p := range w.extraAbs {
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && match(info) {
			return p, true
		}
	}
	return "", false
}
