package claudecode

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRun is a command for waitWithin: it ends when told or when killed,
// and reports as held up whatever stall is set to.
type fakeRun struct {
	done   chan error
	stall  atomic.Int64
	killed atomic.Bool
	halted atomic.Bool
}

func (r *fakeRun) stopped() bool { return r.halted.Load() }

func newFakeRun() *fakeRun { return &fakeRun{done: make(chan error, 1)} }

func (r *fakeRun) stalled() (time.Duration, bool) { return time.Duration(r.stall.Load()), false }
func (r *fakeRun) kill() {
	if !r.killed.Swap(true) {
		r.done <- errors.New("signal: killed")
	}
}

// heldRun is a fakeRun that reports it waited for others for share of
// the time since it began, until the test ends.
func heldRun(t *testing.T, share float64) *fakeRun {
	r := newFakeRun()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	start := time.Now()
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				r.stall.Store(int64(float64(time.Since(start)) * share))
			}
		}
	}()
	return r
}

// TestWaitWithinCountsOnlyTheTimeAHookCouldRun: a hook nobody holds up
// times out on its timeout; one held up for most of the time runs on and
// keeps its own result; one held up without end is starved at ten times
// its timeout; one that uses its whole timeout of running time times out
// even if it was held up a while.
func TestWaitWithinCountsOnlyTheTimeAHookCouldRun(t *testing.T) {
	const timeout = 40 * time.Millisecond
	t.Run("not held up", func(t *testing.T) {
		r := newFakeRun()
		start := time.Now()
		_, expired := waitWithin(r.done, timeout, r)
		var te *timeoutError
		if !errors.As(expired, &te) || !r.killed.Load() {
			t.Fatalf("expired = %v, killed = %v, want a timeout and a kill", expired, r.killed.Load())
		}
		if elapsed := time.Since(start); elapsed > 5*timeout {
			t.Errorf("timed out after %s, want about %s", elapsed, timeout)
		}
	})
	t.Run("stopped by someone else", func(t *testing.T) {
		r := newFakeRun()
		r.halted.Store(true)
		_, expired := waitWithin(r.done, timeout, r)
		var stopped *stoppedError
		if !errors.As(expired, &stopped) || !r.killed.Load() {
			t.Fatalf("expired = %v, want stopped and a kill", expired)
		}
	})
	t.Run("held up, then finishes", func(t *testing.T) {
		r := heldRun(t, 0.8)
		go func() { time.Sleep(4 * timeout); r.done <- nil }()
		waitErr, expired := waitWithin(r.done, timeout, r)
		if expired != nil || waitErr != nil || r.killed.Load() {
			t.Fatalf("waitErr = %v, expired = %v, killed = %v, want the hook's own end", waitErr, expired, r.killed.Load())
		}
	})
	t.Run("held up without end", func(t *testing.T) {
		r := heldRun(t, 0.95)
		start := time.Now()
		_, expired := waitWithin(r.done, timeout, r)
		var starved *starvedError
		if !errors.As(expired, &starved) || !r.killed.Load() {
			t.Fatalf("expired = %v, want starved and a kill", expired)
		}
		if elapsed := time.Since(start); elapsed < time.Duration(starvedStretch.Load())*timeout {
			t.Errorf("starved after %s, want at least %s", elapsed, time.Duration(starvedStretch.Load())*timeout)
		}
	})
	t.Run("held up a little, then runs out its timeout", func(t *testing.T) {
		r := heldRun(t, 0.3)
		start := time.Now()
		_, expired := waitWithin(r.done, timeout, r)
		var te *timeoutError
		if !errors.As(expired, &te) {
			t.Fatalf("expired = %v, want a timeout", expired)
		}
		// Running 70% of the time, it had its 40ms by about 57ms.
		if elapsed := time.Since(start); elapsed < timeout+5*time.Millisecond || elapsed >= time.Duration(starvedStretch.Load())*timeout {
			t.Errorf("timed out after %s, want past %s and well before %s", elapsed, timeout, time.Duration(starvedStretch.Load())*timeout)
		}
	})
}
