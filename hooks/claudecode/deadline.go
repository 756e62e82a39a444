package claudecode

import (
	"fmt"
	"sync/atomic"
	"time"
)

// maxStarvedStretch is how far past its timeout a command hook that is
// held up by others may run: ten times its timeout, by the clock.
const maxStarvedStretch = 10

// starvedStretch is maxStarvedStretch, which a test on a loaded machine
// raises to give a held-up hook more room.
var starvedStretch atomic.Int64

func init() { starvedStretch.Store(maxStarvedStretch) }

// A command hook's timeout counts the time it could run. A hook that
// waits for a CPU or for memory other processes hold (the agent's own
// commands, say, a few hundred busy processes) has that wait added to its
// deadline, so an agent cannot make a guard time out — and fail open —
// by loading the host. A hook that is simply slow, or sleeps, or hangs,
// times out on its timeout as in Claude Code.

// keptFromAnswering marks a hook failure caused by something other than
// the hook — starved, stopped or killed by another process, or not
// startable in the worker's confinement. Such a failure fails closed,
// whatever the hook's onFailure says: a guard kept from answering has not
// answered, and letting the call through would make that a way around
// it.
type keptFromAnswering interface {
	error
	keptFromAnswering()
}

func (*starvedError) keptFromAnswering()         {}
func (*stoppedError) keptFromAnswering()         {}
func (*killedError) keptFromAnswering()          {}
func (*unconfinedError) keptFromAnswering()      {}
func (*oversizedAnswerError) keptFromAnswering() {}

// oversizedAnswerError is a command hook whose JSON answer is over what
// the worker reads of its output: its decision cannot be read, so the
// hook fails closed where that could let a call through. The agent can
// make a hook's answer long: a guard that echoes a 400 KB argument back
// as updatedInput, its é escaped six bytes each, printed over the 1 MiB
// read then, and the call went on unredacted.
type oversizedAnswerError struct {
	command string
	limit   int
	size    int64
}

func (e *oversizedAnswerError) Error() string {
	return fmt.Sprintf("command %q printed a JSON answer of %d bytes, over the %d bytes of output the worker reads: its decision is unread", e.command, e.size, e.limit)
}

// timeoutError is a command hook that used its whole timeout.
type timeoutError struct {
	timeout, stalled time.Duration
}

func (e *timeoutError) Error() string {
	if e.stalled >= time.Millisecond {
		return fmt.Sprintf("timed out after %s (its %s of waiting for a CPU or memory held by others not counted)",
			e.timeout, e.stalled.Round(time.Millisecond))
	}
	return fmt.Sprintf("timed out after %s", e.timeout)
}

// starvedError is a command hook that reached maxStarvedStretch times its
// timeout while others held it up for most of that time (it fails
// closed: keptFromAnswering).
type starvedError struct {
	timeout, elapsed, stalled time.Duration
	stretch                   int64
}

func (e *starvedError) Error() string {
	return fmt.Sprintf("was starved: after %s it had waited %s for a CPU or memory held by others and had not finished "+
		"within %d times its %s timeout, so it fails closed",
		e.elapsed.Round(time.Millisecond), e.stalled.Round(time.Millisecond), e.stretch, e.timeout)
}

// settleWindow is how long a runnable hook whose held-up measure lags
// (the fallback without a cgroup, see proctree.GroupStalled) is watched
// past its deadline: behind a few hundred busy processes a thread gets a
// CPU within about a second, and its wait is counted then.
const settleWindow = time.Second

// stoppedError is a command hook found stopped (SIGSTOP, a tracer) at its
// deadline: something else stopped it (keptFromAnswering).
type stoppedError struct{ timeout time.Duration }

func (e *stoppedError) Error() string {
	return fmt.Sprintf("was stopped by a signal the worker did not send and had not answered after %s, so it fails closed", e.timeout)
}

// killedError is a command hook that died of a signal the worker did
// not send: something else may have killed it (keptFromAnswering). A
// hook that crashed on its own (SIGSEGV, SIGABRT) fails open in Claude
// Code, but a crash and a sent SIGSEGV look the same afterwards, so here
// it fails closed too.
//
// status is set where the hook's shell reported the death of a process
// it ran as its exit status (128+n).
type killedError struct {
	signal string
	status int
}

func (e *killedError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("exited with status %d: a process of it was killed by %s, which the worker did not send, so it fails closed", e.status, e.signal)
	}
	return "was killed by " + e.signal + ", which the worker did not send, so it fails closed"
}

// heldUp is what waitWithin asks of a running hook's process tree.
type heldUp interface {
	// stalled is how long the tree waited for a CPU or memory others
	// held, and whether that figure lags (see processTree.stalled).
	stalled() (held time.Duration, lagging bool)
	// stopped is whether a process of the tree is stopped.
	stopped() bool
	kill()
}

// waitWithin waits for a started command's wait result while the command
// has timeout of time it could run: when the clock reaches timeout plus
// the time the tree reports it was held up, it kills the tree and returns
// the wait result with a *timeoutError — a *stoppedError when the tree was
// found stopped, a *starvedError when the clock reached maxStarvedStretch
// times timeout with the hook held up for at least half of it. When the
// tree says its figure lags, a deadline is kept only once the figure
// stayed put for settleWindow.
func waitWithin(done <-chan error, timeout time.Duration, tree heldUp) (waitErr, expired error) {
	start := time.Now()
	stretch := time.Duration(starvedStretch.Load()) * timeout
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	settled := time.Duration(-1)
	for {
		select {
		case err := <-done:
			return err, nil
		case <-timer.C:
		}
		held, lagging := tree.stalled()
		elapsed := time.Since(start)
		switch deadline := timeout + held; {
		case elapsed >= deadline && tree.stopped():
			expired = &stoppedError{timeout: timeout}
		case elapsed >= stretch:
			expired = &timeoutError{timeout: timeout, stalled: held}
			if held >= elapsed/2 {
				expired = &starvedError{timeout: timeout, elapsed: elapsed, stalled: held, stretch: int64(stretch / timeout)}
			}
		case elapsed >= deadline && lagging && held != settled:
			settled = held
			timer.Reset(min(settleWindow, stretch-elapsed))
			continue
		case elapsed >= deadline:
			expired = &timeoutError{timeout: timeout, stalled: held}
		default:
			timer.Reset(min(deadline, stretch) - elapsed)
			continue
		}
		tree.kill()
		return <-done, expired
	}
}
