package activities

import (
	"context"
	"errors"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

type fakeClaimer struct {
	source string
	env    string
	err    error
	claims []SessionClaim
	// envs are the environments reported with SetEnv, by update ID.
	envs map[string]string
}

func (f *fakeClaimer) Claim(_ context.Context, c SessionClaim) (ClaimAnswer, error) {
	f.claims = append(f.claims, c)
	return ClaimAnswer{Source: f.source, Env: f.env}, f.err
}

func (f *fakeClaimer) SetEnv(_ context.Context, conversationID, updateID, env string) error {
	if f.envs == nil {
		f.envs = map[string]string{}
	}
	f.envs[conversationID+" "+updateID] = env
	return nil
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

// The SessionStart stage answers the session environment its run's
// commands get: what the conversation's hooks wrote when they fired (and
// then reported to the session under an ID derived from the claim), else
// what the session holds; a subagent's read claim only reads it.
func TestSessionStartStageAnswersTheSessionEnvironment(t *testing.T) {
	stage := func(t *testing.T, c *fakeClaimer, mode string) HookSummaryResult {
		t.Helper()
		a, _ := hookActivities(t, oneHook("SessionStart", `echo 'export FROM_HOOK=yes' >> "$CLAUDE_ENV_FILE"`))
		a.Sessions = c
		ev := hooks.SessionStartEvent{Session: hooks.Session{SessionID: "assignment-1", ConversationID: "conv-1", ConversationSessionID: "conv-1"}, Source: hooks.SourceStartup}
		res, err := a.RunLifecycleHooks(context.Background(), LifecycleHooksInput{SessionStart: &ev, SessionScope: hooks.ScopeRun,
			Claim: &SessionClaim{ConversationID: "conv-1", UpdateID: "run-1/session-start", Mode: mode}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	started := &fakeClaimer{source: hooks.SourceStartup}
	res := stage(t, started, ClaimStart)
	if res.Summary.SessionEnv != "export FROM_HOOK=yes\n" || res.Trace.Get("session_env_bytes") != len("export FROM_HOOK=yes\n") {
		t.Fatalf("starting run: env %q, trace %v", res.Summary.SessionEnv, res.Trace.Fields)
	}
	if !started.claims[0].WritesEnv || started.envs["conv-1 run-1/session-start/env"] != "export FROM_HOOK=yes\n" {
		t.Fatalf("starting run: claims %+v, reported %v; want WritesEnv and the env reported", started.claims, started.envs)
	}

	going := &fakeClaimer{env: "export STORED=1\n"}
	res = stage(t, going, ClaimStart)
	if res.Summary.SessionEnv != "export STORED=1\n" || len(going.envs) != 0 || len(res.Summary.Decisions) != 0 {
		t.Fatalf("later run: env %q, reported %v, %d decisions; want the session's env, no hook, no report", res.Summary.SessionEnv, going.envs, len(res.Summary.Decisions))
	}

	reader := &fakeClaimer{source: hooks.SourceStartup, env: "export STORED=1\n"}
	res = stage(t, reader, ClaimRead)
	if res.Summary.SessionEnv != "export STORED=1\n" || len(reader.envs) != 0 || len(res.Summary.Decisions) != 0 || reader.claims[0].WritesEnv {
		t.Fatalf("subagent: env %q, reported %v, %d decisions, claim %+v; want the session's env and nothing fired", res.Summary.SessionEnv, reader.envs, len(res.Summary.Decisions), reader.claims[0])
	}
}
