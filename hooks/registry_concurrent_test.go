package hooks

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// slowHook answers PreToolUse and PostToolUse after delay; it may run
// concurrently with its neighbours.
type slowHook struct {
	Base
	name    string
	delay   time.Duration
	pre     PreToolUseAction
	post    PostToolUseAction
	seen    map[string]any
	running *atomic.Int32
	peak    *atomic.Int32
}

func (h *slowHook) Name() string     { return h.name }
func (h *slowHook) Concurrent() bool { return true }

func (h *slowHook) enter() func() {
	if h.running == nil {
		return func() {}
	}
	n := h.running.Add(1)
	for {
		p := h.peak.Load()
		if n <= p || h.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return func() { h.running.Add(-1) }
}

func (h *slowHook) PreToolUse(_ context.Context, ev PreToolUseEvent) (PreToolUseAction, error) {
	defer h.enter()()
	h.seen = ev.ToolInput
	time.Sleep(h.delay)
	return h.pre, nil
}

func (h *slowHook) PostToolUse(context.Context, PostToolUseEvent) (PostToolUseAction, error) {
	time.Sleep(h.delay)
	return h.post, nil
}

// TestConcurrentHooksAggregateInRegistrationOrder makes the earlier hooks
// finish last: the verdict must still be the one registration order gives.
func TestConcurrentHooksAggregateInRegistrationOrder(t *testing.T) {
	a := &slowHook{name: "a", delay: 60 * time.Millisecond, pre: MutateInput(map[string]any{"cmd": "from-a"}, "ctx-a")}
	b := &slowHook{name: "b", delay: 40 * time.Millisecond, pre: MutateInput(map[string]any{"cmd": "from-b"}, "ctx-b")}
	c := &slowHook{name: "c", delay: 20 * time.Millisecond, pre: Block("c says no")}
	d := &slowHook{name: "d", delay: 0, pre: Block("d says no")}
	r := NewRegistry()
	for _, h := range []*slowHook{a, b, c, d} {
		r.Add(h)
	}
	res := r.RunPreToolUse(context.Background(), PreToolUseEvent{ToolName: "exec_command", ToolInput: map[string]any{"cmd": "orig"}})
	if !res.Blocked() || res.DecidedBy != "c" || res.Action.Reason != "c says no" {
		t.Fatalf("verdict = %+v decided by %q, want block by c", res.Action, res.DecidedBy)
	}
	if got, want := res.AdditionalContext, "ctx-a\nctx-b"; got != want {
		t.Errorf("context = %q, want %q", got, want)
	}
	var names []string
	for _, d := range res.Decisions {
		names = append(names, d.Hook)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(names, want) {
		t.Errorf("decisions = %v, want %v", names, want)
	}
	for _, h := range []*slowHook{a, b, c, d} {
		if h.seen["cmd"] != "orig" {
			t.Errorf("hook %s saw cmd %v, want the arguments before the concurrent run", h.name, h.seen["cmd"])
		}
	}
}

func TestConcurrentHooksLastRewriteWins(t *testing.T) {
	r := NewRegistry()
	r.Add(&slowHook{name: "first", delay: 30 * time.Millisecond, pre: MutateInput(map[string]any{"cmd": "first"}, "")})
	r.Add(&slowHook{name: "second", delay: 0, pre: MutateInput(map[string]any{"cmd": "second"}, "")})
	r.Add(&slowHook{name: "quiet", delay: 10 * time.Millisecond, pre: Continue()})
	res := r.RunPreToolUse(context.Background(), PreToolUseEvent{ToolName: "t", ToolInput: map[string]any{"cmd": "orig"}})
	if res.FinalArgs["cmd"] != "second" || res.Blocked() {
		t.Fatalf("final args = %v (action %+v), want cmd=second from the later hook", res.FinalArgs, res.Action)
	}

	post := NewRegistry()
	post.Add(&slowHook{name: "p1", delay: 30 * time.Millisecond, post: MutateOutput("one")})
	post.Add(&slowHook{name: "p2", delay: 0, post: MutateOutput("two")})
	pr := post.RunPostToolUse(context.Background(), PostToolUseEvent{ToolName: "t", Content: "orig"})
	if pr.FinalContent != "two" || pr.MutatedBy != "p2" {
		t.Fatalf("post = %q by %q, want \"two\" by p2", pr.FinalContent, pr.MutatedBy)
	}
}

// TestConcurrencyIsBounded checks WithConcurrency caps the hooks in flight
// and that a sequential hook between two concurrent runs sees the first
// run's rewrite.
func TestConcurrencyIsBounded(t *testing.T) {
	var running, peak atomic.Int32
	r := NewRegistry(WithConcurrency(2))
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		r.Add(&slowHook{name: n, delay: 15 * time.Millisecond, pre: Continue(), running: &running, peak: &peak})
	}
	r.RunPreToolUse(context.Background(), PreToolUseEvent{ToolName: "t"})
	if p := peak.Load(); p != 2 {
		t.Errorf("peak hooks in flight = %d, want 2", p)
	}

	seq := &fakeHook{name: "seq", pre: func(ev PreToolUseEvent) (PreToolUseAction, error) {
		if ev.ToolInput["cmd"] != "rewritten" {
			return Block("sequential hook saw " + ev.ToolInput["cmd"].(string)), nil
		}
		return Continue(), nil
	}}
	chain := NewRegistry()
	chain.Add(&slowHook{name: "rw", pre: MutateInput(map[string]any{"cmd": "rewritten"}, "")})
	chain.Add(seq)
	late := &slowHook{name: "late", pre: Continue()}
	chain.Add(late)
	res := chain.RunPreToolUse(context.Background(), PreToolUseEvent{ToolName: "t", ToolInput: map[string]any{"cmd": "orig"}})
	if res.Blocked() {
		t.Fatalf("blocked: %s", res.Action.Reason)
	}
	if late.seen["cmd"] != "rewritten" {
		t.Errorf("hook after the sequential one saw %v, want rewritten", late.seen["cmd"])
	}
}

// BenchmarkFourSlowHooks is four 50 ms hooks of one event: about 50 ms
// concurrently, about 200 ms with WithConcurrency(1).
func BenchmarkFourSlowHooks(b *testing.B) {
	for _, bc := range []struct {
		name string
		n    int
	}{{"sequential", 1}, {"concurrent", DefaultConcurrency}} {
		b.Run(bc.name, func(b *testing.B) {
			r := NewRegistry(WithConcurrency(bc.n))
			for _, n := range []string{"a", "b", "c", "d"} {
				r.Add(&slowHook{name: n, delay: 50 * time.Millisecond, pre: Continue()})
			}
			ev := PreToolUseEvent{ToolName: "exec_command", ToolInput: map[string]any{"cmd": "true"}}
			for b.Loop() {
				r.RunPreToolUse(context.Background(), ev)
			}
		})
	}
}
