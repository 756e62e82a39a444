//go:build linux

package proctree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// stallResources are the pressure files Stalled reads. I/O is left out:
// a process waiting on its own reads is stalled by that measure on an
// idle host, so it says little about what others do to it.
var stallResources = []string{"cpu.pressure", "memory.pressure"}

// Stalled is how long the cgroup's processes have been held up by others:
// the longest "some" stall total (PSI) of CPU and memory, the time in
// which at least one of its processes could have run but waited for a
// CPU or for memory to be reclaimed.
func (c *Cgroup) Stalled() (time.Duration, error) {
	var longest time.Duration
	for _, name := range stallResources {
		raw, err := os.ReadFile(filepath.Join(c.dir, name))
		if err != nil {
			return 0, err
		}
		d, err := someStallTotal(raw)
		if err != nil {
			return 0, fmt.Errorf("cgroup %s %s: %w", c.dir, name, err)
		}
		longest = max(longest, d)
	}
	return longest, nil
}

// someStallTotal reads the "some" line's total (µs) of a pressure file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
func someStallTotal(raw []byte) (time.Duration, error) {
	for line := range bytes.Lines(raw) {
		fields := bytes.Fields(line)
		if len(fields) == 0 || string(fields[0]) != "some" {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := bytes.CutPrefix(f, []byte("total=")); ok {
				us, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("total %q: %w", v, err)
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
	}
	return 0, fmt.Errorf("no \"some ... total=\" line in %q", raw)
}

// GroupStalled is how long the processes of process group pgid have
// waited, runnable, for a CPU: the run_delay of each of their threads
// (/proc/PID/task/TID/schedstat), summed; and whether one of them is
// runnable now. It is the measure where no cgroup could be made, and a
// lagging one: a thread's wait is added when it gets a CPU, so a thread
// waiting now is not counted yet. It misses processes that left the group
// (setsid) or ended, and stalls on memory.
func GroupStalled(pgid int) (held time.Duration, runnable bool, err error) {
	held, runnable, _, err = groupState(pgid)
	return held, runnable, err
}

// GroupStopped reports whether a thread of process group pgid is stopped
// (by SIGSTOP or a tracer): a hook something else stopped.
func GroupStopped(pgid int) bool {
	_, _, stopped, _ := groupState(pgid)
	return stopped
}

func groupState(pgid int) (held time.Duration, runnable, stopped bool, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false, false, err
	}
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pgrp := taskState(fmt.Sprintf("/proc/%d/stat", pid)); pgrp != pgid {
			continue
		}
		found = true
		d, r, s := processStalled(pid)
		held += d
		runnable, stopped = runnable || r, stopped || s
	}
	if !found {
		return 0, false, false, fmt.Errorf("process group %d has no process left", pgid)
	}
	return held, runnable, stopped, nil
}

// Stopped reports whether a thread of the cgroup's processes is stopped
// (by SIGSTOP or a tracer).
func (c *Cgroup) Stopped() bool {
	procs, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	for _, line := range bytes.Fields(procs) {
		if pid, err := strconv.Atoi(string(line)); err == nil {
			if _, _, stopped := processStalled(pid); stopped {
				return true
			}
		}
	}
	return false
}

// taskState is a process's or thread's state letter and process group
// from its stat file (the first and third fields after the command's
// closing parenthesis); pgrp is -1 if they cannot be read.
func taskState(statFile string) (state byte, pgrp int) {
	raw, err := os.ReadFile(statFile)
	if err != nil {
		return 0, -1
	}
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, -1
	}
	fields := bytes.Fields(raw[end+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, -1
	}
	pgrp, err = strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, -1
	}
	return fields[0][0], pgrp
}

// processStalled sums the run_delay (ns, the second field of schedstat)
// of pid's threads, and says whether one of them is runnable or stopped;
// threads that end meanwhile count 0.
func processStalled(pid int) (held time.Duration, runnable, stopped bool) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		switch state, _ := taskState(filepath.Join(task, "stat")); state {
		case 'R':
			runnable = true
		case 'T', 't':
			stopped = true
		}
		raw, err := os.ReadFile(filepath.Join(task, "schedstat"))
		if err != nil {
			continue
		}
		fields := bytes.Fields(raw)
		if len(fields) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(string(fields[1]), 10, 64); err == nil {
			held += time.Duration(ns)
		}
	}
	return held, runnable, stopped
}
