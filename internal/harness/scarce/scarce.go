// Package scarce gives a test places where a resource runs out without
// touching the rest of the host's: a memory cgroup with a small limit, into
// which a test moves a process to have the kernel's out-of-memory killer
// end it, and a small filesystem to fill.
package scarce

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Memory makes a memory cgroup below the test process's own, limited to
// limit bytes and no swap, and removes it when the test ends (once the
// processes moved there are gone). It skips the test without root or a
// cgroup v1 memory hierarchy. Write a pid to Procs(dir) to move it in.
func Memory(t *testing.T, limit int64) string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	own := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "memory" {
			own = parts[2]
		}
	}
	base := filepath.Join("/sys/fs/cgroup/memory", own)
	if _, err := os.Stat(filepath.Join(base, "memory.limit_in_bytes")); own == "" || err != nil || os.Getuid() != 0 {
		t.Skip("needs root and a cgroup v1 memory hierarchy to run a process out of memory")
	}
	dir, err := os.MkdirTemp(base, "fenix-memtest-")
	require.NoError(t, err)
	t.Cleanup(func() {
		for i := 0; i < 500 && os.Remove(dir) != nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})
	value := []byte(strconv.FormatInt(limit, 10))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), value, 0))
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), value, 0))
	}
	return dir
}

// Procs is the file a process's pid is written to to move it into dir.
func Procs(dir string) string { return filepath.Join(dir, "cgroup.procs") }

// Disk mounts a tmpfs of size (mount's syntax: "64m") on a directory of
// the test's, unmounted when it ends; root only.
func Disk(t *testing.T, size string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to mount a small filesystem")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}
