//go:build !linux

package procs

import (
	"strconv"
	"syscall"
	"time"
)

const supported = false

func sysProcAttr() *syscall.SysProcAttr     { return &syscall.SysProcAttr{Setpgid: true} }
func applyLimits(int, Limits) error         { return ErrUnsupported }
func userGateScript(Limits) (string, error) { return "", ErrUnsupported }
func waitExitedNoReap(int) error            { return ErrUnsupported }
func groupSize(int, bool) int               { return 0 }
func identify(pid int) GroupIdentity        { return GroupIdentity{PGID: pid} }
func signalName(sig syscall.Signal) string  { return "signal " + strconv.Itoa(int(sig)) }

func reapLeftover(*GroupIdentity, time.Duration) Leftover {
	return Leftover{Outcome: LeftoverUnverifiable}
}
