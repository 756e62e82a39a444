//go:build !linux

package proctree

import (
	"syscall"
	"time"
)

// Cgroup is a process tree's cgroup; there are none off Linux.
type Cgroup struct{}

// New fails: cgroups are Linux's.
func New(parent, prefix string) (*Cgroup, error) { return nil, ErrUnavailable }

func (c *Cgroup) Dir() string                          { return "" }
func (c *Cgroup) FD() int                              { return -1 }
func (c *Cgroup) Attach(*syscall.SysProcAttr)          {}
func (c *Cgroup) Kill() error                          { return ErrUnavailable }
func (c *Cgroup) Populated() (bool, error)             { return false, ErrUnavailable }
func (c *Cgroup) Processes() (int, error)              { return 0, ErrUnavailable }
func (c *Cgroup) WaitEmpty(timeout time.Duration) bool { return false }
func (c *Cgroup) Close()                               {}

// Prefixes of the run cgroups the worker makes.
const (
	PrefixHook    = "fenix-hook-"
	PrefixCommand = "fenix-cmd-"
	PrefixMCP     = "fenix-mcp-"
	PrefixBrowser = "fenix-browser-"
)

func parent() string { return "" }

// Mounts is empty: cgroups are Linux only.
func Mounts() []string { return nil }

// Stalled is unknown off Linux.
func (c *Cgroup) Stalled() (time.Duration, error) { return 0, ErrUnavailable }

// GroupStalled is unknown off Linux.
func GroupStalled(pgid int) (time.Duration, bool, error) { return 0, false, ErrUnavailable }

// GroupStopped is unknown off Linux.
func GroupStopped(pgid int) bool { return false }

// Stopped is unknown off Linux.
func (c *Cgroup) Stopped() bool { return false }

// PreferOOMKill is unavailable off Linux.
func PreferOOMKill(pid int) error { return ErrUnavailable }

// OOMKills is unknown off Linux.
func OOMKills() int64 { return -1 }

// OOMKills is unknown off Linux.
func (c *Cgroup) OOMKills() int64 { return -1 }
