package worker

import "golang.org/x/sys/unix"

// hideProcessFromSameUser marks the worker process non-dumpable. A command
// an agent runs (exec_command, process_exec, a hook) is the worker's child
// and, by default, runs as the worker's user; without this it can read
// /proc/$PPID/environ (the worker's Temporal API key, codec keys, any
// secret the worker was started with), /proc/$PPID/mem and the worker's
// open descriptors. A non-dumpable process's /proc entries belong to
// root, so a child running as the same non-root user is refused. A child
// running as root is not: run the worker as its own user (see README,
// "Running as root").
//
// The mark is lost across execve, so it holds for this process only: the
// commands keep their own /proc entries.
func hideProcessFromSameUser() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
