//go:build !unix

package claudecode

import "os/exec"

// useProcessGroup keeps exec's default: cancellation kills the process.
func useProcessGroup(*exec.Cmd) {}

// killProcessGroup has no process group to kill on this platform.
func killProcessGroup(*exec.Cmd) error { return nil }
