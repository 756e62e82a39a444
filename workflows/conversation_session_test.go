package workflows_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/sessions"
	"github.com/fenixrt/fenix/workflows"
)

// sessionRecorder records SessionStart/SessionStop and tool events; with
// conversation set it follows the conversation like a Claude dialect hook.
type sessionRecorder struct {
	hooks.Base
	name         string
	conversation bool
	mu           sync.Mutex
	starts       []hooks.SessionStartEvent
	stops        []hooks.SessionStopEvent
	pre          []hooks.PreToolUseEvent
}

func (r *sessionRecorder) Name() string             { return r.name }
func (r *sessionRecorder) ConversationScoped() bool { return r.conversation }

func (r *sessionRecorder) OnSessionStart(_ context.Context, ev hooks.SessionStartEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, ev)
	return nil
}

func (r *sessionRecorder) OnSessionStop(_ context.Context, ev hooks.SessionStopEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stops = append(r.stops, ev)
	return nil
}

func (r *sessionRecorder) PreToolUse(_ context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pre = append(r.pre, ev)
	return hooks.Continue(), nil
}

func (r *sessionRecorder) sources() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.starts {
		out = append(out, s.Source)
	}
	return out
}

// fakeSessions plays the ConversationSession workflow's touch answers.
type fakeSessions struct {
	mu      sync.Mutex
	started map[string]bool
	envs    map[string]string
	touches int
}

func (f *fakeSessions) Touch(_ context.Context, _ string, t workflows.SessionTouch) (workflows.SessionTouchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touches++
	if f.started == nil {
		f.started = map[string]bool{}
	}
	if f.started[t.ConversationID] {
		return workflows.SessionTouchResult{Env: f.envs[t.ConversationID]}, nil
	}
	f.started[t.ConversationID] = true
	return workflows.SessionTouchResult{Source: hooks.SourceStartup}, nil
}

func (f *fakeSessions) SetEnv(_ context.Context, conversationID, _, env string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.envs == nil {
		f.envs = map[string]string{}
	}
	f.envs[conversationID] = env
	return nil
}

func (f *fakeSessions) Env(_ context.Context, conversationID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.envs[conversationID], nil
}

type sessionFixture struct {
	claude, fenix *sessionRecorder
	claimer       *sessions.Claimer
	fake          *fakeSessions
}

func newSessionFixture() *sessionFixture {
	f := &sessionFixture{claude: &sessionRecorder{name: "claude", conversation: true}, fenix: &sessionRecorder{name: "fenix"}, fake: &fakeSessions{}}
	f.claimer = sessions.NewClaimer(f.fake, 30*time.Minute)
	return f
}

func (f *sessionFixture) install(h *harness) {
	r := hooks.NewRegistry()
	r.Add(f.claude)
	r.Add(f.fenix)
	h.acts.Hooks = r
	h.acts.Sessions = f.claimer
}

// Two assignments of one conversation fire the conversation's SessionStart
// once (startup) and no conversation SessionEnd; the Fenix dialect hook
// keeps its SessionStart/SessionStop per run; another conversation gets
// its own SessionStart. The second assignment costs no touch (cache).
func TestConversationSessionStartOncePerConversation(t *testing.T) {
	f := newSessionFixture()
	for i, conv := range []string{"conv-1", "conv-1", "conv-2"} {
		h := newHarness(t)
		f.install(h)
		a := calculatorAssignment()
		a["conversation_id"] = conv
		res := h.executeAssignment(t, a)
		require.Equal(t, contract.StatusCompleted, res.Status, "assignment %d: %+v", i, res.Error)
	}
	assert.Equal(t, []string{"startup", "startup"}, f.claude.sources(), "conversation SessionStart: once per conversation")
	assert.Empty(t, f.claude.stops, "no conversation SessionEnd at the end of a run")
	assert.Equal(t, []string{"startup", "startup", "startup"}, f.fenix.sources(), "Fenix SessionStart: once per run")
	assert.Len(t, f.fenix.stops, 3)
	assert.Equal(t, 2, f.fake.touches, "the second assignment of conv-1 is answered from the cache")
	for _, ev := range f.claude.starts {
		assert.Equal(t, ev.ConversationID, ev.ConversationSessionID)
	}
}

// A subagent fires no conversation SessionStart/SessionStop; its tool
// events carry the parent's session and the conversation as session.
func TestSubagentHasNoConversationSession(t *testing.T) {
	f := newSessionFixture()
	h := agentHarness(t)
	f.install(h)
	res := h.runTurn(t, turnRequest("delegating", 5))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	assert.Equal(t, []string{"startup"}, f.claude.sources(), "only the parent starts the conversation's session")
	assert.Equal(t, []string{"startup", "startup"}, f.fenix.sources(), "Fenix SessionStart in parent and subagent")
	var child *hooks.PreToolUseEvent
	for i, ev := range f.claude.pre {
		if ev.IsSubagent {
			child = &f.claude.pre[i]
		}
	}
	require.NotNil(t, child, "the subagent's PreToolUse")
	require.NotNil(t, child.Parent)
	assert.Equal(t, f.claude.starts[0].SessionID, child.Parent.SessionID, "the subagent's parent session is the parent run")
	assert.Equal(t, "conv-agent", child.ConversationSessionID)
}

// The session workflow: the first touch starts it, idling ends it
// (SessionEnd reason other), the next touch resumes it, and the kernel's
// end runs SessionEnd with its reason; an ended session left alone
// completes after the retention.
func TestConversationSessionWorkflow(t *testing.T) {
	h := newHarness(t)
	f := newSessionFixture()
	f.install(h)
	h.env.RegisterWorkflowWithOptions(workflows.ConversationSession, workflow.RegisterOptions{Name: workflows.ConversationSessionWorkflow})
	idle := 10 * time.Minute
	var answers []string
	touchAs := func(id string, keepAlive bool) {
		h.env.UpdateWorkflow(workflows.UpdateSessionTouch, id, &updateCallback{t: t, onResult: func(r workflows.SessionTouchResult) {
			if r.Ended {
				answers = append(answers, "ended")
				return
			}
			answers = append(answers, r.Source)
		}}, workflows.SessionTouch{ConversationID: "conv-s", WorkspaceRoot: h.acts.DefaultWorkspaceRoot, IdleTimeoutMS: idle.Milliseconds(), KeepAlive: keepAlive})
	}
	touch := func(id string) { touchAs(id, false) }
	var ended workflows.EndSessionResult
	h.env.RegisterDelayedCallback(func() { touch("t1") }, time.Second)
	h.env.RegisterDelayedCallback(func() { touch("t2") }, 2*time.Second)
	// idle expiry at ~12m; a long turn's step then keeps nothing alive:
	// it does not resume the ended session, which the next run does.
	h.env.RegisterDelayedCallback(func() { touchAs("keep", true) }, 15*time.Minute)
	h.env.RegisterDelayedCallback(func() { touch("t3") }, 20*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(workflows.UpdateEndSession, "end", &updateCallback{t: t, onResult: func(r workflows.EndSessionResult) { ended = r }},
			workflows.EndSessionRequest{Reason: hooks.EndReasonPromptInputExit})
	}, 21*time.Minute)
	h.env.ExecuteWorkflow(workflows.ConversationSessionWorkflow, workflows.ConversationSessionState{ConversationID: "conv-s"})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())

	assert.Equal(t, []string{"startup", "", "ended", "resume"}, answers)
	assert.True(t, ended.Ended)
	require.Len(t, f.claude.stops, 2)
	assert.Equal(t, hooks.EndReasonOther, f.claude.stops[0].Reason)
	assert.Equal(t, hooks.EndReasonPromptInputExit, f.claude.stops[1].Reason)
	assert.Equal(t, "conv-s", f.claude.stops[0].ConversationSessionID)
	assert.Empty(t, f.fenix.stops, "the conversation's end is not for Fenix dialect hooks")
}

// updateCallback adapts a typed result handler to the test env.
type updateCallback struct {
	t        *testing.T
	onResult any
}

func (u *updateCallback) Accept()        {}
func (u *updateCallback) Reject(e error) { u.t.Errorf("update rejected: %v", e) }
func (u *updateCallback) Complete(success any, err error) {
	if err != nil {
		u.t.Errorf("update failed: %v", err)
		return
	}
	switch f := u.onResult.(type) {
	case func(workflows.SessionTouchResult):
		f(success.(workflows.SessionTouchResult))
	case func(workflows.EndSessionResult):
		f(success.(workflows.EndSessionResult))
	}
}

// A main agent's compacted context fires the conversation's SessionStart
// "compact" (after "startup"); Fenix dialect hooks do not see it.
func TestCompactionFiresSessionStartCompact(t *testing.T) {
	f := newSessionFixture()
	h := agentHarness(t)
	f.install(h)
	req := turnRequest("answer", 5)
	req["context_messages"] = []map[string]any{
		{"role": "user", "content": "first question with many words in it"},
		{"role": "user", "content": "more words about the first question, and more"},
		{"role": "user", "content": "second question with many words in it"},
		{"role": "user", "content": "second question"},
	}
	req["budget_hints"] = map[string]any{"advisory_hints": map[string]any{"recommended_compaction_threshold": 10}}
	res := h.runTurn(t, req)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.NotNil(t, findTrace(res.Trace, "post_compact"), "the context was compacted")
	assert.Equal(t, []string{"startup", "compact"}, f.claude.sources())
	assert.Equal(t, []string{"startup"}, f.fenix.sources())
}

// A session nobody touches (started by hand) completes after one idle
// timeout instead of waiting forever.
func TestUntouchedConversationSessionCompletes(t *testing.T) {
	h := newHarness(t)
	h.env.RegisterWorkflowWithOptions(workflows.ConversationSession, workflow.RegisterOptions{Name: workflows.ConversationSessionWorkflow})
	h.env.ExecuteWorkflow(workflows.ConversationSessionWorkflow, workflows.ConversationSessionState{ConversationID: "conv-u"})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var st workflows.ConversationSessionState
	require.NoError(t, h.env.GetWorkflowResult(&st))
	assert.False(t, st.Started)
	assert.Zero(t, h.count("RunLifecycleHooks"), "no SessionEnd for a session that never started")
}

// rejectingCallback records an update's rejection.
type rejectingCallback struct {
	rejected error
}

func (r *rejectingCallback) Accept()             {}
func (r *rejectingCallback) Reject(e error)      { r.rejected = e }
func (r *rejectingCallback) Complete(any, error) {}

// The session's environment: a touch that starts the session for hooks
// that write $CLAUDE_ENV_FILE holds the next touch until the report
// (which answers it with the environment); an oversized report is refused
// naming the limit; after a resume whose run never reports, a touch gives
// up waiting after 8 s and says the environment is still to come, and one
// after the SessionStart stage's bound no longer expects it.
func TestConversationSessionEnvironment(t *testing.T) {
	h := newHarness(t)
	h.env.RegisterWorkflowWithOptions(workflows.ConversationSession, workflow.RegisterOptions{Name: workflows.ConversationSessionWorkflow})
	type answer struct {
		at  time.Duration
		res workflows.SessionTouchResult
	}
	var answers []answer
	start := h.env.Now()
	touch := func(id string, writes bool) {
		h.env.UpdateWorkflow(workflows.UpdateSessionTouch, id, &updateCallback{t: t, onResult: func(r workflows.SessionTouchResult) {
			answers = append(answers, answer{h.env.Now().Sub(start).Round(time.Second), r})
		}}, workflows.SessionTouch{ConversationID: "conv-e", IdleTimeoutMS: time.Hour.Milliseconds(), WritesEnv: writes})
	}
	report := func(id, env string, cb interface {
		Accept()
		Reject(error)
		Complete(any, error)
	}) {
		h.env.UpdateWorkflow(workflows.UpdateSessionEnv, id, cb, workflows.SessionEnvRequest{Env: env})
	}
	oversized := &rejectingCallback{}
	h.env.RegisterDelayedCallback(func() { touch("start", true) }, time.Second)
	h.env.RegisterDelayedCallback(func() { touch("waits", false) }, 2*time.Second)
	h.env.RegisterDelayedCallback(func() { report("start/env", "export A=1\n", &updateCallback{t: t}) }, 5*time.Second)
	h.env.RegisterDelayedCallback(func() { report("huge", strings.Repeat("x", 70<<10), oversized) }, 6*time.Second)
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(workflows.UpdateEndSession, "end", &updateCallback{t: t}, workflows.EndSessionRequest{})
	}, 7*time.Second)
	h.env.RegisterDelayedCallback(func() { touch("resume", true) }, 10*time.Second)
	h.env.RegisterDelayedCallback(func() { touch("gives-up", false) }, 11*time.Second)
	h.env.RegisterDelayedCallback(func() { touch("after-bound", false) }, 10*time.Second+6*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(workflows.UpdateEndSession, "end-2", &updateCallback{t: t}, workflows.EndSessionRequest{})
	}, 11*time.Second+6*time.Minute)
	h.env.ExecuteWorkflow(workflows.ConversationSessionWorkflow, workflows.ConversationSessionState{ConversationID: "conv-e"})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())

	require.Len(t, answers, 5)
	assert.Equal(t, answer{time.Second, workflows.SessionTouchResult{Source: "startup"}}, answers[0])
	assert.Equal(t, answer{5 * time.Second, workflows.SessionTouchResult{Env: "export A=1\n"}}, answers[1], "held until the report")
	assert.Equal(t, answer{10 * time.Second, workflows.SessionTouchResult{Source: "resume"}}, answers[2], "a new session: no old env")
	assert.Equal(t, answer{18 * time.Second, workflows.SessionTouchResult{EnvPending: true}}, answers[3], "gives up 8 s after the start")
	assert.Equal(t, answer{10*time.Second + 6*time.Minute, workflows.SessionTouchResult{}}, answers[4], "no longer expected")
	require.Error(t, oversized.rejected)
	assert.Contains(t, oversized.rejected.Error(), "over the limit of 65536")
}

// A conversation remembers the hosts people allowed its sandboxed
// commands: the latest grant of a destination replaces an earlier one,
// at most 64 are kept, and a session that only holds grants (no hook
// follows the conversation) lasts an idle timeout past its last grant,
// then ends without SessionEnd hooks.
func TestConversationSessionRemembersAllowedHosts(t *testing.T) {
	h := newHarness(t)
	f := newSessionFixture()
	f.install(h)
	h.env.RegisterWorkflowWithOptions(workflows.ConversationSession, workflow.RegisterOptions{Name: workflows.ConversationSessionWorkflow})
	grant := func(id, dest, who string) {
		h.env.UpdateWorkflow(workflows.UpdateSessionNetworkGrant, id, &updateCallback{t: t},
			activities.NetworkGrant{Dest: dest, DecidedBy: who, RunID: "assignment-w-1", At: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)})
	}
	var tooLong *updateOutcome
	var st workflows.ConversationSessionState
	h.env.RegisterDelayedCallback(func() {
		grant("g1", "pypi.org:443", "ana")
		grant("g2", "registry.npmjs.org:443", "ana")
		grant("g3", "pypi.org:443", "bo")
		for i := range 70 {
			grant(fmt.Sprintf("many-%d", i), fmt.Sprintf("h%d.example:443", i), "ana")
		}
		grant("g4", "registry.npmjs.org:443", "cy")
		tooLong = sendUpdate[any](h, workflows.UpdateSessionNetworkGrant, "too-long", activities.NetworkGrant{Dest: strings.Repeat("h", 300), DecidedBy: "ana"})
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QuerySession)
		require.NoError(t, err)
		require.NoError(t, v.Get(&st))
	}, 2*time.Minute)
	h.env.ExecuteWorkflow(workflows.ConversationSessionWorkflow, workflows.ConversationSessionState{ConversationID: "conv-g"})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())

	require.Len(t, st.NetworkGrants, 64)
	last := st.NetworkGrants[63]
	assert.Equal(t, "registry.npmjs.org:443", last.Dest)
	assert.Equal(t, "cy", last.DecidedBy, "the latest grant of a destination replaces the earlier one")
	for _, g := range st.NetworkGrants {
		assert.NotEqual(t, "pypi.org:443", g.Dest, "the oldest grants are the ones forgotten")
	}
	require.Error(t, tooLong.rejected)
	assert.Contains(t, tooLong.rejected.Error(), "a network grant names a host:port of 1 to")
	assert.Empty(t, f.claude.stops, "a session nobody started ends without SessionEnd hooks")
}
