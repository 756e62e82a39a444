// Package proctree gives each process tree the worker starts (a hook run,
// an exec_command call, a process_exec service) a cgroup v2 of its own
// when the worker's cgroup is writable: the process is cloned straight
// into it, cgroup.kill ends every member at once without racing forks,
// and a process that leaves its process group (setsid, setpgid) stays in
// the cgroup. Callers keep their process group as the fallback where no
// cgroup can be made.
package proctree

import (
	"errors"
	"time"
)

// ErrUnavailable is returned by New where no cgroup v2 can be made.
var ErrUnavailable = errors.New("no writable cgroup v2 for process trees")

// Parent is the worker's own cgroup v2 directory when run cgroups can be
// made below it, else "". Checked once, by cloning a trivial process into
// a cgroup of its own; empty run cgroups a dead worker left behind are
// removed then.
func Parent() string { return parent() }

// staleAge is how old an empty run cgroup must be to be taken for a dead
// worker's: a younger one may be another worker's run about to start.
const staleAge = time.Minute
