//go:build !linux

package workspace

import (
	"os"
	"path"
	"syscall"
)

func rootFD(*os.Root) (int, error) { return -1, nil }

func closeFD(int) error { return nil }

// changeTime is left out off Linux (its field's name differs by system);
// size, mtime and inode still tell a rewrite.
func changeTime(*syscall.Stat_t) int64 { return 0 }

// openForWrite without openat2: os.Root still confines the open to the
// root, but a symlink swapped in inside the root is followed.
func (w *Workspace) openForWrite(target string) (*os.File, error) {
	if dir := path.Dir(target); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	if info, err := w.root.Lstat(target); err == nil && !info.Mode().IsRegular() && info.Mode()&os.ModeSymlink == 0 {
		return nil, errNotRegular
	}
	return w.root.OpenFile(target, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
}

// openForRead without openat2: os.Root still confines the open to the
// root, but a symlink swapped in inside the root is followed.
func (w *Workspace) openForRead(target string) (*os.File, error) {
	return w.root.OpenFile(target, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// reachableWithoutLinks has no single call that refuses symlinks off
// Linux: resolveLinks always walks.
func (w *Workspace) reachableWithoutLinks(string) bool { return false }
