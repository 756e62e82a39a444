//go:build !linux

package procs

import (
	"strconv"
	"syscall"
)

const supported = false

func sysProcAttr() *syscall.SysProcAttr    { return &syscall.SysProcAttr{Setpgid: true} }
func applyLimits(int, Limits) error        { return ErrUnsupported }
func waitExitedNoReap(int) error           { return ErrUnsupported }
func groupSize(int) int                    { return 0 }
func GroupSize(pgid int) int               { return groupSize(pgid) }
func signalName(sig syscall.Signal) string { return "signal " + strconv.Itoa(int(sig)) }
