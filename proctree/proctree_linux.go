//go:build linux

package proctree

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cgroup is one process tree's cgroup.
type Cgroup struct {
	dir       string
	fd        int
	closeOnce sync.Once
}

// New makes a cgroup named prefix plus a random suffix under parent.
func New(parent, prefix string) (*Cgroup, error) {
	if parent == "" {
		return nil, ErrUnavailable
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	dir := filepath.Join(parent, prefix+owner()+"-"+hex.EncodeToString(id[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making cgroup %s: %w", dir, err)
	}
	fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("opening cgroup %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = syscall.Close(fd)
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill (Linux 5.14+): %w", dir, err)
	}
	return &Cgroup{dir: dir, fd: fd}, nil
}

// Dir is the cgroup's directory.
func (c *Cgroup) Dir() string { return c.dir }

// FD is the cgroup's open directory, to attach programs to.
func (c *Cgroup) FD() int { return c.fd }

// Attach makes the process attr starts begin its life in the cgroup.
func (c *Cgroup) Attach(attr *syscall.SysProcAttr) {
	attr.UseCgroupFD, attr.CgroupFD = true, c.fd
}

// Kill sends SIGKILL to every process in the cgroup.
func (c *Cgroup) Kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// Populated reports whether a live process is left in the cgroup (a
// zombie is not: it left at exit).
func (c *Cgroup) Populated() (bool, error) {
	events, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	return !bytes.Contains(events, []byte("populated 0")), nil
}

// Processes counts the processes in the cgroup.
func (c *Cgroup) Processes() (int, error) {
	procs, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return 0, err
	}
	return bytes.Count(procs, []byte{'\n'}), nil
}

// WaitEmpty polls until no live process is left, at most timeout.
func (c *Cgroup) WaitEmpty(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if populated, err := c.Populated(); err == nil && !populated {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// Close kills what is left and removes the cgroup once it is empty (a
// killed process leaves it when its parent, or init, reaps it). Only the
// first call does: the descriptor's number may be another file's after.
func (c *Cgroup) Close() {
	c.closeOnce.Do(func() {
		_ = c.Kill()
		_ = syscall.Close(c.fd)
		deadline := time.Now().Add(2 * time.Second)
		for os.Remove(c.dir) != nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// Prefixes of the run cgroups the worker makes, for the stale sweep.
const (
	PrefixHook    = "fenix-hook-"
	PrefixCommand = "fenix-cmd-"
	PrefixMCP     = "fenix-mcp-"
	PrefixBrowser = "fenix-browser-"
)

var parent = sync.OnceValue(func() string {
	dir := ownCgroupV2Dir()
	if dir == "" {
		return ""
	}
	killOrphans(dir)
	removeStale(dir, time.Now().Add(-staleAge))
	cg, err := New(dir, "fenix-probe-")
	if err != nil {
		return ""
	}
	defer cg.Close()
	probe := exec.Command("/bin/sh", "-c", "exit 0")
	probe.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cg.Attach(probe.SysProcAttr)
	if err := probe.Run(); err != nil {
		return ""
	}
	return dir
})

// owner names this worker process in its run cgroups' names: its PID and
// start time, which a later process with the same PID does not share.
var owner = sync.OnceValue(func() string { return ownerOf(os.Getpid()) })

// ownerOf is pid's owner name, "" when it is not running.
func ownerOf(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name may hold spaces and parentheses: the fields that
	// follow its last one are counted from the third.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return ""
	}
	fields := strings.Fields(string(raw[end+1:]))
	const startTime = 22 - 3
	if len(fields) <= startTime {
		return ""
	}
	return strconv.Itoa(pid) + "." + fields[startTime]
}

// orphaned are the prefixes of the run cgroups that end with the worker
// that made them: a hook's (the stage runs again on another worker), an
// MCP server's and a browser's. A command's may hold a service the
// command-run records recover (tools/procs).
var orphaned = []string{PrefixHook, PrefixMCP, PrefixBrowser}

// killOrphans ends the processes left in the hook, MCP server and browser
// cgroups of a worker process that is gone: a worker killed while a hook
// ran left the hook's processes running beside the stage's run on another
// worker, their side effects twice.
func killOrphans(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		i := slices.IndexFunc(orphaned, func(p string) bool { return strings.HasPrefix(name, p) })
		if !e.IsDir() || i < 0 {
			continue
		}
		tag, _, ok := strings.Cut(strings.TrimPrefix(name, orphaned[i]), "-")
		pid, _, isTag := strings.Cut(tag, ".")
		n, err := strconv.Atoi(pid)
		if !ok || !isTag || err != nil || ownerOf(n) == tag {
			continue
		}
		cg := filepath.Join(dir, name)
		_ = os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0)
		for deadline := time.Now().Add(time.Second); os.Remove(cg) != nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// removeStale removes the empty run cgroups a worker that died mid-run
// left under dir. A cgroup with processes cannot be removed, and one made
// before cutoff is no other worker's run about to start.
func removeStale(dir string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !slices.ContainsFunc([]string{PrefixHook, PrefixCommand, PrefixMCP, PrefixBrowser, "fenix-probe-"}, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}

// ownCgroupV2Dir finds this process's cgroup in the cgroup v2 hierarchy
// (a pure or a hybrid mount), "" when there is none.
func ownCgroupV2Dir() string {
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			if mount := cgroup2Mount(); mount != "" {
				return filepath.Join(mount, rel)
			}
		}
	}
	return ""
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, "" if not.
func cgroup2Mount() string {
	for _, m := range cgroupMounts() {
		if m.fstype == "cgroup2" {
			return m.dir
		}
	}
	return ""
}

// Mounts are the mount points of every cgroup hierarchy, v2 and v1 (a
// hybrid host mounts both), for what must not change them: a command that
// writes there can move itself out of its run's cgroup, or freeze or kill
// another run's (a hook's, the worker's own).
func Mounts() []string {
	var dirs []string
	for _, m := range cgroupMounts() {
		dirs = append(dirs, m.dir)
	}
	return dirs
}

type cgroupMount struct{ dir, fstype string }

// cgroupMounts reads the cgroup and cgroup2 mounts from mountinfo.
func cgroupMounts() []cgroupMount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var mounts []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields := strings.Fields(post)
		if len(fields) == 0 || (fields[0] != "cgroup2" && fields[0] != "cgroup") {
			continue
		}
		if pf := strings.Fields(pre); len(pf) >= 5 {
			mounts = append(mounts, cgroupMount{dir: unescapeMountinfo(pf[4]), fstype: fields[0]})
		}
	}
	return mounts
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
