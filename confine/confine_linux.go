//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Access rights, by the Landlock ABI that introduced them. Version 1
// cannot move a file between directories at all, so it is not used.
const (
	accessV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	accessV2 = accessV1 | unix.LANDLOCK_ACCESS_FS_REFER
	accessV3 = accessV2 | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	accessV5 = accessV3 | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	// fileAccess are the rights a rule on a file (not a directory) may
	// carry.
	fileAccess = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	readAccess = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR
)

// maxCachedRulesets bounds the rulesets kept, one per workspace.
const maxCachedRulesets = 64

// Confiner starts commands in a Landlock domain that keeps them out of a
// Policy's paths.
type Confiner struct {
	abi     int
	handled uint64
	paths   []protected
	// boundary is nil unless writes are confined too (Policy.Boundary).
	boundary *Boundary

	mu   sync.Mutex
	sets map[string]*ruleset // by workspace ("" for none)

	// noNewPrivs is set once restricting without no_new_privs failed
	// (the worker lacks CAP_SYS_ADMIN): every later thread sets it first.
	noNewPrivs atomic.Bool
}

// ruleset is one built Landlock ruleset and the directories whose
// entries it was cut from.
type ruleset struct {
	// mu is held for reading while a thread restricts itself with fd and
	// for writing while fd is closed.
	mu sync.RWMutex
	fd int
	// boundaryFD is the write boundary's ruleset, stacked on fd; -1 for
	// none.
	boundaryFD int
	leads      []dirStamp
	closed     bool
}

// dirStamp identifies a directory's entries as read: a new, removed or
// renamed entry changes its modification time.
type dirStamp struct {
	path      string
	dev, ino  uint64
	sec, nsec int64
}

// ABIVersion is the kernel's Landlock ABI version, 0 without Landlock.
func ABIVersion() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// New builds a Confiner for p. It fails with ErrUnavailable where the
// kernel has no usable Landlock, and with the path at fault where the
// rules cannot be cut (a leading directory the worker cannot list).
func New(p Policy) (*Confiner, error) {
	abi := ABIVersion()
	if abi < 2 {
		return nil, fmt.Errorf("%w: it reports ABI %d", ErrUnavailable, abi)
	}
	paths, err := p.normalize()
	if err != nil {
		return nil, err
	}
	c := &Confiner{abi: abi, handled: accessV2, paths: paths, boundary: p.Boundary, sets: map[string]*ruleset{}}
	switch {
	case abi >= 5:
		c.handled = accessV5
	case abi >= 3:
		c.handled = accessV3
	}
	// Built now, so a policy that cannot be cut fails at start rather than
	// on every command.
	if _, err := c.rulesetFor(""); err != nil {
		return nil, err
	}
	return c, nil
}

// ABI is the Landlock ABI version the Confiner uses.
func (c *Confiner) ABI() int { return c.abi }

// String describes the confinement for the worker's start log.
func (c *Confiner) String() string {
	var hidden, readOnly []string
	for _, p := range c.paths {
		if p.readOnly {
			readOnly = append(readOnly, p.path)
		} else {
			hidden = append(hidden, p.path)
		}
	}
	desc := fmt.Sprintf("Landlock ABI %d; hidden: %s; read-only: %s; no new entries in: %s",
		c.abi, orNone(hidden), orNone(readOnly), orNone(c.leadingDirs("")))
	if c.boundary != nil {
		desc += fmt.Sprintf("; writes only in the workspace, %s", strings.Join(c.boundary.writable(""), ", "))
	}
	return desc
}

func orNone(paths []string) string {
	if len(paths) == 0 {
		return "none"
	}
	return strings.Join(paths, ", ")
}

// Start starts cmd confined: on an OS thread of its own that restricts
// itself and starts the command, which inherits the domain. The worker
// and its other threads stay unconfined. workspace is the command's
// workspace: protected paths inside it are left to the workspace's own
// guards (a rule cut around them would stop the command creating files
// in its workspace), and a workspace inside a protected path is
// reachable.
//
// The thread lives until release is called, after the command was
// reaped: a parent-death signal (SysProcAttr.Pdeathsig) fires when the
// thread that started a process ends, not the process.
func (c *Confiner) Start(cmd *exec.Cmd, workspace string) (release func(), err error) {
	if workspace != "" {
		if real, err := filepath.EvalSymlinks(workspace); err == nil {
			workspace = real
		}
	}
	rs, err := c.rulesetFor(workspace)
	if err != nil {
		return nil, err
	}
	started := make(chan error, 1)
	reaped := make(chan struct{})
	go func() {
		// Never unlocked: the runtime ends the thread with the goroutine,
		// so no other goroutine ever runs in the domain.
		runtime.LockOSThread()
		if err := c.restrictThread(rs); err != nil {
			started <- err
			return
		}
		err := cmd.Start()
		started <- err
		if err == nil {
			<-reaped
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(reaped) }) }, nil
}

// restrictThread puts the calling thread into rs's domain.
func (c *Confiner) restrictThread(rs *ruleset) error {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	if rs.closed {
		return errors.New("confining the command: its ruleset was replaced while it started; try again")
	}
	if !c.noNewPrivs.Load() {
		err := restrictSelf(rs.fd)
		if err == nil {
			return restrictBoundary(rs)
		}
		if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("confining the command: landlock_restrict_self: %w", err)
		}
		c.noNewPrivs.Store(true)
	}
	// Without CAP_SYS_ADMIN a domain needs no_new_privs: setuid and
	// file-capability programs (sudo) then gain nothing in the command.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("confining the command: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := restrictSelf(rs.fd); err != nil {
		return fmt.Errorf("confining the command: landlock_restrict_self: %w", err)
	}
	return restrictBoundary(rs)
}

// restrictBoundary stacks the write boundary's domain, when there is one.
func restrictBoundary(rs *ruleset) error {
	if rs.boundaryFD < 0 {
		return nil
	}
	if err := restrictSelf(rs.boundaryFD); err != nil {
		return fmt.Errorf("confining the command's writes: landlock_restrict_self: %w", err)
	}
	return nil
}

func restrictSelf(fd int) error {
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// rulesetFor returns the current ruleset for workspace, building it
// again when a leading directory changed since it was cut.
func (c *Confiner) rulesetFor(workspace string) (*ruleset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rs, ok := c.sets[workspace]; ok {
		if fresh(rs.leads) {
			return rs, nil
		}
		delete(c.sets, workspace)
		go rs.close()
	}
	rs, err := c.build(workspace)
	if err != nil {
		return nil, err
	}
	if len(c.sets) >= maxCachedRulesets {
		for ws, old := range c.sets {
			delete(c.sets, ws)
			go old.close()
			break
		}
	}
	c.sets[workspace] = rs
	return rs, nil
}

// close releases the ruleset once no thread restricts itself with it.
func (rs *ruleset) close() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.closed {
		rs.closed = true
		unix.Close(rs.fd)
		if rs.boundaryFD >= 0 {
			unix.Close(rs.boundaryFD)
		}
	}
}

// Close releases every cached ruleset.
func (c *Confiner) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ws, rs := range c.sets {
		delete(c.sets, ws)
		rs.close()
	}
}

// guarded is the policy as it applies to one workspace.
func (c *Confiner) guarded(workspace string) []protected {
	var out []protected
	for _, p := range c.paths {
		if workspace != "" && within(p.path, workspace) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// leadingDirs are the directories on the way down to a protected path:
// commands may reach their entries but not add any.
func (c *Confiner) leadingDirs(workspace string) []string {
	set := map[string]bool{}
	for _, p := range c.guarded(workspace) {
		for dir := filepath.Dir(p.path); ; dir = filepath.Dir(dir) {
			set[dir] = true
			if dir == "/" {
				break
			}
		}
	}
	dirs := make([]string, 0, len(set))
	for d := range set {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

// build cuts a ruleset for workspace: full access to each entry of each
// leading directory that is neither protected nor leading itself, read
// access to read-only paths, listing everywhere, and full access to the
// workspace.
func (c *Confiner) build(workspace string) (*ruleset, error) {
	fd, err := createRuleset(c.handled)
	if err != nil {
		return nil, err
	}
	rs := &ruleset{fd: fd, boundaryFD: -1}
	ok := false
	defer func() {
		if !ok {
			unix.Close(rs.fd)
			if rs.boundaryFD >= 0 {
				unix.Close(rs.boundaryFD)
			}
		}
	}()
	if c.boundary != nil {
		if rs.boundaryFD, err = c.buildBoundary(workspace); err != nil {
			return nil, err
		}
	}
	guarded := c.guarded(workspace)
	kind := map[string]protected{}
	for _, p := range guarded {
		kind[p.path] = p
	}
	leads := c.leadingDirs(workspace)
	leading := map[string]bool{}
	for _, d := range leads {
		leading[d] = true
	}
	if err := c.addRule(rs.fd, "/", unix.LANDLOCK_ACCESS_FS_READ_DIR); err != nil {
		return nil, err
	}
	for _, dir := range leads {
		stamp, names, err := readLeading(dir)
		if err != nil {
			return nil, err
		}
		rs.leads = append(rs.leads, stamp)
		if p, ok := kind[dir]; ok && !p.readOnly {
			continue // a hidden directory that leads to another protected path
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			if _, protected := kind[path]; protected || leading[path] {
				continue
			}
			if err := c.addRule(rs.fd, path, c.handled); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range guarded {
		if p.readOnly {
			if err := c.addRule(rs.fd, p.path, readAccess); err != nil {
				return nil, err
			}
		}
	}
	if workspace != "" {
		if err := c.addRule(rs.fd, workspace, c.handled); err != nil {
			return nil, err
		}
	}
	ok = true
	return rs, nil
}

func createRuleset(handled uint64) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("confining commands: landlock_create_ruleset: %w", errno)
	}
	return int(fd), nil
}

// buildBoundary is the write boundary's ruleset: reading and running
// stay unhandled, so allowed everywhere; every other right only beneath
// Boundary.writable (a path not there yet gets no rule).
func (c *Confiner) buildBoundary(workspace string) (int, error) {
	writes := c.handled &^ readAccess
	fd, err := createRuleset(writes)
	if err != nil {
		return -1, err
	}
	for _, p := range c.boundary.writable(workspace) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if err := c.addRule(fd, p, writes); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// readLeading lists dir and stamps it. A directory that is not there
// has no entries; its creation changes the stamp.
func readLeading(dir string) (dirStamp, []string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return dirStamp{path: dir}, nil, nil
	}
	if err != nil {
		return dirStamp{}, nil, fmt.Errorf("confining commands: listing %s, a directory on the way to a protected path: %w", dir, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return dirStamp{}, nil, fmt.Errorf("confining commands: %s: %w", dir, err)
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return dirStamp{}, nil, fmt.Errorf("confining commands: listing %s, a directory on the way to a protected path: %w", dir, err)
	}
	slices.Sort(names)
	return stampOf(dir, &st), names, nil
}

func stampOf(dir string, st *unix.Stat_t) dirStamp {
	return dirStamp{path: dir, dev: st.Dev, ino: st.Ino, sec: st.Mtim.Sec, nsec: st.Mtim.Nsec}
}

// fresh is whether no leading directory changed since it was stamped.
func fresh(leads []dirStamp) bool {
	for _, want := range leads {
		var st unix.Stat_t
		err := unix.Stat(want.path, &st)
		switch {
		case errors.Is(err, unix.ENOENT):
			if want != (dirStamp{path: want.path}) {
				return false
			}
		case err != nil || stampOf(want.path, &st) != want:
			return false
		}
	}
	return true
}

// addRule grants access beneath path. Symlinks get no rule: what they
// lead to is judged where it is. An entry that vanished since the
// listing is skipped.
func (c *Confiner) addRule(rulesetFD int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("confining commands: opening %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("confining commands: %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
	default:
		access &= fileAccess
	}
	access &= c.handled
	if access == 0 {
		return nil
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("confining commands: a rule for %s: %w", path, errno)
	}
	return nil
}
