package activities

import (
	"context"
	"errors"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

type fakeClaimer struct {
	source string
	err    error
	claims []SessionClaim
}

func (f *fakeClaimer) Claim(_ context.Context, c SessionClaim) (string, bool, error) {
	f.claims = append(f.claims, c)
	return f.source, false, f.err
}

// The SessionStart stage with a claim runs the run-scoped hooks, and the
// conversation-scoped ones only with the source the claim answers; a
// failed claim is traced and the run's hooks still run.
func TestSessionStartStageClaimsTheConversation(t *testing.T) {
	start := func(t *testing.T, c *fakeClaimer) (HookSummaryResult, int) {
		t.Helper()
		a, _ := hookActivities(t, oneHook("SessionStart", `echo "started by $(cat | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["session_id"], e["source"])')"`))
		a.Sessions = c
		ev := hooks.SessionStartEvent{Session: hooks.Session{SessionID: "assignment-1", ConversationID: "conv-1", ConversationSessionID: "conv-1"}, Source: hooks.SourceStartup}
		res, err := a.RunLifecycleHooks(context.Background(), LifecycleHooksInput{SessionStart: &ev, SessionScope: hooks.ScopeRun,
			Claim: &SessionClaim{ConversationID: "conv-1", UpdateID: "run-1/session-start", Mode: ClaimStart}})
		if err != nil {
			t.Fatal(err)
		}
		return res, len(res.Summary.Decisions)
	}
	res, n := start(t, &fakeClaimer{source: hooks.SourceResume})
	if n != 1 || res.Summary.AdditionalContext != "started by conv-1 resume" || res.Trace.Get("session_source") != "resume" {
		t.Errorf("claim answered resume: %d decisions, context %q, trace %v", n, res.Summary.AdditionalContext, res.Trace.Fields)
	}
	res, n = start(t, &fakeClaimer{})
	if n != 0 || res.Summary.AdditionalContext != "" {
		t.Errorf("claim answered none: %d decisions, context %q; want no Claude hook", n, res.Summary.AdditionalContext)
	}
	res, n = start(t, &fakeClaimer{err: errors.New("session unreachable")})
	if n != 0 || res.Trace.Get("session_claim_error") != "session unreachable" {
		t.Errorf("failed claim: %d decisions, trace %v; want no Claude hook and the error traced", n, res.Trace.Fields)
	}
}
