package hooks

// DefaultConcurrency bounds how many hooks of one event run at once.
const DefaultConcurrency = 8

// ConcurrentHook is implemented by hooks that may run at the same time as
// their neighbours, as Claude Code runs all matching hooks of an event in
// parallel. A run of consecutive concurrent hooks starts together and
// every one of them sees the event as it stood before the run; their
// answers are then combined in registration order, whatever finished
// first, by the same rules as sequential hooks (first block wins, last
// rewrite wins, contexts joined in order). Other hooks run one at a time
// and see what the hooks before them made of the event.
type ConcurrentHook interface {
	Concurrent() bool
}

// WithConcurrency bounds how many concurrent hooks of one event run at once
// (DefaultConcurrency unless set); 1 or less runs every hook in turn.
func WithConcurrency(n int) Option { return func(r *Registry) { r.concurrency = n } }

func (e entry) concurrent() bool {
	c, ok := e.hook.(ConcurrentHook)
	return ok && c.Concurrent()
}

// hookRun is one hook's answer and its decision.
type hookRun[T any] struct {
	out T
	d   HookDecision
}

// runner hands a Run method its subscribers' answers in registration
// order. start is called on the Run method's goroutine when a hook is due
// to start: it snapshots the event as it stands and returns the call that
// runs the hook (possibly on another goroutine); onPanic is the hook's
// answer when that call panics.
type runner[T any] struct {
	r       *Registry
	ev      Event
	subs    []entry
	start   func(e entry) func() (T, error)
	onPanic func(e entry, p any) T
	runs    []hookRun[T]
	done    []chan struct{}
}

// runHooks prepares the subscribers of ev to run.
func runHooks[T any](r *Registry, ev Event, payload any, start func(e entry) func() (T, error), onPanic func(e entry, p any) T) ([]entry, *runner[T]) {
	subs := r.subscribersFor(ev, payload)
	return subs, &runner[T]{r: r, ev: ev, subs: subs, start: start, onPanic: onPanic,
		runs: make([]hookRun[T], len(subs)), done: make([]chan struct{}, len(subs))}
}

// call starts subscriber j and returns the function that runs it.
func (x *runner[T]) call(j int) func() (T, HookDecision) {
	e := x.subs[j]
	call := x.start(e)
	return func() (T, HookDecision) {
		return invoke(x.r, e, x.ev, call, func(p any) T { return x.onPanic(e, p) })
	}
}

// get returns the answer of subscriber i; ask for them in order.
func (x *runner[T]) get(i int) (T, HookDecision) {
	if x.done[i] == nil {
		x.launch(i)
	}
	<-x.done[i]
	return x.runs[i].out, x.runs[i].d
}

// launch starts subscriber i: alone, or with the run of concurrent
// subscribers it begins.
func (x *runner[T]) launch(i int) {
	end := i + 1
	if x.r.concurrency > 1 && x.subs[i].concurrent() {
		for end < len(x.subs) && x.subs[end].concurrent() {
			end++
		}
	}
	if end == i+1 {
		x.done[i] = make(chan struct{})
		x.runs[i].out, x.runs[i].d = x.call(i)()
		close(x.done[i])
		return
	}
	slots := make(chan struct{}, x.r.concurrency)
	for j := i; j < end; j++ {
		call := x.call(j)
		done := make(chan struct{})
		x.done[j] = done
		go func(j int) {
			slots <- struct{}{}
			defer func() { <-slots; close(done) }()
			x.runs[j].out, x.runs[j].d = call()
		}(j)
	}
}

// wait blocks until every started hook has finished, so none outlives the
// Run method that started it.
func (x *runner[T]) wait() {
	for _, d := range x.done {
		if d != nil {
			<-d
		}
	}
}

// failClosedOr is a hook's answer when it panics: closed, with a reason
// naming the hook, when the hook fails closed, else open.
func failClosedOr[T any](closed func(reason string) T, open T) func(entry, any) T {
	return func(e entry, p any) T {
		if e.failClosed {
			return closed(failedClosedReason(e.name, p))
		}
		return open
	}
}
