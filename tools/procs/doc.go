// Package procs runs shell commands for tools on one worker host and keeps
// the records that let a restarted worker clean up after a lost one.
//
// # Vocabulary
//
// The words follow the public tool names (README "Tools") and contract:
//
//   - A process (Process) is one supervised process group: sh -c and all it
//     starts. It is the mechanism under both kinds of run below, never a
//     resource of its own; its ID is the shell's PID, which is also the
//     process group ID.
//   - A command run (CommandRun, ID "cmd_<host>_<hex>", JSON
//     command_run_id) is one exec_command call: a command the call waits
//     for, killed at its timeout or when the call is canceled. Runs keeps
//     them: live ones in memory, every one on disk with its output tails,
//     readable afterwards with command_run_read.
//   - A process run (contract.ProcessRun, ID "proc_<host>_<hex>", JSON
//     process_run_id) is one background service started by process_exec,
//     listed by process_list and stopped by process_stop; it outlives the
//     call that started it. Services keeps them, each with a capped log
//     and, when it declared a port, a reverse proxy at /proxy/<id>/. In this
//     package a process run's command is called a service (ServiceSpec,
//     ServiceInfo).
//
// Both kinds of run are owned by the host whose worker started them (the
// host ID is part of the resource ID, and calls about a run are routed to
// that host's task queue); tools.Host holds one Runs and one Services.
// Their records live in the host's data directory (recordStore: one JSON
// file per run, written atomically) and are written as "running", with the
// process group's identity, before the command runs.
//
// # What is enforced, and how
//
// Each command runs in its own process group under resource limits, its
// output is captured into bounded buffers, and stopping it (timeout,
// cancellation, a limit, shutdown) kills the whole group: SIGTERM first,
// SIGKILL after a short grace.
//
//   - RLIMIT_FSIZE, RLIMIT_CPU, RLIMIT_NOFILE and RLIMIT_AS are applied with
//     prlimit(2) to the command's shell before it runs anything: the shell
//     waits on a gate pipe until the limits are in place, so there is no
//     window in which the command runs unlimited.
//   - The process count is enforced by a watchdog that counts the members of
//     the process group and kills the group past Limits.MaxProcesses. When
//     the worker is not root, RLIMIT_NPROC (the user's current task count
//     plus MaxProcesses) is applied too, so the kernel refuses forks before
//     the watchdog sees them. Root ignores RLIMIT_NPROC, so for a root
//     worker the watchdog is the guard.
//   - Output beyond Limits.MaxOutputBytes kills the group; only the last
//     Spec.KeepBytes of each stream are kept in memory.
//   - When the group leader exits, the rest of the group is killed, so a
//     command leaves nothing behind in its group.
//   - When the worker itself dies (SIGKILL, a crash), Pdeathsig kills the
//     group leader, but the rest of the group runs on. Registries (Runs,
//     Services) persist every group's identity (Spec.BeforeRun) before the
//     command runs, and the next worker opening them kills such leftovers
//     after checking they are the recorded group (ReapLeftover).
//
// Where the worker's cgroup v2 is writable, each command also runs in a
// cgroup of its own (proctree): a process that leaves the group (setsid,
// setpgid) stays in it, cgroup.kill ends it with the rest, the watchdog
// counts it, and the cgroup says at once when nothing is left (no /proc
// scan after every command). Without one, such a process escapes the
// group kill and the watchdog: run the worker with a delegated cgroup v2
// (a systemd unit with Delegate=yes, a container) for that boundary.
package procs
