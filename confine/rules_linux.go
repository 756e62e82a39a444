//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How a ruleset is cut around the protected paths (see the package
// comment), and the write boundary beside it.

// dirStamp identifies a directory's entries as read: a new, removed or
// renamed entry changes its modification time.
type dirStamp struct {
	path      string
	dev, ino  uint64
	sec, nsec int64
}

// guarded is the policy as it applies to one workspace: cut are the
// paths the rules are cut around, held those a mount namespace holds
// instead (Policy.HeldByMounts; see holdsByMount).
func (c *Confiner) guarded(workspace string) (cut, held []protected) {
	var rest []protected
	for _, p := range c.paths {
		switch {
		case p.outsideWorkspace && workspace != "" && within(p.path, workspace):
		case c.holdsByMount(p, workspace):
			held = append(held, p)
		default:
			rest = append(rest, p)
		}
	}
	// One in a held path is held with it (audit.db before its first row,
	// in the hidden data directory), unless it is hidden in a read-only
	// one.
	for _, p := range rest {
		if !slices.ContainsFunc(held, func(h protected) bool { return within(p.path, h.path) && (!h.readOnly || p.readOnly) }) {
			cut = append(cut, p)
		}
	}
	return append(cut, c.otherWorkspaces(workspace)...), held
}

// otherWorkspaces are the workspace directories (Policy.Workspaces)
// hidden from a command in workspace: those that do not hold it. The
// workspace in one gets its own rule (build), as does what the command
// reaches beside it (Policy.WorkspaceReach).
func (c *Confiner) otherWorkspaces(workspace string) []protected {
	var out []protected
	for _, dir := range c.workspaces {
		if workspace == "" || !within(dir, workspace) {
			out = append(out, protected{path: dir})
		}
	}
	return out
}

// holdsByMount is whether p is held in a process's mount namespace rather
// than cut out of the rules (Policy.HeldByMounts): a file or directory
// that exists, outside the kernel's filesystems, not holding the
// workspace, nor a Writable path unless it is hidden (holdPaths binds
// the Writable path back into what veils it).
func (c *Confiner) holdsByMount(p protected, workspace string) bool {
	if !c.heldByMounts || c.noMountns != nil || p.outsideWorkspace {
		return false
	}
	for _, kernel := range []string{"/proc", "/sys", c.rawDevicesIn} {
		if kernel != "" && within(p.path, kernel) {
			return false
		}
	}
	if workspace != "" && within(workspace, p.path) {
		return false
	}
	for _, w := range c.writable {
		if within(w, p.path) && (p.readOnly || w == p.path) {
			return false
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(p.path, &st); err != nil {
		return false
	}
	kind := st.Mode & unix.S_IFMT
	return kind == unix.S_IFDIR || kind == unix.S_IFREG
}

// leadingDirs are the directories on the way down to a path the rules
// are cut around (cut): commands may reach their entries but not add any.
func (c *Confiner) leadingDirs(cut []protected) []string {
	set := map[string]bool{}
	var under []string
	for _, p := range cut {
		under = append(under, filepath.Dir(p.path))
	}
	if c.rawDevicesIn != "" {
		// Leading even with no raw device in it yet: a disk attached
		// later must find no rule on the directory to inherit.
		under = append(under, c.rawDevicesIn)
	}
	for _, first := range under {
		for dir := first; ; dir = filepath.Dir(dir) {
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
	fd, err := createRuleset(c.handled, c.scoped)
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
	guarded, held := c.guarded(workspace)
	kind := map[string]protected{}
	for _, p := range guarded {
		kind[p.path] = p
	}
	// A held path that goes (or is replaced) rebuilds the rules: it is cut
	// out of them from then on.
	rs.held = held
	for _, p := range held {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Dir(p.path), &st); err != nil {
			return nil, fmt.Errorf("confining commands: %s: %w", filepath.Dir(p.path), err)
		}
		rs.leads = append(rs.leads, stampOf(filepath.Dir(p.path), &st))
	}
	leads := c.leadingDirs(guarded)
	leading := map[string]bool{}
	for _, d := range leads {
		leading[d] = true
	}
	// With every path held by mounts no directory leads to one that is
	// cut out of the rules: the whole tree is reached.
	rootAccess := uint64(unix.LANDLOCK_ACCESS_FS_READ_DIR)
	if len(leads) == 0 {
		rootAccess = c.handled
	}
	if err := c.addRule(rs.fd, "/", rootAccess); err != nil {
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
		// The entries of a directory in a read-only path (one that leads
		// to a hidden path inside it, as the data directory in a
		// read-only home) are read-only too.
		access := c.handled
		if readOnlyAt(guarded, dir) {
			access = readAccess
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			if _, protected := kind[path]; protected || leading[path] || c.isRawDevice(path) {
				continue
			}
			if err := c.addRule(rs.fd, path, access); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range guarded {
		// A read-only path that leads to a hidden one gets no rule of its
		// own, which would uncover the hidden path for reading: its
		// entries got theirs above.
		if p.readOnly && !leading[p.path] {
			if err := c.addRule(rs.fd, p.path, readAccess); err != nil {
				return nil, err
			}
		}
	}
	// A workspace that holds a protected path is a leading directory: its
	// entries got their rules above, and one on it would uncover the path.
	if workspace != "" && !leading[workspace] {
		if err := c.addRule(rs.fd, workspace, c.handled); err != nil {
			return nil, err
		}
	}
	// Policy.Writable, what the workspace reaches beside it in a hidden
	// workspace directory (a linked worktree's repository), and a
	// Boundary's writable path in a read-only one (allowWrite "~/.npm" in
	// a read-only home), are reached fully, unless one is or holds a
	// protected path.
	rs.reach = c.reachOf(workspace)
	reachable := append(slices.Clone(c.writable), rs.reach...)
	if c.shm != "" {
		reachable = append(reachable, c.shmDir(workspace)) // its /dev/shm (ipc_linux.go)
	}
	if c.boundary != nil {
		for _, w := range c.boundary.writable(workspace) {
			if real, err := filepath.EvalSymlinks(w); err == nil {
				w = real
			}
			if readOnlyAt(guarded, w) {
				reachable = append(reachable, w)
			}
		}
	}
	for _, w := range reachable {
		if _, protected := kind[w]; protected || leading[w] {
			continue
		}
		if err := c.addRule(rs.fd, w, c.handled); err != nil {
			return nil, err
		}
	}
	ok = true
	return rs, nil
}

// reachOf is what a command in workspace reaches besides it in a hidden
// workspace directory (Policy.WorkspaceReach), absolute and real.
func (c *Confiner) reachOf(workspace string) []string {
	if c.reach == nil || workspace == "" || len(c.workspaces) == 0 {
		return nil
	}
	var out []string
	for _, p := range c.reach(workspace) {
		if real, err := filepath.EvalSymlinks(p); err == nil && filepath.IsAbs(real) && real != "/" {
			out = append(out, real)
		}
	}
	return out
}

// readOnlyAt is whether dir is in one of guarded's read-only paths.
func readOnlyAt(guarded []protected, dir string) bool {
	for _, p := range guarded {
		if p.readOnly && within(dir, p.path) {
			return true
		}
	}
	return false
}

func createRuleset(handled, scoped uint64) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled, Scoped: scoped}
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
	// Unscoped: the protection domain it is stacked on scopes signals.
	fd, err := createRuleset(writes, 0)
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

// isRawDevice is whether path, an entry of a leading directory, is a raw
// disk or memory node under Policy.RawDevicesIn: one attached since the
// worker started gets no rule either.
func (c *Confiner) isRawDevice(path string) bool {
	if c.rawDevicesIn == "" || !strings.HasPrefix(path, c.rawDevicesIn+"/") {
		return false
	}
	info, err := os.Lstat(path)
	return err == nil && rawDevice(info.Name(), info.Mode())
}
