// Package confine keeps the commands an agent runs (exec_command,
// process_exec) out of the worker's own files with Landlock.
//
// A command runs as the worker's user unless FENIX_COMMAND_USER names
// another, and that user owns the worker's data directory: the pinned
// copies of the hook scripts that govern the agent, the audit log, the
// transcripts Stop hooks read, the command-run records. Without
// confinement `chmod u+w` and a rewrite of a pinned guard script is all
// it takes to switch the guard off for the next call. File modes cannot
// stop the owner; a Landlock domain can, and neither root nor the owner
// can leave one.
//
// Landlock only grants: a ruleset lists the hierarchies a process may
// reach and everything else is refused. So the rules are cut around the
// protected paths: every entry of each directory on the way down to a
// protected path gets full access, except the protected path itself and
// the directories that lead to another one. What that costs is creating
// a new entry directly in one of those leading directories (for the
// default data directory ~/.local/state/fenix: in /, the home directory,
// ~/.local and ~/.local/state; commands see their workspace as HOME).
// Existing entries there are reached as before, and an entry added later
// is picked up by the next command, since a ruleset is rebuilt whenever
// one of the leading directories changed.
//
// Each command gets its domain on an OS thread of its own: the thread
// restricts itself, starts the command, which inherits the domain, and
// dies. The worker and its other threads stay unconfined.
package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenixrt/fenix/netguard"
)

// Mode is FENIX_COMMAND_CONFINEMENT.
type Mode string

// Modes.
const (
	// ModeAuto confines commands where the kernel has Landlock (ABI 2,
	// Linux 5.19, or later) and runs them unconfined, with a warning at
	// start, where it has not.
	ModeAuto Mode = "auto"
	// ModeRequire refuses to start a worker that cannot confine commands.
	ModeRequire Mode = "require"
	// ModeOff runs commands unconfined.
	ModeOff Mode = "off"
)

// ParseMode reads a mode; "" is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeRequire, ModeOff:
		return m, nil
	default:
		return "", fmt.Errorf("command confinement %q: use auto, require or off", s)
	}
}

// ErrUnavailable is returned by New where the kernel cannot confine
// commands.
var ErrUnavailable = errors.New("the kernel has no usable Landlock (ABI 2 or later, Linux 5.19+)")

// CommandOptions are how one of an agent's commands starts (see
// Confiner.StartCommand).
type CommandOptions struct {
	// Workspace is the command's workspace, which it always reaches.
	Workspace string
	// Group is the command's signal group (see Confiner.StartInGroup).
	Group string
	// Ask, when set, is asked about a host the network policy neither
	// allows nor denies, instead of refusing it.
	Ask netguard.Asker
	// ReadOnly are paths, relative to Workspace or absolute (a linked
	// worktree's repository), that the command reads but cannot write,
	// replace or remove — the project's hook settings and scripts, its
	// MCP configuration, git's hooks and config — where the worker may
	// give it a mount namespace of its own (a root worker; see
	// Confiner.ReadOnlyUnavailable). Elsewhere they are only as Policy
	// protects them.
	ReadOnly []string
}

// Policy names what commands may not reach. Its paths are protected
// also inside a command's workspace (the command then cannot add entries
// to the workspace's root: a workspace that holds the worker's data
// directory pays for it); a Boundary's deny lists apply outside it only.
type Policy struct {
	// Hidden paths are neither read, written nor executed by a command:
	// the worker's data directory, key files. Their names can be listed.
	Hidden []string
	// ReadOnly paths are read and executed, never written (the skills a
	// command may run, the worker's home), everything in them included,
	// except a hidden path in one, the command's workspace and a
	// Boundary's writable paths.
	ReadOnly []string
	// Writable paths are reached fully even inside a hidden or read-only
	// path, as the workspace is (a hook's plugin data directory in the
	// hidden data directory), unless one holds a protected path.
	Writable []string
	// Boundary, when set, also confines every write of a command to its
	// workspace and the Boundary's paths (Claude Code's sandbox.enabled).
	Boundary *Boundary
	// SignalsAnywhere lets a command signal every process its user may,
	// as without confinement, instead of only the processes of its group
	// (see Confiner.StartInGroup; where the kernel scopes signals): for
	// tools that signal a process another conversation started. A command
	// can then also kill a running hook, which then fails closed (see the
	// hook runner), and a hook confined with it (FENIX_HOOK_SIGNALS=any)
	// the worker.
	SignalsAnywhere bool
	// BoundCapabilities starts commands with only the capabilities a
	// container runtime leaves its root (less CAP_MKNOD; see
	// keptCapabilities): for commands that run as root, whom the others
	// — kernel modules, reboot, the clock, network administration, the
	// powers of CAP_SYS_ADMIN, raw I/O, raising their own limits — would
	// take around every domain.
	BoundCapabilities bool
	// RawDevicesIn, when set, is a device directory (/dev) whose raw disk
	// and memory nodes (RawDevices) are hidden: those there when a
	// command's rules are cut, so a disk attached after the worker
	// started is hidden too (and one attached later still has no rule).
	RawDevicesIn string
	// Unreachable are destinations no command may connect to, whatever
	// its network: the Temporal frontend the worker uses (see Fence). A
	// command started with a cgroup (SysProcAttr.UseCgroupFD) gets the
	// fence on it before it starts; one without is refused, so leave
	// this empty where no cgroup can be made.
	Unreachable []Endpoint
	// HeldByMounts holds the Hidden and ReadOnly paths that exist when a
	// process starts in a mount namespace of its own, where the worker may
	// make one (a root worker; see mountns_linux.go), instead of cutting
	// them out of the Landlock rules: a read-only path bound read-only
	// onto itself, a hidden one with nothing readable in its place, each
	// directory on the way to one pinned (bound onto itself, so it cannot
	// be renamed or removed). The directories leading to them then keep
	// their new entries: an MCP server may make ~/.its-config beside a
	// read-only ~/.gitconfig. Each start costs a mount per path and per
	// leading directory, so it is for processes that start seldom. A path
	// that does not exist yet, one holding the workspace or a Writable
	// path, and the kernel's filesystems (/proc, /sys, RawDevicesIn) are
	// still cut out of the rules.
	HeldByMounts bool
	// PrivateIPC gives the processes of each workspace, where the worker
	// may make namespaces (a root worker), an IPC namespace and a
	// /dev/shm of their own: SysV shared memory, semaphores and message
	// queues, and POSIX shared memory, are shared with neither the host
	// (a database's segments) nor another conversation's processes.
	PrivateIPC bool
	// Workspaces are the directories the conversations' workspaces lie
	// in (FENIX_WORKSPACE_BASES): each is hidden from a command whose
	// workspace it does not hold, but for that workspace, so one
	// conversation's commands neither read nor write another's. Left
	// shared, and said so in the start log: "/", a directory holding the
	// temporary directory (commands need /tmp) and one the policy names
	// already (a read-only home).
	Workspaces []string
	// WorkspaceReach, when set, names what a command in a workspace
	// reaches fully besides it though it lies in a hidden base: a linked
	// worktree's repository beside it (workspace.LinkedRepository). It is
	// asked at every start; a change cuts the rules again.
	WorkspaceReach func(workspace string) []string
	// Network, when set, takes the network away from a command: it runs
	// in its workspace's network namespace, where only loopback exists
	// (shared by the workspace's commands and services, no other's), and
	// reaches other hosts only through the HTTP and SOCKS5 proxies
	// listening there (its HTTP_PROXY, HTTPS_PROXY and ALL_PROXY), which
	// dial through Network.Dial (Claude Code's sandbox.network).
	Network *Network
}

// Network is what a network-sandboxed command may reach.
type Network struct {
	// Dial reaches a destination for the command's proxies, or refuses it
	// with an error matching netguard.ErrBlocked (a netguard.DomainList's
	// DialContext).
	Dial netguard.DialFunc
	// Describe says what Dial lets through, for the start log.
	Describe string
	// OnRefused, when set, hears of every destination the proxies of
	// workspace's namespace refused: the worker logs them, so the log
	// keeps what commands tried.
	OnRefused func(workspace string, refusal error)
	// Ask lets a command started with an Asker (StartCommand) have
	// its proxies ask about a destination Dial neither allows nor denies
	// instead of refusing it, as Claude Code asks its user (and refuses
	// under its dontAsk mode).
	Ask bool
	// UnixSockets lets the command create Unix sockets, through which it
	// could reach a host daemon's socket and so the network
	// (allowAllUnixSockets); otherwise socket(AF_UNIX) and io_uring are
	// refused, as Claude Code's sandbox refuses them on Linux.
	UnixSockets bool
}

// Boundary is where a command may write at all: its workspace, its
// temporary directory, /dev (the null device, the terminal) and
// Writable. It is a second Landlock domain stacked on the first, so it
// only takes away.
type Boundary struct {
	// Temp is the commands' temporary directory (their TMPDIR), as Claude
	// Code gives sandboxed commands one of their own rather than /tmp.
	Temp string
	// Writable are further paths, absolute or relative to the workspace.
	Writable []string
	// DenyRead and DenyWrite are hidden and read-only, absolute or
	// relative to the workspace. Outside the command's workspace they are
	// cut out of its domain like Policy's paths; inside it a rule cut
	// around them would stop the command adding files to its workspace's
	// root, which Claude Code's sandbox does not, so there the command's
	// mount namespace holds them (as CommandOptions.ReadOnly, a DenyRead
	// path with nothing readable mounted on it), where the worker can
	// make one.
	DenyRead, DenyWrite []string
}

// inWorkspace are the boundary's deny lists as they apply inside
// workspace (real, free of symlinks), relative to it: its relative paths,
// and the absolute ones that lie in it.
func (b *Boundary) inWorkspace(workspace string) (denyRead, denyWrite []string) {
	if b == nil || workspace == "" {
		return nil, nil
	}
	rel := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				out = append(out, filepath.Clean(p))
				continue
			}
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			if r, err := filepath.Rel(workspace, p); err == nil && r != "." && r != ".." && !strings.HasPrefix(r, "../") {
				out = append(out, r)
			}
		}
		return out
	}
	return rel(b.DenyRead), rel(b.DenyWrite)
}

// writable is what the boundary lets a command in workspace write.
func (b *Boundary) writable(workspace string) []string {
	paths := []string{"/dev"}
	if b.Temp != "" {
		paths = append(paths, b.Temp)
	}
	if workspace != "" {
		paths = append(paths, workspace)
	}
	for _, w := range b.Writable {
		if !filepath.IsAbs(w) {
			if workspace == "" {
				continue
			}
			w = filepath.Join(workspace, w)
		}
		paths = append(paths, w)
	}
	return paths
}

// Merge adds q's paths to p's; the result has a Boundary when either has,
// with both Boundaries' paths.
func (p Policy) Merge(q Policy) Policy {
	out := Policy{
		Hidden:            append(append([]string(nil), p.Hidden...), q.Hidden...),
		ReadOnly:          append(append([]string(nil), p.ReadOnly...), q.ReadOnly...),
		Writable:          append(append([]string(nil), p.Writable...), q.Writable...),
		SignalsAnywhere:   p.SignalsAnywhere || q.SignalsAnywhere,
		BoundCapabilities: p.BoundCapabilities || q.BoundCapabilities,
		HeldByMounts:      p.HeldByMounts || q.HeldByMounts,
		PrivateIPC:        p.PrivateIPC || q.PrivateIPC,
		RawDevicesIn:      p.RawDevicesIn,
		Unreachable:       append(append([]Endpoint(nil), p.Unreachable...), q.Unreachable...),
		Workspaces:        append(append([]string(nil), p.Workspaces...), q.Workspaces...),
		WorkspaceReach:    p.WorkspaceReach,
		Network:           p.Network,
	}
	if q.WorkspaceReach != nil {
		out.WorkspaceReach = q.WorkspaceReach
	}
	if q.RawDevicesIn != "" {
		out.RawDevicesIn = q.RawDevicesIn
	}
	if q.Network != nil {
		out.Network = q.Network
	}
	if p.Boundary != nil || q.Boundary != nil {
		out.Boundary = &Boundary{}
		for _, b := range []*Boundary{p.Boundary, q.Boundary} {
			if b != nil {
				out.Boundary.Writable = append(out.Boundary.Writable, b.Writable...)
				out.Boundary.DenyRead = append(out.Boundary.DenyRead, b.DenyRead...)
				out.Boundary.DenyWrite = append(out.Boundary.DenyWrite, b.DenyWrite...)
				if out.Boundary.Temp == "" {
					out.Boundary.Temp = b.Temp
				}
			}
		}
	}
	return out
}

// protected is one path of a policy, absolute and clean.
type protected struct {
	path     string
	readOnly bool
	// outsideWorkspace is set for a Boundary's deny lists: left out for
	// a command whose workspace holds the path.
	outsideWorkspace bool
}

// normalize makes each path absolute, clean and free of symlinks (a
// rule is cut around the file a path leads to), dropping duplicates and
// "/" (protecting the whole tree would confine everything).
func (p Policy) normalize() ([]protected, error) {
	var out []protected
	seen := map[string]bool{}
	add := func(path string, readOnly, outsideWorkspace bool) error {
		if strings.TrimSpace(path) == "" {
			return nil
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("protected path %q: %w", path, err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		} else if dir, derr := filepath.EvalSymlinks(filepath.Dir(abs)); derr == nil {
			// Not there yet (audit.db before its first row): its
			// directory decides where it will be.
			abs = filepath.Join(dir, filepath.Base(abs))
		}
		if abs == "/" {
			return fmt.Errorf("protected path %q is the root directory: commands could reach nothing", path)
		}
		if seen[abs] {
			return nil
		}
		seen[abs] = true
		out = append(out, protected{path: abs, readOnly: readOnly, outsideWorkspace: outsideWorkspace})
		return nil
	}
	type pathList struct {
		paths                      []string
		readOnly, outsideWorkspace bool
	}
	lists := []pathList{{p.Hidden, false, false}, {p.ReadOnly, true, false}}
	if b := p.Boundary; b != nil {
		lists = append(lists, pathList{b.DenyRead, false, true}, pathList{b.DenyWrite, true, true})
	}
	for _, l := range lists {
		for _, path := range l.paths {
			if l.outsideWorkspace && !filepath.IsAbs(path) {
				continue // each workspace's own (Boundary.inWorkspace)
			}
			if err := add(path, l.readOnly, l.outsideWorkspace); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// within is whether path is dir or lies beneath it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// isolatedWorkspaces splits Policy.Workspaces into the directories hidden
// from other workspaces' commands, absolute and real, and those left
// shared, each with why: "/", one holding the temporary directory and one
// paths names already.
func isolatedWorkspaces(dirs []string, paths []protected) (isolated, shared []string) {
	temp := os.TempDir()
	if real, err := filepath.EvalSymlinks(temp); err == nil {
		temp = real
	}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil || strings.TrimSpace(dir) == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		switch {
		case slices.Contains(isolated, abs):
		case abs == "/":
			shared = append(shared, "/ (the root directory)")
		case within(temp, abs):
			shared = append(shared, abs+" (it holds the temporary directory "+temp+")")
		case slices.ContainsFunc(paths, func(p protected) bool { return p.path == abs }):
			shared = append(shared, abs+" (protected as such already)")
		default:
			isolated = append(isolated, abs)
		}
	}
	return isolated, shared
}
