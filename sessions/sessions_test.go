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
	if c.Fresh("c1", t0) {
		t.Fatal("an unknown conversation is fresh")
	}
	c.Mark("c1", t0)
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {59 * time.Second, true}, {time.Minute, false}, {-time.Second, false}} {
		if got := c.Fresh("c1", t0.Add(tc.at)); got != tc.want {
			t.Errorf("Fresh at +%s = %v, want %v", tc.at, got, tc.want)
		}
	}
	if c.Fresh("c2", t0) {
		t.Error("another conversation is fresh")
	}
}

func TestCacheBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache(time.Minute)
	c.Size = 2
	c.Mark("old", t0)
	c.Mark("c1", t0.Add(2*time.Minute))
	c.Mark("c2", t0.Add(2*time.Minute))
	if c.Len() != 2 || c.Fresh("old", t0) {
		t.Errorf("after a third conversation: %d entries, old fresh %v; want 2 entries without the stale one", c.Len(), c.Fresh("old", t0))
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
	err     error
}

func (f *fakeToucher) Touch(_ context.Context, updateID string, t workflows.SessionTouch) (string, error) {
	f.touches = append(f.touches, updateID+"@"+t.ConversationID)
	return f.answer, f.err
}

func TestClaimerAsksOnlyOnMissOrStale(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeToucher{answer: "startup"}
	c := NewClaimer(f, 10*time.Minute)
	c.Now = func() time.Time { return now }
	claim := activities.SessionClaim{ConversationID: "conv-1", UpdateID: "run-1/session-start", Mode: activities.ClaimStart}

	src, cached, err := c.Claim(context.Background(), claim)
	if err != nil || src != "startup" || cached {
		t.Fatalf("first claim = %q cached %v err %v, want startup from the session", src, cached, err)
	}
	f.answer = ""
	now = now.Add(30 * time.Second)
	src, cached, _ = c.Claim(context.Background(), claim)
	if src != "" || !cached || len(f.touches) != 1 {
		t.Fatalf("second claim within refresh = %q cached %v after %d touches, want a cached answer and no touch", src, cached, len(f.touches))
	}
	now = now.Add(time.Minute)
	f.answer = "resume"
	src, cached, _ = c.Claim(context.Background(), claim)
	if src != "resume" || cached || len(f.touches) != 2 {
		t.Fatalf("stale claim = %q cached %v after %d touches, want the session's answer", src, cached, len(f.touches))
	}
}

func TestClaimerErrorIsNotCached(t *testing.T) {
	f := &fakeToucher{err: errors.New("unavailable")}
	c := NewClaimer(f, time.Minute)
	claim := activities.SessionClaim{ConversationID: "conv-1", UpdateID: "u", Mode: activities.ClaimStart}
	if _, _, err := c.Claim(context.Background(), claim); err == nil {
		t.Fatal("want the toucher's error")
	}
	f.err, f.answer = nil, "startup"
	if src, _, _ := c.Claim(context.Background(), claim); src != "startup" {
		t.Errorf("after a failed touch the next claim = %q, want it to ask again (startup)", src)
	}
}
