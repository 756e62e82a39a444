package tools

// Host holds what registry-backed tools share on one worker host: the
// host's identity and its pinned task queue. Resources created on a host
// (command runs, processes) carry the host ID in their IDs so later calls
// that refer to them are routed back here.
type Host struct {
	// ID identifies this worker host; stable across restarts of the same
	// worker data directory.
	ID string
	// Queue is the task queue only this host polls.
	Queue string
}
