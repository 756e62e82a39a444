package procs

import (
	"log/slog"
	"time"
)

// ReasonWorkerLost marks a command or service whose worker died while it
// ran: a restarted worker found its record still "running", killed
// whatever was left of its process group and closed the record. Its exit
// status is unknown.
const ReasonWorkerLost = "worker_lost"

// GroupIdentity recognises a command's process group after the worker that
// supervised it is gone, without being fooled by PID reuse. It is written
// into the record of every running command and service before the command
// runs.
type GroupIdentity struct {
	// PGID is the process group ID: the shell's PID (it runs with Setpgid).
	PGID int `json:"pgid"`
	// LeaderStartTicks is the shell's start time, /proc/<pid>/stat field 22,
	// in clock ticks since boot. Every process the command started is at
	// least as young.
	LeaderStartTicks uint64 `json:"leader_start_ticks"`
	// SessionID is the session the group belongs to (the worker's).
	SessionID int `json:"session_id,omitempty"`
	// BootID is /proc/sys/kernel/random/boot_id: start times and PIDs
	// only mean something within one boot.
	BootID string `json:"boot_id"`
	// WorkerPID and WorkerStartTicks identify the worker process that
	// supervised the group. While that worker lives, the group is its
	// business, never a leftover.
	WorkerPID        int    `json:"worker_pid,omitempty"`
	WorkerStartTicks uint64 `json:"worker_start_ticks,omitempty"`
}

// Outcomes of looking for a leftover process group.
const (
	// LeftoverKilled: processes of the group were still running and were
	// killed with SIGKILL.
	LeftoverKilled = "killed"
	// LeftoverGone: nothing of the group was left.
	LeftoverGone = "gone"
	// LeftoverRebooted: the machine rebooted since; nothing can be left.
	LeftoverRebooted = "rebooted"
	// LeftoverReused: the group ID now belongs to unrelated processes
	// (PID reuse), which were left alone; the original group is gone.
	LeftoverReused = "pgid_reused"
	// LeftoverUnverifiable: the record lacks what is needed to recognise
	// the group safely, so nothing was killed.
	LeftoverUnverifiable = "unverifiable"
	// LeftoverOwnerAlive: the worker that started the group still runs (a
	// second registry on the same directory); the group is not a leftover
	// and its record is left as it is.
	LeftoverOwnerAlive = "owner_alive"
)

// Leftover is what a restarted worker found of one process group recorded
// as running by its predecessor.
type Leftover struct {
	Outcome string
	// Killed lists the PIDs that were sent SIGKILL.
	Killed []int
	// Survivors lists PIDs still alive after the kill (a process stuck in
	// uninterruptible sleep dies when its I/O returns).
	Survivors []int
}

// leftoverKillWait bounds the wait for a killed leftover group to die.
const leftoverKillWait = 2 * time.Second

// ReapLeftover kills what is left of a process group that a lost worker
// recorded as running, if it is verifiably that group: same boot, the
// recording worker gone, and every live member of the group at least as
// young as the recorded leader, in the recorded session, and the leader
// itself (if alive) started exactly when recorded. Otherwise it kills
// nothing.
func ReapLeftover(g *GroupIdentity) Leftover {
	return reapLeftover(g, leftoverKillWait)
}

// procStat is what recovery reads of one process from /proc/<pid>/stat.
type procStat struct {
	pid        int
	state      string
	pgrp       int
	session    int
	startTicks uint64
}

// exited reports a zombie (or a dying task): it runs nothing any more.
func (s procStat) exited() bool { return s.state == "Z" || s.state == "X" }

// groupIsOurs decides whether the live members of process group g.PGID
// are what is left of the recorded group. Members of the original group
// are the leader and what it started, so none is older than the leader,
// all share its session, and a live leader has exactly its recorded start
// time. A group ID can only be reused once every process of the old group
// is gone, and then the newcomers fail one of these checks unless the new
// group's leader died and left younger processes in the same session. The
// worker's own group is never ours.
func groupIsOurs(g *GroupIdentity, members []procStat, selfPID, selfPGID int) bool {
	if g.PGID == selfPGID {
		return false
	}
	for _, m := range members {
		switch {
		case m.pid == selfPID,
			m.startTicks < g.LeaderStartTicks,
			m.pid == g.PGID && m.startTicks != g.LeaderStartTicks,
			g.SessionID != 0 && m.session != g.SessionID:
			return false
		}
	}
	return true
}

// logLeftover logs what recovery did about one record.
func logLeftover(log *slog.Logger, kind, id string, g *GroupIdentity, lo Leftover) {
	attrs := []any{kind, id, "outcome", lo.Outcome}
	if g != nil {
		attrs = append(attrs, "pgid", g.PGID)
	}
	switch lo.Outcome {
	case LeftoverKilled:
		attrs = append(attrs, "killed_pids", lo.Killed)
		if len(lo.Survivors) > 0 {
			log.Error("process group left by a lost worker did not die after SIGKILL", append(attrs, "surviving_pids", lo.Survivors)...)
			return
		}
		log.Warn("killed a process group left running by a lost worker", attrs...)
	case LeftoverReused:
		log.Warn("process group ID of a lost worker's command now belongs to unrelated processes; not killed", attrs...)
	case LeftoverUnverifiable:
		log.Warn("cannot verify the process group of a lost worker's command; not killed", attrs...)
	case LeftoverOwnerAlive:
		log.Info("record is still running under a live worker; left alone", attrs...)
	case LeftoverRebooted:
		log.Info("record of a command that ran before a reboot closed as worker_lost", attrs...)
	default:
		log.Info("record of a lost worker's command closed as worker_lost; nothing was left running", attrs...)
	}
}
