//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// scoped is, where the kernel has them (ABI 6, Linux 6.12),
	// LANDLOCK_SCOPE_SIGNAL: a command can signal only its own
	// processes, not the worker, its hooks, or another command; and
	// LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET: it connects only to the
	// abstract unix sockets its own processes listen on, not to another
	// run's (a channel between two agents' commands) or a host service's
	// (a container runtime's shim sockets are abstract on some hosts).
	// Abstract sockets have no path, so no file rule reaches them.
	scoped uint64
	// signalsAnywhere is Policy.SignalsAnywhere; boundCaps is
	// Policy.BoundCapabilities.
	signalsAnywhere, boundCaps bool
	// heldByMounts is Policy.HeldByMounts.
	heldByMounts bool
	// rawDevicesIn is Policy.RawDevicesIn, absolute and real: a leading
	// directory whose raw device entries get no rule when one is cut.
	rawDevicesIn string
	// noPrlimitFilter, when set, is why commands go without the prlimit64
	// filter (see seccomp_linux.go).
	noPrlimitFilter error
	paths           []protected
	// workspaces are Policy.Workspaces hidden from the commands of the
	// workspaces they do not hold, absolute and real; sharedWorkspaces
	// those left shared, each with why (see isolatedWorkspaces).
	workspaces, sharedWorkspaces []string
	// shm, where Policy.PrivateIPC is applied, is the directory holding
	// each workspace's /dev/shm (see ipc_linux.go).
	shm string
	// reach is Policy.WorkspaceReach.
	reach func(workspace string) []string
	// writable is Policy.Writable, absolute and free of symlinks.
	writable []string
	// boundary is nil unless writes are confined too (Policy.Boundary).
	boundary *Boundary
	// network is Policy.Network; noNetns, when set, is why commands cannot
	// get a network namespace here (see netns_linux.go).
	network *Network
	noNetns error
	// noMountns, when set, is why commands cannot get a mount namespace
	// with read-only paths in their workspace (see mountns_linux.go).
	noMountns error
	netMu     sync.Mutex
	nets      map[string]*network // by workspace ("" for none)
	// noUnixFilter, when set, is why a network-sandboxed command may
	// still create Unix sockets although its Network does not allow them.
	noUnixFilter error
	// askers name the Askers of commands started with one
	// (StartCommand).
	askers askers
	// ports holds commands to proxies on the worker's loopback with
	// Landlock's TCP rules where there is no namespace (netport_linux.go);
	// noPorts is why that cannot be done either.
	ports   *portProxies
	noPorts error
	// fence refuses connections to Policy.Unreachable to every command's
	// cgroup; noFence is why it could not be loaded (then commands are
	// started without it, and the start log says so).
	fence   *Fence
	noFence error

	mu   sync.Mutex
	sets map[string]*ruleset // by workspace ("" for none)
	// stopSweep ends sweepStale (Close).
	stopSweep     chan struct{}
	stopSweepOnce sync.Once

	// launchers start the commands of a group in its shared domain
	// (group_linux.go).
	launchMu  sync.Mutex
	launchers map[launcherKey]*launcher

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
	// held are the paths a mount namespace holds instead of the rules
	// (Policy.HeldByMounts), as they were when the rules were cut.
	held []protected
	// reach is what the workspace reached beside it when the rules were
	// cut (Policy.WorkspaceReach); another answer cuts them again.
	reach  []string
	closed bool
	// starting counts the commands handed this ruleset that have not
	// restricted themselves yet, and dropped that it is no longer cached;
	// both under Confiner.mu. A dropped ruleset is closed when the last of
	// them is done with it, so a command never finds its ruleset closed
	// because another one was cut in the meantime.
	starting int
	dropped  bool
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
	var rawDevicesIn string
	if p.RawDevicesIn != "" {
		rawDevicesIn = filepath.Clean(p.RawDevicesIn)
		if real, err := filepath.EvalSymlinks(rawDevicesIn); err == nil {
			rawDevicesIn = real
		}
		p.Hidden = append(p.Hidden, RawDevices(rawDevicesIn)...)
	}
	paths, err := p.normalize()
	if err != nil {
		return nil, err
	}
	var writable []string
	for _, w := range p.Writable {
		abs, err := filepath.Abs(w)
		if err != nil {
			return nil, fmt.Errorf("writable path %q: %w", w, err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		writable = append(writable, abs)
	}
	workspaces, shared := isolatedWorkspaces(p.Workspaces, paths)
	c := &Confiner{abi: abi, handled: accessV2, paths: paths, workspaces: workspaces, sharedWorkspaces: shared, reach: p.WorkspaceReach, writable: writable, boundary: p.Boundary, signalsAnywhere: p.SignalsAnywhere, boundCaps: p.BoundCapabilities, heldByMounts: p.HeldByMounts, rawDevicesIn: rawDevicesIn, sets: map[string]*ruleset{}, nets: map[string]*network{}}
	switch {
	case abi >= 5:
		c.handled = accessV5
	case abi >= 3:
		c.handled = accessV3
	}
	if abi >= 6 {
		c.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		if !p.SignalsAnywhere {
			c.scoped |= unix.LANDLOCK_SCOPE_SIGNAL
		}
	}
	c.noPrlimitFilter = probeCommandFilter()
	c.noMountns = probeMountns()
	if p.PrivateIPC && c.noMountns == nil {
		if c.shm, err = sharedMemoryBase(); err != nil {
			return nil, err
		}
	}
	if p.Network != nil {
		c.network = p.Network
		if len(p.Unreachable) > 0 {
			fenced := *p.Network
			fenced.Dial = fenceDial(p.Network.Dial, p.Unreachable)
			c.network = &fenced
		}
		c.noNetns = netnsProbe()
		if _, ok := socketCallsFor(runtime.GOARCH); !ok {
			c.noUnixFilter = fmt.Errorf("no socket filter for %s", runtime.GOARCH)
		} else if c.noPrlimitFilter != nil {
			c.noUnixFilter = c.noPrlimitFilter
		}
		if c.noNetns != nil {
			switch {
			case abi < 4:
				c.noPorts = fmt.Errorf("the kernel's Landlock ABI %d has no TCP rules (ABI 4, Linux 6.7)", abi)
			case c.noUnixFilter != nil:
				c.noPorts = fmt.Errorf("without a socket filter UDP would go anywhere: %w", c.noUnixFilter)
			default:
				c.ports, c.noPorts = newPortProxies(p.Network, c.identify)
			}
		}
	}
	if len(p.Unreachable) > 0 {
		c.fence, c.noFence = NewFence(p.Unreachable)
	}
	// Built now, so a policy that cannot be cut fails at start rather than
	// on every command.
	rs, err := c.rulesetFor("")
	if err != nil {
		c.Close()
		return nil, err
	}
	c.doneWith(rs)
	c.stopSweep = make(chan struct{})
	go c.sweepStale(c.stopSweep, sweepInterval)
	return c, nil
}

// sweepInterval is how often sweepStale looks for rulesets cut from
// directories that changed since (a variable for tests).
var sweepInterval = 10 * time.Second

// sweepStale drops the cached rulesets whose leading directories changed,
// until stop is closed. A rule holds its file: a file deleted from a
// leading directory (a big one removed from the home to free a full disk)
// kept its space while a ruleset cut before the deletion was cached, on
// an idle worker until the next command.
func (c *Confiner) sweepStale(stop chan struct{}, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		for ws, rs := range c.sets {
			if !fresh(rs.leads) {
				delete(c.sets, ws)
				c.dropLocked(rs)
			}
		}
		c.mu.Unlock()
	}
}

// ABI is the Landlock ABI version the Confiner uses.
func (c *Confiner) ABI() int { return c.abi }

// SignalsScoped reports whether a command may signal only the processes
// it started (Landlock ABI 6).
func (c *Confiner) SignalsScoped() bool { return c.scoped&unix.LANDLOCK_SCOPE_SIGNAL != 0 }

// SocketsScoped reports whether a command may connect only to the
// abstract unix sockets of its own domain (ABI 6).
func (c *Confiner) SocketsScoped() bool {
	return c.scoped&unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET != 0
}

// NetworkUnavailable is why the Policy's Network cannot be applied, or
// nil when it can (or there is none): commands then reach the network as
// the worker does.
func (c *Confiner) NetworkUnavailable() error {
	if c.network == nil || c.noNetns == nil || c.ports != nil {
		return nil
	}
	return fmt.Errorf("%w; nor can Landlock hold commands to the proxies: %w", c.noNetns, c.noPorts)
}

// ReadOnlyUnavailable is why CommandOptions.ReadOnly cannot be held to
// here, or nil when it can.
func (c *Confiner) ReadOnlyUnavailable() error { return c.noMountns }

// NetworkPerWorkspace reports whether commands run in their workspace's
// network namespace: a service's port is then its workspace's, not the
// host's.
func (c *Confiner) NetworkPerWorkspace() bool {
	return c != nil && c.network != nil && c.noNetns == nil
}

// netnsProbe is probeNetns; tests replace it to take the Landlock-ports
// way on a worker that could make namespaces.
var netnsProbe = probeNetns

// PrlimitFiltered reports whether a command may set only its own resource
// limits (the seccomp filter of seccomp_linux.go).
func (c *Confiner) PrlimitFiltered() bool { return c.noPrlimitFilter == nil }

// Start starts cmd confined: on an OS thread of its own that restricts
// itself and starts the command, which inherits the domain. The worker
// and its other threads stay unconfined. workspace is the command's
// workspace: a Boundary's deny lists are left out inside it, and a
// workspace inside a protected path is reachable.
//
// The thread lives until release is called, after the command was
// reaped: a parent-death signal (SysProcAttr.Pdeathsig) fires when the
// thread that started a process ends, not the process.
func (c *Confiner) Start(cmd *exec.Cmd, workspace string) (release func(), err error) {
	return c.start(cmd, workspace, "", nil)
}

// start is Start with the command's proxy credential and read-only paths
// (see StartCommand).
func (c *Confiner) start(cmd *exec.Cmd, workspace, credential string, readOnly []string) (release func(), err error) {
	if err := c.fenceOff(cmd); err != nil {
		return nil, err
	}
	rs, netns, err := c.domainFor(workspace)
	if err != nil {
		return nil, err
	}
	started := make(chan error, 1)
	reaped := make(chan struct{})
	go func() {
		// Never unlocked: the runtime ends the thread with the goroutine,
		// so no other goroutine ever runs in the domain (or in the
		// workspace's network namespace).
		runtime.LockOSThread()
		err := c.confineThread(rs, netns, realWorkspace(workspace), readOnly)
		if err == nil {
			c.pointAtProxies(cmd, netns, credential)
			err = cmd.Start()
		}
		started <- err
		if err == nil {
			<-reaped
		}
	}()
	if err := <-started; err != nil {
		if netns != nil {
			c.releaseNetwork(netns)
		}
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(reaped)
			if netns != nil {
				c.releaseNetwork(netns)
			}
		})
	}, nil
}

// realWorkspace is workspace free of symlinks, as rules are cut for it.
func realWorkspace(workspace string) string {
	if workspace != "" {
		if real, err := filepath.EvalSymlinks(workspace); err == nil {
			return real
		}
	}
	return workspace
}

// FenceUnavailable is why Policy.Unreachable could not be fenced off
// here (nil if it was, or there was none).
func (c *Confiner) FenceUnavailable() error { return c.noFence }

// fenceOff attaches the fence to the cgroup cmd starts in. A command
// without a cgroup is refused: nothing else would keep it from the
// unreachable endpoints.
func (c *Confiner) fenceOff(cmd *exec.Cmd) error {
	if c.fence == nil {
		return nil
	}
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.UseCgroupFD {
		return fmt.Errorf("fencing off %s: %s starts without a cgroup of its own", c.fence, cmd.Path)
	}
	return c.fence.Apply(cmd.SysProcAttr.CgroupFD)
}

// domainFor returns what a command in workspace is confined with: the
// current ruleset (one more use of it; see rulesetFor) and, with a
// network sandbox, the workspace's namespace (one more user; see
// networkFor).
func (c *Confiner) domainFor(workspace string) (*ruleset, *network, error) {
	workspace = realWorkspace(workspace)
	rs, err := c.rulesetFor(workspace)
	if err != nil {
		return nil, nil, err
	}
	if c.network == nil || c.noNetns != nil {
		return rs, nil, nil
	}
	netns, err := c.networkFor(workspace)
	if err != nil {
		c.doneWith(rs)
		return nil, nil, err
	}
	return rs, netns, nil
}

// confineThread puts the calling (locked, single-use) thread into rs's
// domain, when n is not nil n's network namespace, and where it can a
// mount namespace in which readOnly (relative to workspace) is read-only;
// it ends the thread's use of rs (see rulesetFor) either way.
func (c *Confiner) confineThread(rs *ruleset, n *network, workspace string, readOnly []string) error {
	var err error
	if n != nil {
		err = n.join()
	}
	if err == nil && c.noMountns == nil {
		// Before the domain, which may not mount.
		var entered bool
		if c.shm != "" {
			entered, err = true, enterPrivateIPC(c.shmDir(workspace))
		}
		if err == nil {
			entered, err = holdPaths(rs.held, c.writable, entered)
		}
		if err == nil {
			denyRead, denyWrite := c.boundary.inWorkspace(workspace)
			err = holdInWorkspace(workspace, append(slices.Clone(readOnly), denyWrite...), denyRead, entered)
		}
	}
	if err == nil {
		err = c.restrictThread(rs)
	}
	c.doneWith(rs)
	if err == nil && c.boundCaps {
		err = boundCapabilities()
	}
	return err
}

// pointAtProxies sets cmd's environment to reach the proxies of its
// namespace n, or of the worker's loopback in ports mode.
func (c *Confiner) pointAtProxies(cmd *exec.Cmd, n *network, credential string) {
	switch {
	case n != nil:
		n.point(cmd, credential)
	case c.ports != nil:
		c.ports.point(cmd, credential)
	}
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
			return c.restrictRest(rs)
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
	return c.restrictRest(rs)
}

// restrictRest follows the protection domain: the write boundary, the
// network's domain and socket filter (netns_linux.go, netport_linux.go),
// then the prlimit64 filter (see seccomp_linux.go) where the kernel takes
// it.
func (c *Confiner) restrictRest(rs *ruleset) error {
	if err := restrictBoundary(rs); err != nil {
		return err
	}
	switch {
	case c.network != nil && c.noNetns == nil:
		if !c.network.UnixSockets && c.noUnixFilter == nil {
			if err := filterSockets(socketRefusals{unix: true}); err != nil {
				return fmt.Errorf("confining the command's network: %w", err)
			}
		}
	case c.ports != nil:
		if err := restrictSelf(c.ports.rulesetFD); err != nil {
			return fmt.Errorf("confining the command's TCP: landlock_restrict_self: %w", err)
		}
		if err := filterSockets(socketRefusals{unix: !c.network.UnixSockets, datagram: true}); err != nil {
			return fmt.Errorf("confining the command's network: %w", err)
		}
	}
	if !c.PrlimitFiltered() {
		return nil
	}
	if err := filterCommand(); err != nil {
		return fmt.Errorf("confining the command: %w", err)
	}
	return nil
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
// again when a leading directory changed since it was cut, and counts
// one more command starting with it: call doneWith once that command
// restricted itself (or gave up).
func (c *Confiner) rulesetFor(workspace string) (*ruleset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rs, ok := c.sets[workspace]; ok {
		if fresh(rs.leads) && slices.Equal(rs.reach, c.reachOf(workspace)) {
			rs.starting++
			return rs, nil
		}
		delete(c.sets, workspace)
		c.dropLocked(rs)
	}
	rs, err := c.build(workspace)
	if err != nil {
		return nil, err
	}
	if len(c.sets) >= maxCachedRulesets {
		for ws, old := range c.sets {
			delete(c.sets, ws)
			c.dropLocked(old)
			break
		}
	}
	c.sets[workspace] = rs
	rs.starting++
	return rs, nil
}

// doneWith ends a command's use of rs (see rulesetFor).
func (c *Confiner) doneWith(rs *ruleset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs.starting--
	if rs.dropped && rs.starting == 0 {
		go rs.close()
	}
}

// dropLocked takes rs out of use: closed now if no command is starting
// with it, else by the last one's doneWith.
func (c *Confiner) dropLocked(rs *ruleset) {
	rs.dropped = true
	if rs.starting == 0 {
		go rs.close()
	}
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

// Close releases every cached ruleset and network namespace.
func (c *Confiner) Close() {
	if c.stopSweep != nil {
		c.stopSweepOnce.Do(func() { close(c.stopSweep) })
	}
	c.closeNetworks()
	if c.ports != nil {
		c.ports.close()
	}
	if c.fence != nil {
		c.fence.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for ws, rs := range c.sets {
		delete(c.sets, ws)
		rs.close()
	}
}
