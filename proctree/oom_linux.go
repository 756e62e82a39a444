//go:build linux

package proctree

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// oomVictimFirst is the oom_score_adj of the processes the worker starts
// for an agent: the highest, so when the host runs out of memory the
// kernel kills an agent's process before the worker, the Temporal server
// or anything else on the host, and the call ends with a result.
const oomVictimFirst = "1000"

// PreferOOMKill makes pid, and every process it starts from now on, the
// kernel's first choice when memory runs out. Raising a process's
// oom_score_adj needs no privilege.
func PreferOOMKill(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(oomVictimFirst), 0)
}

// OOMKills counts the processes the kernel's out-of-memory killer has
// killed on this host since boot (/proc/vmstat oom_kill, Linux 4.13+);
// -1 when unknown.
func OOMKills() int64 {
	raw, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return -1
	}
	return counter(raw, "oom_kill")
}

// OOMKills counts the processes of this cgroup the out-of-memory killer
// killed (memory.events), -1 where the memory controller is not enabled
// for it.
func (c *Cgroup) OOMKills() int64 {
	raw, err := os.ReadFile(filepath.Join(c.dir, "memory.events"))
	if err != nil {
		return -1
	}
	return counter(raw, "oom_kill")
}

// counter reads the value of name in a "name value" per line file.
func counter(raw []byte, name string) int64 {
	for line := range bytes.Lines(raw) {
		if rest, ok := bytes.CutPrefix(line, []byte(name+" ")); ok {
			if n, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}
