//go:build linux

package workspace

import (
	"errors"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// noLinks resolves a path beneath a directory fd and refuses every symlink
// on the way, in the kernel and in the same call that opens the file, so a
// symlink swapped in after resolveLinks cannot redirect the write.
const noLinks = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// rootFD duplicates the descriptor of the directory root has open, so
// the fd-relative walk starts at the very directory os.Root confines to.
func rootFD(root *os.Root) (int, error) {
	f, err := root.Open(".")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	return unix.Dup(int(f.Fd()))
}

func closeFD(fd int) error { return unix.Close(fd) }

// changeTime is a file's inode change time, which a rename or relink over
// it moves even when the size and mtime are put back.
func changeTime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// openat2 opens name beneath dirfd without following any symlink. Kernels
// older than 5.6 lack openat2; one component with O_NOFOLLOW is as strict.
func openat2(dirfd int, name string, flags uint64, mode uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: mode, Resolve: noLinks})
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err == unix.ENOSYS && !strings.Contains(name, "/"):
			return unix.Openat(dirfd, name, int(flags)|unix.O_CLOEXEC|unix.O_NOFOLLOW, uint32(mode))
		}
		return fd, err
	}
}

// openForWrite opens target, a cleaned path with no symlinks in it as of
// resolveLinks, for writing: parent directories are opened (and created)
// one component at a time relative to the previous one, and the file is
// opened beneath its parent, all without following a symlink. The file is
// not truncated: the caller checks what it opened first.
func (w *Workspace) openForWrite(target string) (*os.File, error) {
	dirfd, base, err := w.openParent(target, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	// A device or FIFO is refused before open: opening one can block or
	// have effects of its own.
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return nil, errNotRegular
		}
	}
	fd, err := openat2(dirfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), target), nil
}

// openForRead opens target, a cleaned path with no symlinks in it as of
// resolveLinks, for reading, without following a symlink on the way
// (non-blocking: the caller refuses what is not a regular file): one
// openat2 of the whole path, or a component at a time on a kernel without
// it.
func (w *Workspace) openForRead(target string) (*os.File, error) {
	fd, err := openat2(w.rootFD, target, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if !errors.Is(err, unix.ENOSYS) {
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), target), nil
	}
	dirfd, base, err := w.openParent(target, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err = openat2(dirfd, base, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), target), nil
}

// reachableWithoutLinks reports whether cleaned names an existing file
// beneath the root with no symlink on the way, in one openat2 with O_PATH
// (which opens nothing for I/O, so a FIFO or device is not touched; without
// O_NOFOLLOW, since O_PATH|O_NOFOLLOW opens a final symlink itself instead
// of refusing it). False on any error, a kernel without openat2 included.
func (w *Workspace) reachableWithoutLinks(cleaned string) bool {
	fd, err := unix.Openat2(w.rootFD, cleaned, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: noLinks})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// openParent opens target's parent directory one component at a time from
// the root, each relative to the previous one and none a symlink, making
// missing ones when create is set. It returns the parent's descriptor and
// target's last component.
func (w *Workspace) openParent(target string, create bool) (dirfd int, base string, err error) {
	parts := strings.Split(target, "/")
	dirfd, err = unix.Dup(w.rootFD)
	if err != nil {
		return -1, "", err
	}
	for _, part := range parts[:len(parts)-1] {
		fd, err := openat2(dirfd, part, unix.O_PATH|unix.O_DIRECTORY, 0)
		if create && errors.Is(err, unix.ENOENT) {
			if err := unix.Mkdirat(dirfd, part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(dirfd)
				return -1, "", err
			}
			fd, err = openat2(dirfd, part, unix.O_PATH|unix.O_DIRECTORY, 0)
		}
		unix.Close(dirfd)
		if err != nil {
			return -1, "", err
		}
		dirfd = fd
	}
	return dirfd, parts[len(parts)-1], nil
}
