package procs

import (
	"errors"
	"syscall"
)

// CodeWorkerExhausted is the error code of a command that could not start
// because the worker ran out of file descriptors or processes.
const CodeWorkerExhausted = "worker_resources_exhausted"

// Exhausted says, in words an operator acts on, that err is the worker
// running out of file descriptors or processes, whichever step of a
// start met it (a pipe, the cgroup, the fence's program, the fork); ""
// when it is not. A start fails at the first descriptor it cannot get,
// and the step that happened to be first (often the fence) says nothing
// about the cause.
func Exhausted(err error) string {
	switch {
	case errors.Is(err, syscall.EMFILE):
		return "the worker is out of file descriptors (EMFILE: its open-file limit is reached; raise LimitNOFILE or find what holds them)"
	case errors.Is(err, syscall.ENFILE):
		return "the host is out of file descriptors (ENFILE: the system-wide limit fs.file-max is reached)"
	case errors.Is(err, syscall.EAGAIN):
		return "the worker cannot start another process (EAGAIN: its process limit is reached)"
	}
	return ""
}
