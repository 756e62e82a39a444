package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// What governs an agent inside its own workspace — the project's hook
// settings and scripts, the MCP configuration, git's hooks and config —
// cannot be cut out of a Landlock domain without costing the workspace's
// root its new entries (see the package comment), so a command that
// rewrote it was only reported (workspace.ProtectedState). A hook that
// later runs git in the workspace then ran the command's code outside its
// sandbox: a core.fsmonitor in .git/config, a .git/hooks/post-checkout.
//
// Where the worker may make mount namespaces (CAP_SYS_ADMIN: a root
// worker, as for network namespaces), a command given read-only paths
// (CommandOptions.ReadOnly) starts from a thread in a mount namespace of
// its own, where each of them is bound read-only onto itself: the command
// reads them and cannot write, replace or remove them. The workspace's
// root and every directory between it and a read-only path are bound onto
// themselves too (writable): a mount point cannot be renamed or removed,
// so `mv .git .git-old && mkdir .git` cannot swap in a repository whose
// config the command wrote, nor a renamed workspace a fresh one. Mounts
// made in the namespace do not propagate back (MS_SLAVE); the worker's
// and its hooks' view is unchanged.
//
// A sandbox's deny lists inside the workspace (Boundary.inWorkspace) are
// held the same way: a denyWrite path read-only, a denyRead one with
// nothing readable mounted on it.
//
// A path that does not exist is not protected (a mount needs something to
// mount on), nor is the name of a symbolic link: its target is protected
// where it lies in the workspace, and the link's change is reported. A
// path that changes between being resolved and being mounted on fails
// the command's start rather than leave it unheld.

// probeMountns reports why commands cannot get a mount namespace, or nil.
func probeMountns() error {
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine.
		runtime.LockOSThread()
		done <- enterMountns()
	}()
	return <-done
}

// enterMountns moves the calling (locked, single-use) thread into a mount
// namespace of its own whose mounts do not propagate back.
func enterMountns() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w (read-only paths in a command's workspace need a root worker)", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making the command's mounts private: %w", err)
	}
	return nil
}

// holdInWorkspace moves the calling (locked, single-use) thread into a
// mount namespace of its own where the paths readOnly names, relative to
// workspace or absolute (a linked worktree's repository), are read-only
// (see above) and those hidden names have
// nothing readable in their place: an empty directory, a file that cannot
// be opened (a sandbox's denyRead inside the workspace). Paths that do
// not exist, or lead out of the workspace, are left alone. entered is
// whether the thread is in its own mount namespace already (holdPaths).
func holdInWorkspace(workspace string, readOnly, hidden []string, entered bool) error {
	if len(readOnly)+len(hidden) == 0 || workspace == "" {
		return nil
	}
	var relative, absolute []string
	for _, p := range readOnly {
		if filepath.IsAbs(p) {
			absolute = append(absolute, p)
		} else {
			relative = append(relative, p)
		}
	}
	realRoot, targets, err := resolveInWorkspace(workspace, relative)
	if err != nil {
		return err
	}
	outside, inside := resolveOutside(realRoot, absolute)
	targets = append(targets, inside...)
	_, veiled, err := resolveInWorkspace(workspace, hidden)
	if err != nil || len(targets)+len(veiled)+len(outside) == 0 {
		return err
	}
	pins := []string{}
	for _, t := range append(slices.Clone(targets), veiled...) {
		for dir := filepath.Dir(t); dir != "."; dir = filepath.Dir(dir) {
			pins = append(pins, dir)
		}
	}
	slices.Sort(pins) // a directory before those in it
	pins = slices.Compact(pins)
	if !entered {
		if err := enterMountns(); err != nil {
			return err
		}
	}
	// Outside the workspace (a linked worktree's repository): every
	// directory leading to a path is pinned first, from the top, so that
	// none of them can be renamed to swap in another.
	var outsidePins []string
	for _, t := range outside {
		for dir := filepath.Dir(t); dir != "/"; dir = filepath.Dir(dir) {
			outsidePins = append(outsidePins, dir)
		}
	}
	slices.Sort(outsidePins)
	for _, dir := range slices.Compact(outsidePins) {
		if err := bindAt(unix.AT_FDCWD, dir, 0); err != nil {
			return fmt.Errorf("protecting workspace %s: pinning %s: %w", workspace, dir, err)
		}
	}
	// Each mount is made on a name opened in the namespace after the mounts
	// above it: a descriptor opened earlier names the object beneath them.
	if err := bindAt(unix.AT_FDCWD, realRoot, 0); err != nil {
		return fmt.Errorf("protecting workspace %s: pinning it: %w", workspace, err)
	}
	root, err := unix.Open(realRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("protecting workspace %s: %w", workspace, err)
	}
	defer unix.Close(root)
	for _, dir := range pins {
		if err := bindAt(root, dir, 0); err != nil {
			return fmt.Errorf("protecting workspace %s: pinning %s: %w", workspace, dir, err)
		}
	}
	for _, t := range targets {
		if err := bindAt(root, t, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
			return fmt.Errorf("protecting workspace %s: making %s read-only: %w", workspace, t, err)
		}
	}
	for _, t := range veiled {
		if err := veilAt(root, t); err != nil {
			return fmt.Errorf("protecting workspace %s: hiding %s: %w", workspace, t, err)
		}
	}
	for _, t := range outside {
		if err := bindAt(unix.AT_FDCWD, t, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
			return fmt.Errorf("protecting workspace %s: making %s read-only: %w", workspace, t, err)
		}
	}
	return nil
}

// holdPaths moves the calling (locked, single-use) thread into a mount
// namespace of its own where each of held (Policy.HeldByMounts) is held:
// every directory on the way to one pinned first, from the top (a mount
// point cannot be renamed or removed, so none can be swapped for another
// that holds a path of the agent's making), then a read-only path bound
// read-only onto itself and a hidden one with nothing readable in its
// place, a path before those in it, and a writable path (Policy.Writable)
// in a hidden one bound back where it was. It reports whether the thread
// is in a namespace of its own: already, or entered for held paths. A
// path the rules were cut
// without that is gone, or became a symbolic link, fails the start: the
// next one cuts the rules again.
func holdPaths(held []protected, writable []string, already bool) (entered bool, err error) {
	if len(held) == 0 {
		return already, nil
	}
	held = slices.Clone(held)
	slices.SortFunc(held, func(a, b protected) int { return strings.Compare(a.path, b.path) })
	var pins []string
	for _, p := range held {
		for dir := filepath.Dir(p.path); dir != "/"; dir = filepath.Dir(dir) {
			pins = append(pins, dir)
		}
	}
	slices.Sort(pins)
	pins = slices.Compact(pins)
	if !already {
		if err := enterMountns(); err != nil {
			return false, err
		}
	}
	// Opened by names relative to the root with no symbolic link on the
	// way: each is opened again after the mounts above it.
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, err
	}
	defer unix.Close(root)
	rel := func(path string) string { return strings.TrimPrefix(path, "/") }
	for _, dir := range pins {
		if err := bindAt(root, rel(dir), 0); err != nil {
			return true, fmt.Errorf("holding the protected paths: pinning %s: %w", dir, err)
		}
	}
	var done []protected
	for _, p := range held {
		covered := slices.ContainsFunc(done, func(q protected) bool { return within(p.path, q.path) && (!q.readOnly || p.readOnly) })
		if covered {
			continue
		}
		switch holes := slices.DeleteFunc(slices.Clone(writable), func(w string) bool { return !within(w, p.path) }); {
		case p.readOnly:
			err = bindAt(root, rel(p.path), unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		case len(holes) > 0:
			err = veilAround(root, p.path, holes)
		default:
			err = veilAt(root, rel(p.path))
		}
		if err != nil {
			return true, fmt.Errorf("holding the protected path %s: %w", p.path, err)
		}
		done = append(done, p)
	}
	return true, nil
}

// veilAround puts an empty read-only tmpfs on the directory dir (absolute,
// opened from root) with each of holes, paths inside it, bound back in
// its place: the hooks' plugin data directory inside the data directory.
// A hole that is not there is left out.
func veilAround(root int, dir string, holes []string) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	type hole struct {
		fd  int
		rel string
	}
	var kept []hole
	defer func() {
		for _, h := range kept {
			unix.Close(h.fd)
		}
	}()
	for _, path := range holes {
		fd, err := unix.Openat2(root, strings.TrimPrefix(path, "/"), how)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, _ := filepath.Rel(dir, path)
		kept = append(kept, hole{fd, rel})
	}
	fd, err := unix.Openat2(root, strings.TrimPrefix(dir, "/"), how)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555"); err != nil {
		return err
	}
	veil, err := unix.Openat2(root, strings.TrimPrefix(dir, "/"), how)
	if err != nil {
		return err
	}
	defer unix.Close(veil)
	for _, h := range kept {
		if err := os.MkdirAll(filepath.Join(fdPath(veil), h.rel), 0o555); err != nil {
			return fmt.Errorf("veiling %s around %s: %w", dir, h.rel, err)
		}
		target, err := unix.Openat2(veil, h.rel, how)
		if err != nil {
			return fmt.Errorf("veiling %s around %s: %w", dir, h.rel, err)
		}
		err = unix.Mount(fdPath(h.fd), fdPath(target), "", unix.MS_BIND|unix.MS_REC, "")
		unix.Close(target)
		if err != nil {
			return fmt.Errorf("veiling %s around %s: %w", dir, h.rel, err)
		}
	}
	// Read-only once the holes are in: the tmpfs alone, not what is
	// bound into it.
	return unix.MountSetattr(veil, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
}

// resolveOutside resolves absolute paths, following symbolic links, to
// real ones: those outside the workspace at realRoot, and those inside it
// relative to it. A path that does not exist is left out.
func resolveOutside(realRoot string, paths []string) (outside, inside []string) {
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		real, err := os.Readlink(fdPath(fd))
		unix.Close(fd)
		if err != nil || real == "/" {
			continue
		}
		if rel, err := filepath.Rel(realRoot, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if rel != "." {
				inside = append(inside, rel)
			}
			continue
		}
		outside = append(outside, real)
	}
	slices.Sort(outside)
	return slices.Compact(outside), inside
}

// veilAt puts nothing readable in name's place (relative to dirfd, with no
// symbolic link on the way): an empty read-only tmpfs on a directory, the
// null device on a file, on a mount that refuses to open devices.
func veilAt(dirfd int, name string) error {
	fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
	}
	if err := unix.Mount("/dev/null", fdPath(fd), "", unix.MS_BIND, ""); err != nil {
		return err
	}
	veiled, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return err
	}
	defer unix.Close(veiled)
	return unix.MountSetattr(veiled, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC})
}

// resolveInWorkspace resolves each of paths in workspace, following
// symbolic links that stay in it, to a path relative to the workspace's
// real root; a path that does not exist or leads out is left out.
func resolveInWorkspace(workspace string, paths []string) (realRoot string, targets []string, err error) {
	root, err := unix.Open(workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("protecting workspace %s: %w", workspace, err)
	}
	defer unix.Close(root)
	if realRoot, err = os.Readlink(fdPath(root)); err != nil {
		return "", nil, fmt.Errorf("protecting workspace %s: %w", workspace, err)
	}
	for _, rel := range paths {
		fd, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) {
				continue
			}
			return "", nil, fmt.Errorf("protecting %s in workspace %s: %w", rel, workspace, err)
		}
		real, err := os.Readlink(fdPath(fd))
		unix.Close(fd)
		if err != nil {
			return "", nil, fmt.Errorf("protecting %s in workspace %s: %w", rel, workspace, err)
		}
		inside, err := filepath.Rel(realRoot, real)
		if err != nil || inside == "." || inside == ".." || strings.HasPrefix(inside, "../") {
			continue
		}
		targets = append(targets, inside)
	}
	slices.Sort(targets)
	return realRoot, slices.Compact(targets), nil
}

// bindAt binds name (relative to dirfd, with no symbolic link on the way)
// onto itself, then sets the mount attributes attrs on the new mount
// (MOUNT_ATTR_*), keeping the others it has (a noexec stays noexec).
func bindAt(dirfd int, name string, attrs uint64) error {
	open := func() (int, error) {
		if dirfd == unix.AT_FDCWD {
			return unix.Open(name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		return unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	}
	fd, err := open()
	if err != nil {
		return err
	}
	err = unix.Mount(fdPath(fd), fdPath(fd), "", unix.MS_BIND|unix.MS_REC, "")
	unix.Close(fd)
	if err != nil || attrs == 0 {
		return err
	}
	// Opened again: the name now leads into the new mount, which must
	// change, not the one it was made on.
	if fd, err = open(); err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrs})
}

// fdPath names an open file by its descriptor, for the calling thread.
func fdPath(fd int) string {
	return "/proc/thread-self/fd/" + strconv.Itoa(fd)
}
