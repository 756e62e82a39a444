//go:build !linux

package confine

import "errors"

// Fence is Linux-only: cgroup connect programs are Linux's.
type Fence struct{}

// NewFence fails: there are no cgroup programs here.
func NewFence([]Endpoint) (*Fence, error) {
	return nil, errors.New("fence: cgroup connect programs are Linux-only")
}

func (f *Fence) Apply(int) error { return errors.New("fence: cgroup connect programs are Linux-only") }
func (f *Fence) Close()          {}
func (f *Fence) String() string  { return "" }

// FenceUnavailable is nil: New never succeeds here.
func (c *Confiner) FenceUnavailable() error { return nil }

// siblingPorts is nil: the listening processes are read from Linux's /proc.
func siblingPorts(uint16) []uint16 { return nil }
