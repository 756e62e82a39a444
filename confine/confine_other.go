//go:build !linux

package confine

import (
	"context"
	"net"
	"os/exec"
)

// Confiner is Linux-only; elsewhere New always fails.
type Confiner struct{}

// ABIVersion is 0: there is no Landlock here.
func ABIVersion() int { return 0 }

// New fails with ErrUnavailable: only Linux has Landlock.
func New(Policy) (*Confiner, error) { return nil, ErrUnavailable }

func (c *Confiner) ABI() int                                      { return 0 }
func (c *Confiner) String() string                                { return "unconfined" }
func (c *Confiner) Start(cmd *exec.Cmd, _ string) (func(), error) { return func() {}, cmd.Start() }
func (c *Confiner) Close()                                        {}

// StartInGroup is Start: there are no domains here.
func (c *Confiner) StartInGroup(cmd *exec.Cmd, workspace, _ string) (func(), error) {
	return c.Start(cmd, workspace)
}
func (c *Confiner) NetworkUnavailable() error { return nil }

// ReadOnlyUnavailable says there are no mount namespaces here.
func (c *Confiner) ReadOnlyUnavailable() error { return ErrUnavailable }

// StartCommand is Start: there are no sandbox proxies or mount
// namespaces here.
func (c *Confiner) StartCommand(cmd *exec.Cmd, o CommandOptions) (func(), error) {
	return c.Start(cmd, o.Workspace)
}

// DialIn is a plain dial: there are no network namespaces here.
func DialIn(ctx context.Context, _ int, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}
