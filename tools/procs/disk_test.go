//go:build linux

package procs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/internal/harness/scarce"
)

// A command that fills the disk it works on is stopped before the disk is
// full: the worker's records and the audit log on that disk can still be
// written. A disk of 64 MiB keeps half free (its reserve of 1 GiB is
// more than it has); a command that writes 8 MiB is not stopped.
func TestACommandThatFillsItsDiskIsStopped(t *testing.T) {
	disk := scarce.Disk(t, "64m")
	limits := Limits{DiskReserveBytes: 1 << 30}
	fill := `i=0; while [ $i -lt 60 ]; do head -c 1048576 /dev/zero >> fill || exit 3; i=$((i+1)); done; echo filled`
	_, exit, _ := run(t, Spec{CommandLine: fill, Dir: disk, Limits: limits}, 60*time.Second)
	assert.Equal(t, ReasonDiskReserve, exit.Reason)
	st, err := os.Stat(filepath.Join(disk, "fill"))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(60<<20), "stopped before it wrote all it meant to")
	require.NoError(t, os.Remove(filepath.Join(disk, "fill")))

	_, exit, _ = run(t, Spec{CommandLine: `head -c 8388608 /dev/zero > some && echo wrote`, Dir: disk, Limits: limits}, 30*time.Second)
	assert.Equal(t, 0, exit.Code)
	assert.Empty(t, exit.Reason)
}
