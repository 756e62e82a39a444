package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/workflows"
)

func TestCacheFreshness(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache(time.Minute)
	if _, fresh := c.Fresh("c1", t0); fresh {
		t.Fatal("an unknown conversation is fresh")
	}
	c.Mark("c1", t0, "")
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {59 * time.Second, true}, {time.Minute, false}, {-time.Second, false}} {
		if _, got := c.Fresh("c1", t0.Add(tc.at)); got != tc.want {
			t.Errorf("Fresh at +%s = %v, want %v", tc.at, got, tc.want)
		}
	}
	if _, fresh := c.Fresh("c2", t0); fresh {
		t.Error("another conversation is fresh")
	}
}

func TestCacheBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache(time.Minute)
	c.Size = 2
	c.Mark("old", t0, "")
	c.Mark("c1", t0.Add(2*time.Minute), "")
	c.Mark("c2", t0.Add(2*time.Minute), "")
	if _, oldFresh := c.Fresh("old", t0); c.Len() != 2 || oldFresh {
		t.Errorf("after a third conversation: %d entries, old fresh %v; want 2 entries without the stale one", c.Len(), oldFresh)
	}
}

func TestRefreshFor(t *testing.T) {
	if got := RefreshFor(30 * time.Minute); got != time.Minute {
		t.Errorf("RefreshFor(30m) = %s, want 1m", got)
	}
	if got := RefreshFor(2 * time.Second); got != 200*time.Millisecond {
		t.Errorf("RefreshFor(2s) = %s, want 200ms", got)
	}
}

type fakeToucher struct {
	touches []string
	answer  string
	env     string
	err     error
	// set are the environments reported, reads the Env calls.
	set   []string
	reads int
}

func (f *fakeToucher) Touch(_ context.Context, updateID string, t workflows.SessionTouch) (workflows.SessionTouchResult, error) {
	f.touches = append(f.touches, updateID+"@"+t.ConversationID)
	return workflows.SessionTouchResult{Source: f.answer, Env: f.env}, f.err
}

func (f *fakeToucher) SetEnv(_ context.Context, conversationID, updateID, env string) error {
	f.set = append(f.set, updateID+"@"+conversationID+"="+env)
	return f.err
}

func (f *fakeToucher) Env(context.Context, string) (string, error) {
	f.reads++
	return f.env, f.err
}

func TestClaimerAsksOnlyOnMissOrStale(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeToucher{answer: "startup"}
	c := NewClaimer(f, 10*time.Minute)
	c.Now = func() time.Time { return now }
	claim := activities.SessionClaim{ConversationID: "conv-1", UpdateID: "run-1/session-start", Mode: activities.ClaimStart}

	ans, err := c.Claim(context.Background(), claim)
	if err != nil || ans.Source != "startup" || ans.Cached {
		t.Fatalf("first claim = %+v err %v, want startup from the session", ans, err)
	}
	f.answer = ""
	now = now.Add(30 * time.Second)
	ans, _ = c.Claim(context.Background(), claim)
	if ans.Source != "" || !ans.Cached || len(f.touches) != 1 {
		t.Fatalf("second claim within refresh = %+v after %d touches, want a cached answer and no touch", ans, len(f.touches))
	}
	now = now.Add(time.Minute)
	f.answer = "resume"
	ans, _ = c.Claim(context.Background(), claim)
	if ans.Source != "resume" || ans.Cached || len(f.touches) != 2 {
		t.Fatalf("stale claim = %+v after %d touches, want the session's answer", ans, len(f.touches))
	}
}

// The session environment comes with the touch's answer, is cached with
// it, and a run's own report updates this worker's cache at once; a read
// (a subagent's) queries the session only when the cache has nothing
// fresh, and never counts as a touch.
func TestClaimerCarriesTheSessionEnvironment(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeToucher{env: "export A=1\n"}
	c := NewClaimer(f, 10*time.Minute)
	c.Now = func() time.Time { return now }
	claim := activities.SessionClaim{ConversationID: "conv-1", UpdateID: "run-1/session-start", Mode: activities.ClaimStart}
	read := activities.SessionClaim{ConversationID: "conv-1", UpdateID: "run-2/session-env", Mode: activities.ClaimRead}

	if ans, _ := c.Claim(context.Background(), read); ans.Env != "export A=1\n" || f.reads != 1 || len(f.touches) != 0 {
		t.Fatalf("read without a cache entry = %+v, %d reads, %d touches; want the session's env, read, no touch", ans, f.reads, len(f.touches))
	}
	if ans, _ := c.Claim(context.Background(), claim); ans.Env != "export A=1\n" || len(f.touches) != 1 {
		t.Fatalf("touch = %+v, want the session's env", ans)
	}
	if err := c.SetEnv(context.Background(), "conv-1", "run-1/session-start/env", "export B=2\n"); err != nil {
		t.Fatal(err)
	}
	if len(f.set) != 1 || f.set[0] != "run-1/session-start/env@conv-1=export B=2\n" {
		t.Fatalf("reported %v", f.set)
	}
	for _, cl := range []activities.SessionClaim{claim, read} {
		if ans, _ := c.Claim(context.Background(), cl); ans.Env != "export B=2\n" || !ans.Cached {
			t.Fatalf("%s claim after the report = %+v, want the reported env from the cache", cl.Mode, ans)
		}
	}
	if f.reads != 1 || len(f.touches) != 1 {
		t.Fatalf("%d reads, %d touches; want none more", f.reads, len(f.touches))
	}
}

func TestClaimerErrorIsNotCached(t *testing.T) {
	f := &fakeToucher{err: errors.New("unavailable")}
	c := NewClaimer(f, time.Minute)
	claim := activities.SessionClaim{ConversationID: "conv-1", UpdateID: "u", Mode: activities.ClaimStart}
	if _, err := c.Claim(context.Background(), claim); err == nil {
		t.Fatal("want the toucher's error")
	}
	f.err, f.answer = nil, "startup"
	if ans, _ := c.Claim(context.Background(), claim); ans.Source != "startup" {
		t.Errorf("after a failed touch the next claim = %+v, want it to ask again (startup)", ans)
	}
}

// A touch that stopped waiting for a starting run's SessionStart hooks is
// not cached: the next run asks again and gets the environment once the
// starting run reported it.
func TestClaimerDoesNotCacheAPendingEnvironment(t *testing.T) {
	f := &fakeToucher{}
	c := NewClaimer(f, 10*time.Minute)
	claim := activities.SessionClaim{ConversationID: "conv-1", UpdateID: "u", Mode: activities.ClaimStart}
	pending := &pendingToucher{fakeToucher: f, pending: true}
	c.Toucher = pending
	if _, err := c.Claim(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	pending.pending, f.env = false, "export A=1\n"
	ans, _ := c.Claim(context.Background(), claim)
	if ans.Cached || ans.Env != "export A=1\n" || len(f.touches) != 2 {
		t.Fatalf("claim after a pending answer = %+v after %d touches; want the session asked again", ans, len(f.touches))
	}
	if ans, _ := c.Claim(context.Background(), claim); !ans.Cached || ans.Env != "export A=1\n" {
		t.Fatalf("claim after a settled answer = %+v, want it cached", ans)
	}
}

// pendingToucher answers as a session still waiting for its start's
// environment.
type pendingToucher struct {
	*fakeToucher
	pending bool
}

func (p *pendingToucher) Touch(ctx context.Context, updateID string, t workflows.SessionTouch) (workflows.SessionTouchResult, error) {
	res, err := p.fakeToucher.Touch(ctx, updateID, t)
	res.EnvPending = p.pending
	return res, err
}
