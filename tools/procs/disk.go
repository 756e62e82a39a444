package procs

import (
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ReasonDiskReserve: the command was killed because a filesystem it
// writes to (see diskWatches) ran below what the host keeps free
// (Limits.DiskReserveBytes), so the worker's own records, the audit log
// and anything else on that disk can still be written.
const ReasonDiskReserve = "disk_reserve"

// diskWatch is one filesystem a command may fill and the free space it
// may not take it below.
type diskWatch struct {
	dir   string
	floor uint64
}

// diskWatches lists the filesystems of the command's working directory,
// its TMPDIR, its log and Spec.KeepFree, each once, with their floors:
// the reserve, or half of what was free at the start where less than the
// reserve was (a disk already nearly full leaves the command half the
// rest, rather than killing every command at once).
func diskWatches(spec Spec) []diskWatch {
	reserve := spec.Limits.DiskReserveBytes
	if reserve <= 0 {
		return nil
	}
	dirs := append([]string{spec.Dir}, spec.KeepFree...)
	if spec.LogPath != "" {
		dirs = append(dirs, filepath.Dir(spec.LogPath))
	}
	for _, kv := range spec.Env {
		if tmp, ok := strings.CutPrefix(kv, "TMPDIR="); ok && tmp != "" {
			dirs = append(dirs, tmp)
		}
	}
	var out []diskWatch
	var seen []unix.Fsid
	for _, dir := range dirs {
		var st unix.Statfs_t
		if dir == "" || unix.Statfs(dir, &st) != nil || slices.Contains(seen, st.Fsid) {
			continue
		}
		seen = append(seen, st.Fsid)
		free := st.Bavail * uint64(st.Bsize)
		out = append(out, diskWatch{dir: dir, floor: min(uint64(reserve), free/2)})
	}
	return out
}

// belowFloor reports whether a watched filesystem has less free space
// than its floor.
func belowFloor(watches []diskWatch) bool {
	for _, w := range watches {
		var st unix.Statfs_t
		if unix.Statfs(w.dir, &st) == nil && st.Bavail*uint64(st.Bsize) < w.floor {
			return true
		}
	}
	return false
}
