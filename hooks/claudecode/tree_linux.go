//go:build linux

package claudecode

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// processTree is everything a hook run starts, however it detaches: a
// grandchild that calls setsid leaves the process group but not the
// tree. Each run gets its own cgroup v2 when the worker's cgroup is
// writable (the process is cloned straight into it, and cgroup.kill ends
// every member at once, without a race against forks); otherwise every
// process of the run carries a marker variable, FENIX_HOOK_RUN, and the
// kill scans /proc for it. The fallback misses a descendant that clears
// its environment (env -i) and setsid()s; run the worker with a writable
// cgroup v2 (a delegated systemd unit or container) to close that.
type processTree struct {
	marker    string
	cgroupDir string
	cgroupFD  int
	cmd       *exec.Cmd
}

// hookRunEnv names the marker variable of a hook run's processes.
const hookRunEnv = "FENIX_HOOK_RUN"

// newProcessTree prepares cmd (whose Env is set) to run as its own tree:
// its own process group, its own cgroup when one can be made, the marker.
// close kills what is left and releases the cgroup.
func newProcessTree(cmd *exec.Cmd) *processTree {
	t := newTree(cmd)
	cmd.Env = append(cmd.Env, hookRunEnv+"="+t.marker)
	cmd.Cancel = func() error { t.kill(); return nil }
	if base := hookCgroupParent(); base != "" {
		t.joinCgroup(base)
	}
	return t
}

func newTree(cmd *exec.Cmd) *processTree {
	var id [8]byte
	_, _ = rand.Read(id[:])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &processTree{marker: hex.EncodeToString(id[:]), cgroupFD: -1, cmd: cmd}
}

// joinCgroup makes the run's cgroup under base and clones cmd into it;
// it reports whether it could.
func (t *processTree) joinCgroup(base string) bool {
	dir := filepath.Join(base, "fenix-hook-"+t.marker)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return false
	}
	fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = syscall.Close(fd)
		_ = os.Remove(dir)
		return false
	}
	t.cgroupDir, t.cgroupFD = dir, fd
	t.cmd.SysProcAttr.UseCgroupFD, t.cmd.SysProcAttr.CgroupFD = true, fd
	return true
}

// mechanism names how the tree is killed, for tests and logs.
func (t *processTree) mechanism() string {
	if t.cgroupDir != "" {
		return "cgroup"
	}
	return "marker"
}

// kill ends every process of the run: the cgroup's members, else the
// process group and every process carrying the marker.
func (t *processTree) kill() {
	if t.cgroupDir != "" {
		if err := os.WriteFile(filepath.Join(t.cgroupDir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	if t.cmd.Process != nil {
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
	killMarked(hookRunEnv + "=" + t.marker)
}

// close kills what is left and removes the run's cgroup once it is empty
// (a killed process leaves it when its parent, or init, reaps it).
func (t *processTree) close() {
	t.kill()
	if t.cgroupDir == "" {
		return
	}
	_ = syscall.Close(t.cgroupFD)
	deadline := time.Now().Add(2 * time.Second)
	for os.Remove(t.cgroupDir) != nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// killMarked SIGKILLs every process whose environment holds marker.
// Processes of other users cannot be read and are not ours.
func killMarked(marker string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	want := []byte(marker)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}

// hookCgroupParent is the worker's own cgroup v2 directory when hook runs
// can be placed below it, else "". Checked once, by cloning a trivial
// process into a cgroup of its own.
var hookCgroupParent = sync.OnceValue(func() string {
	dir := ownCgroupV2Dir()
	if dir == "" {
		return ""
	}
	removeStaleCgroups(dir, time.Now().Add(-time.Minute))
	probe := exec.Command("/bin/sh", "-c", "exit 0")
	t := newTree(probe)
	if !t.joinCgroup(dir) {
		return ""
	}
	defer t.close()
	if err := probe.Run(); err != nil {
		return ""
	}
	return dir
})

// removeStaleCgroups removes the empty run cgroups a worker that died
// mid-hook left under dir. A cgroup with processes cannot be removed, and
// one made before cutoff is no other worker's run about to start.
func removeStaleCgroups(dir string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "fenix-hook-") {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
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
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fields := strings.Fields(post); len(fields) > 0 && fields[0] == "cgroup2" {
			if pf := strings.Fields(pre); len(pf) >= 5 {
				return pf[4]
			}
		}
	}
	return ""
}
