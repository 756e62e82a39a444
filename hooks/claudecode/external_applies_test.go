package claudecode

import (
	"context"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// Session and compaction hooks whose matcher does not select the event
// (SessionStart "resume" at a startup, PreCompact "manual" at an automatic
// compaction) are not listed in the trace; the one that matches is.
func TestSessionAndCompactionHooksAreListedOnlyWhenTheirMatcherSelects(t *testing.T) {
	dir := t.TempDir()
	r := hooks.NewRegistry()
	for _, c := range []cmdHook{
		{Event: "SessionStart", Matcher: "resume", Command: "true", Name: "on-resume"},
		{Event: "SessionStart", Matcher: "startup", Command: "true", Name: "on-startup"},
		{Event: "PreCompact", Matcher: "manual", Command: "true", Name: "on-manual"},
	} {
		c.Dialect, c.Dir = DialectClaude, dir
		r.Add(newCommandHook(t, c))
	}
	s := hooks.Session{SessionID: "s1", WorkspaceRoot: dir}
	start := r.RunSessionStart(context.Background(), hooks.SessionStartEvent{Session: s, Source: hooks.SourceStartup})
	if len(start.Decisions) != 1 || start.Decisions[0].Hook != "on-startup" {
		t.Errorf("SessionStart startup listed %+v, want only on-startup", start.Decisions)
	}
	pre := r.RunPreCompact(context.Background(), hooks.PreCompactEvent{Session: s, Trigger: hooks.CompactAuto})
	if len(pre.Decisions) != 0 {
		t.Errorf("PreCompact auto listed %+v, want none", pre.Decisions)
	}
}
