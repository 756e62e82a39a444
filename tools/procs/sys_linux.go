//go:build linux

package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const supported = true

func sysProcAttr() *syscall.SysProcAttr {
	// Pdeathsig: if the worker dies, the group leader dies with it instead
	// of running on unsupervised.
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// applyLimits sets the child's resource limits with prlimit(2). Limits can
// only be lowered without privilege, so each value is clamped to the hard
// limit the worker itself has.
func applyLimits(pid int, l Limits) error {
	set := func(name string, resource int, soft, hard uint64) error {
		var old unix.Rlimit
		if err := unix.Prlimit(pid, resource, nil, &old); err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if hard > old.Max {
			hard = old.Max
		}
		soft = min(soft, hard)
		if err := unix.Prlimit(pid, resource, &unix.Rlimit{Cur: soft, Max: hard}, nil); err != nil {
			return fmt.Errorf("setting %s to %d: %w", name, soft, err)
		}
		return nil
	}
	if l.MaxFileBytes > 0 {
		if err := set("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(l.MaxFileBytes), uint64(l.MaxFileBytes)); err != nil {
			return err
		}
	}
	if l.CPUSeconds > 0 {
		// The soft limit sends SIGXCPU; the hard limit, a little later, SIGKILL.
		if err := set("RLIMIT_CPU", unix.RLIMIT_CPU, uint64(l.CPUSeconds), uint64(l.CPUSeconds)+5); err != nil {
			return err
		}
	}
	if l.MaxOpenFiles > 0 {
		if err := set("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, uint64(l.MaxOpenFiles), uint64(l.MaxOpenFiles)); err != nil {
			return err
		}
	}
	if l.MaxMemoryBytes > 0 {
		if err := set("RLIMIT_AS", unix.RLIMIT_AS, uint64(l.MaxMemoryBytes), uint64(l.MaxMemoryBytes)); err != nil {
			return err
		}
	}
	if l.MaxProcesses > 0 && os.Getuid() != 0 {
		// RLIMIT_NPROC counts every task of the real user, the worker's own
		// threads included, so the budget goes on top of the current count.
		n := uint64(userTaskCount(os.Getuid()) + l.MaxProcesses)
		if err := set("RLIMIT_NPROC", unix.RLIMIT_NPROC, n, n); err != nil {
			return err
		}
	}
	return nil
}

// waitExitedNoReap blocks until the process has exited but leaves it a
// zombie, so its process group ID cannot be reused while we signal it.
func waitExitedNoReap(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// groupSize counts the processes whose process group is pgid; with
// liveOnly, zombies (dead, waiting to be reaped) are not counted.
func groupSize(pgid int, liveOnly bool) int {
	n := 0
	forEachProc(func(pid int, stat []byte) {
		fields := statFields(stat)
		if len(fields) <= 2 {
			return
		}
		if g, err := strconv.Atoi(string(fields[2])); err != nil || g != pgid {
			return
		}
		if liveOnly && (string(fields[0]) == "Z" || string(fields[0]) == "X") {
			return
		}
		n++
	})
	return n
}

func userTaskCount(uid int) int {
	n := 0
	forEachProc(func(pid int, stat []byte) {
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+strconv.Itoa(pid), &st) != nil || int(st.Uid) != uid {
			return
		}
		// num_threads is the 20th field; fields here start at state (3rd).
		if fields := statFields(stat); len(fields) > 17 {
			if t, err := strconv.Atoi(string(fields[17])); err == nil {
				n += t
				return
			}
		}
		n++
	})
	return n
}

func forEachProc(fn func(pid int, stat []byte)) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		fn(pid, stat)
	}
}

// statFields splits /proc/<pid>/stat after the command name, which may
// contain spaces and parentheses: fields[0] is the state, [1] the ppid,
// [2] the process group.
func statFields(stat []byte) [][]byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(stat[i+1:])
}

func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(int(sig))
}

// parseProcStat reads the fields recovery needs from /proc/<pid>/stat:
// state (field 3), process group (5), session (6) and start time (22).
func parseProcStat(pid int, stat []byte) (procStat, bool) {
	f := statFields(stat)
	if len(f) <= 19 {
		return procStat{}, false
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	session, err2 := strconv.Atoi(string(f[3]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, state: string(f[0]), pgrp: pgrp, session: session, startTicks: start}, true
}

func readProcStat(pid int) (procStat, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	st, ok := parseProcStat(pid, stat)
	if !ok {
		return procStat{}, fmt.Errorf("/proc/%d/stat is not in the expected format", pid)
	}
	return st, nil
}

// currentBootID identifies this boot of the machine; empty if unknown.
var currentBootID = sync.OnceValue(func() string {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
})

// selfStat is the worker process's own identity.
var selfStat = sync.OnceValues(func() (procStat, error) { return readProcStat(os.Getpid()) })

// identify records how to recognise the process group led by pid later.
// It must run while the leader exists (before it can be reaped).
func identify(pid int) GroupIdentity {
	g := GroupIdentity{PGID: pid, BootID: currentBootID()}
	if st, err := readProcStat(pid); err == nil {
		g.LeaderStartTicks = st.startTicks
		g.SessionID = st.session
	}
	if self, err := selfStat(); err == nil {
		g.WorkerPID, g.WorkerStartTicks = self.pid, self.startTicks
	}
	return g
}

// liveGroupMembers lists the processes of group pgid that have not exited.
func liveGroupMembers(pgid int) []procStat {
	var out []procStat
	forEachProc(func(pid int, stat []byte) {
		if st, ok := parseProcStat(pid, stat); ok && st.pgrp == pgid && !st.exited() {
			out = append(out, st)
		}
	})
	return out
}

func ownerAlive(g *GroupIdentity) bool {
	if g.WorkerPID <= 0 {
		return false
	}
	st, err := readProcStat(g.WorkerPID)
	return err == nil && !st.exited() && st.startTicks == g.WorkerStartTicks
}

func reapLeftover(g *GroupIdentity, wait time.Duration) Leftover {
	if g == nil || g.PGID <= 1 || g.LeaderStartTicks == 0 || g.BootID == "" {
		return Leftover{Outcome: LeftoverUnverifiable}
	}
	boot := currentBootID()
	switch {
	case boot == "":
		return Leftover{Outcome: LeftoverUnverifiable}
	case g.BootID != boot:
		return Leftover{Outcome: LeftoverRebooted}
	case ownerAlive(g):
		return Leftover{Outcome: LeftoverOwnerAlive}
	}
	members := liveGroupMembers(g.PGID)
	if len(members) == 0 {
		return Leftover{Outcome: LeftoverGone}
	}
	if !groupIsOurs(g, members, os.Getpid(), syscall.Getpgrp()) {
		return Leftover{Outcome: LeftoverReused}
	}
	// While any member lives the group ID cannot be reused, so this
	// reaches the verified group. One signal: the kernel delivers it to
	// children forked concurrently too.
	lo := Leftover{Outcome: LeftoverKilled}
	for _, m := range members {
		lo.Killed = append(lo.Killed, m.pid)
	}
	_ = syscall.Kill(-g.PGID, syscall.SIGKILL)
	deadline := time.Now().Add(wait)
	for {
		left := liveGroupMembers(g.PGID)
		if len(left) == 0 {
			return lo
		}
		if time.Now().After(deadline) {
			for _, m := range left {
				lo.Survivors = append(lo.Survivors, m.pid)
			}
			return lo
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// userGateScript is the start gate of a command run as another user:
// once the worker opens it, the shell lowers its own limits with the
// ulimit builtin (no privilege needed, no exec) and fails the start if it
// cannot, then evaluates the line. Units are sh's: -f in 512-byte
// blocks, -v in KiB (dash, and bash in POSIX mode). Values are clamped to
// the worker's hard limits, which the shell inherited. RLIMIT_NPROC is
// left out (its flag differs between dash and bash, and root workers
// never had it): the process-count watchdog bounds the group.
func userGateScript(l Limits) (string, error) {
	var sets []string
	add := func(flag string, resource int, soft, hard uint64) error {
		var own unix.Rlimit
		if err := unix.Getrlimit(resource, &own); err != nil {
			return fmt.Errorf("reading the worker's limit %s: %w", flag, err)
		}
		hard = min(hard, own.Max)
		soft = min(soft, hard)
		// Soft first: a hard limit below the current soft one is refused.
		sets = append(sets, fmt.Sprintf("ulimit -S %s %d", flag, soft), fmt.Sprintf("ulimit -H %s %d", flag, hard))
		return nil
	}
	var err error
	if l.MaxFileBytes > 0 {
		blocks := max(uint64(l.MaxFileBytes)/512, 1)
		err = errors.Join(err, add("-f", unix.RLIMIT_FSIZE, blocks, blocks))
	}
	if l.CPUSeconds > 0 {
		err = errors.Join(err, add("-t", unix.RLIMIT_CPU, uint64(l.CPUSeconds), uint64(l.CPUSeconds)+5))
	}
	if l.MaxOpenFiles > 0 {
		err = errors.Join(err, add("-n", unix.RLIMIT_NOFILE, uint64(l.MaxOpenFiles), uint64(l.MaxOpenFiles)))
	}
	if l.MaxMemoryBytes > 0 {
		kib := max(uint64(l.MaxMemoryBytes)/1024, 1)
		err = errors.Join(err, add("-v", unix.RLIMIT_AS, kib, kib))
	}
	if err != nil {
		return "", err
	}
	limits := ""
	if len(sets) > 0 {
		limits = "{ " + strings.Join(sets, " && ") + "; } || exit 125; "
	}
	return `read -r fenix_gate <&3 || exit 125; exec 3<&-; unset fenix_gate; ` + limits + gateRun, nil
}
