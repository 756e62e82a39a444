//go:build linux

package confine

import (
	"fmt"
	"strings"
)

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
	// What a command may do to processes it did not start.
	others := "signals: anywhere the user may send them (ABI 6 scopes them)"
	switch {
	case c.signalsAnywhere:
		others = "signals: anywhere the user may send them (FENIX_COMMAND_SIGNALS=any or FENIX_HOOK_SIGNALS=any)"
	case c.SignalsScoped():
		others = "signals: to the processes of the command's own group only (a conversation's in its workspace; a hook's own)"
	}
	if c.SocketsScoped() {
		others += "; abstract unix sockets: its own group's only"
	}
	if c.PrlimitFiltered() {
		others += "; prlimit: own limits only; kernel keyrings and io_uring: refused"
	} else {
		others += "; prlimit, kernel keyrings and io_uring: not filtered (" + c.noPrlimitFilter.Error() + ")"
	}
	if c.boundCaps {
		others += "; capabilities: at most " + keptCapabilityNames()
	}
	cut, held := c.guarded("")
	if len(held) > 0 {
		var names []string
		for _, p := range held {
			names = append(names, p.path)
		}
		others += "; held in a mount namespace per process, the directories leading to them keeping their new entries: " + strings.Join(names, ", ")
	}
	switch {
	case c.noMountns == nil:
		others += "; in the workspace: what governs the agent read-only, and the sandbox's deny lists held (a mount namespace per command)"
	case c.boundary != nil && len(c.boundary.DenyRead)+len(c.boundary.DenyWrite) > 0:
		others += "; in the workspace: what governs the agent changed only reported, and the sandbox's deny lists not applied (" + c.noMountns.Error() + ")"
	default:
		others += "; in the workspace: what governs the agent changed only reported (" + c.noMountns.Error() + ")"
	}
	desc := fmt.Sprintf("Landlock ABI %d; hidden: %s; read-only: %s; no new entries in: %s; %s",
		c.abi, orNone(hidden), orNone(readOnly), orNone(c.leadingDirs(cut)), others)
	if len(c.writable) > 0 {
		desc += "; reachable inside them: " + strings.Join(c.writable, ", ")
	}
	if c.shm != "" {
		desc += "; IPC: a namespace and a /dev/shm of its workspace's (under " + c.shm + ")"
	}
	if len(c.workspaces) > 0 {
		desc += "; workspaces: a command reaches its own only (and a linked worktree's repository) in " + strings.Join(c.workspaces, ", ")
	}
	if len(c.sharedWorkspaces) > 0 {
		desc += "; workspaces every command reaches: " + strings.Join(c.sharedWorkspaces, ", ")
	}
	if c.boundary != nil {
		desc += fmt.Sprintf("; writes only in the workspace, %s", strings.Join(c.boundary.writable(""), ", "))
	}
	switch {
	case c.fence != nil:
		desc += "; connections refused to: " + c.fence.String()
	case c.noFence != nil:
		desc += "; connections not fenced (" + c.noFence.Error() + ")"
	}
	if c.network == nil {
		return desc
	}
	switch {
	case c.noNetns == nil:
		desc += "; network: a namespace per workspace, out only through proxies (" + c.network.Describe + ")"
	case c.ports != nil:
		desc += "; network: out only through proxies on the worker's loopback (" + c.network.Describe + "), TCP held to their two ports by Landlock and UDP refused, as there is no namespace per workspace (" +
			c.noNetns.Error() + "): a command can still reach another host on those two port numbers, and cannot reach another command's server"
	default:
		return desc + "; network: as the worker's (" + c.NetworkUnavailable().Error() + ")"
	}
	switch {
	case c.network.UnixSockets:
		desc += "; Unix sockets: allowed (allowAllUnixSockets)"
	case c.noUnixFilter != nil:
		desc += "; Unix sockets: not filtered (" + c.noUnixFilter.Error() + ")"
	default:
		desc += "; Unix sockets: refused"
	}
	return desc
}

func orNone(paths []string) string {
	if len(paths) == 0 {
		return "none"
	}
	return strings.Join(paths, ", ")
}
