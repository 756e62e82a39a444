//go:build linux

package confine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The System V IPC objects (shared memory, semaphores, message queues)
// live in an IPC namespace, and POSIX shared memory in /dev/shm, a tmpfs
// every process shares: no file rule reaches the first, and /dev is the
// commands' to write. A command read and wrote another conversation's
// segments and /dev/shm files, and a root command a database's on the
// same host. With Policy.PrivateIPC each command starts, where the worker
// may make namespaces, in an IPC namespace of its own and with a /dev/shm
// of its workspace's: a directory under sharedMemoryBase bound onto
// /dev/shm in its mount namespace, which the commands of that workspace
// share (a service's segments reach a later command's client) and no
// other does. The directory gets its own Landlock rule when the
// workspace's rules are cut: past a mount point the rules of the
// directory mounted on (the original /dev/shm) no longer count.

// sharedMemoryBase makes the directory holding each workspace's
// /dev/shm, in the host's /dev/shm (memory, as the programs expect);
// "" where there is no /dev/shm.
func sharedMemoryBase() (string, error) {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return "", nil
	}
	base := filepath.Join("/dev/shm", fmt.Sprintf("fenix-%d", os.Geteuid()))
	if err := os.Mkdir(base, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("private /dev/shm for commands: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(base, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != uint32(os.Geteuid()) {
		return "", fmt.Errorf("private /dev/shm for commands: %s is not a directory of this user's", base)
	}
	return base, os.Chmod(base, 0o711)
}

// shmDir is workspace's /dev/shm under c.shm, made where it is missing
// (sticky and open to all, as /dev/shm is: a command may run as another
// user, FENIX_COMMAND_USER).
func (c *Confiner) shmDir(workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	dir := filepath.Join(c.shm, hex.EncodeToString(sum[:12]))
	if err := os.Mkdir(dir, 0o777); err == nil {
		_ = os.Chmod(dir, 0o1777)
	}
	return dir
}

// enterPrivateIPC moves the calling (locked, single-use) thread into an
// IPC namespace and a mount namespace of its own, with shm bound onto
// /dev/shm.
func enterPrivateIPC(shm string) error {
	if err := unix.Unshare(unix.CLONE_NEWIPC); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWIPC): %w", err)
	}
	if err := enterMountns(); err != nil {
		return err
	}
	if err := unix.Mount(shm, "/dev/shm", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding the workspace's /dev/shm: %w", err)
	}
	if err := unix.Mount("", "/dev/shm", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("binding the workspace's /dev/shm: %w", err)
	}
	return nil
}
