package procs

import "github.com/fenixrt/fenix/proctree"

// ReasonOutOfMemory is the kernel's, not Fenix's: the command ended by
// SIGKILL (its shell, or its last command with status 137) while the
// out-of-memory killer killed a process of its cgroup or, where its
// cgroup has no memory controller, of the host. Every command starts
// with the highest oom_score_adj (Process.guard), so the kernel takes it
// before the worker.
const ReasonOutOfMemory = "out_of_memory"

// killedForMemory says whether the out-of-memory killer ran during the
// command: in its cgroup when that counts (cgroupKills >= 0), else on the
// host, where another process's kill in the same moment would be taken
// for the command's (the command did die of SIGKILL from outside Fenix).
func (p *Process) killedForMemory(cgroupKills int64) bool {
	if cgroupKills >= 0 {
		return cgroupKills > 0
	}
	now := proctree.OOMKills()
	return p.oomKillsAtStart >= 0 && now > p.oomKillsAtStart
}
