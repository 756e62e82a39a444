package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
)

// DefaultSessionIdleTimeout ends a conversation's session after this long
// without a run.
const DefaultSessionIdleTimeout = 30 * time.Minute

// sessionEndedRetention is how many idle timeouts an ended session
// remembers it existed (a day for the default 30 minutes), so the
// conversation going on fires SessionStart "resume" rather than "startup".
const sessionEndedRetention = 48

// sessionTouchesPerRun bounds a session's history: every touch is an
// update (a few events), so the session continues as new after this many.
const sessionTouchesPerRun = 500

// SessionTouch is a run of the conversation keeping its session alive.
type SessionTouch struct {
	ConversationID string `json:"conversation_id"`
	WorkspaceRoot  string `json:"workspace_root,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	// IdleTimeoutMS is the worker's session idle timeout.
	IdleTimeoutMS int64 `json:"idle_timeout_ms,omitempty"`
	// WritesEnv says the caller's SessionStart hooks may write
	// $CLAUDE_ENV_FILE: a touch that starts the session then holds the
	// other runs' touches until it reports the environment
	// (UpdateSessionEnv), at most sessionEnvWait.
	WritesEnv bool `json:"writes_env,omitempty"`
	// KeepAlive marks a touch that only keeps the session from idling
	// out (a long turn's steps): it resumes no ended session.
	KeepAlive bool `json:"keep_alive,omitempty"`
}

// SessionTouchResult says which SessionStart the conversation-scoped hooks
// must see: SourceStartup, SourceResume or none; and, when none, the
// session environment its SessionStart hooks wrote. EnvPending says
// those hooks were still running when the touch stopped waiting for them:
// the answer must not be cached, since the environment is still to come.
type SessionTouchResult struct {
	Source     string `json:"source,omitempty"`
	Env        string `json:"env,omitempty"`
	EnvPending bool   `json:"env_pending,omitempty"`
	// Ended answers a KeepAlive touch of an ended session, which it left
	// ended.
	Ended bool `json:"ended,omitempty"`
}

// SessionEnvRequest is what the session's SessionStart hooks wrote to
// $CLAUDE_ENV_FILE (hooks.JoinSessionEnv), "" for nothing.
type SessionEnvRequest struct {
	Env string `json:"env"`
}

// sessionEnvWait bounds how long a touch waits for the run that started
// the session to report its environment: under the toucher's 10 s, so
// the waiting run goes on (without it) rather than lose its claim.
const sessionEnvWait = 8 * time.Second

// sessionEnvPendingMax is how long a start's report is expected at all:
// a SessionStart stage is bounded by hookStageTimeout, so a run that has
// not reported by then never will (its worker died).
const sessionEnvPendingMax = hookStageTimeout

// EndSessionRequest is the kernel ending a conversation's session.
type EndSessionRequest struct {
	// Reason is one of hooks.EndReasons; empty means prompt_input_exit.
	Reason string `json:"reason,omitempty"`
}

// EndSessionResult reports whether this request ended the session.
type EndSessionResult struct {
	Ended  bool   `json:"ended"`
	Reason string `json:"reason,omitempty"`
	// Message explains a request that ended nothing.
	Message string `json:"message,omitempty"`
}

// ConversationSessionState is a session's durable state, carried across
// continue-as-new.
type ConversationSessionState struct {
	ConversationID string    `json:"conversation_id"`
	Started        bool      `json:"started"`
	Ended          bool      `json:"ended"`
	EndReason      string    `json:"end_reason,omitempty"`
	Sources        []string  `json:"sources,omitempty"`
	LastTouch      time.Time `json:"last_touch"`
	Touches        int       `json:"touches"`
	WorkspaceRoot  string    `json:"workspace_root,omitempty"`
	Cwd            string    `json:"cwd,omitempty"`
	IdleTimeoutMS  int64     `json:"idle_timeout_ms,omitempty"`
	// Env is what the session's SessionStart hooks wrote to
	// $CLAUDE_ENV_FILE; EnvPendingSince, when set, is when a touch
	// started the session whose hooks have not reported it yet.
	Env             string     `json:"env,omitempty"`
	EnvPendingSince *time.Time `json:"env_pending_since,omitempty"`
	// NetworkGrants are the destinations people allowed the
	// conversation's sandboxed commands, newest last, at most
	// maxNetworkGrants.
	NetworkGrants []activities.NetworkGrant `json:"network_grants,omitempty"`
}

// maxNetworkGrants bounds what a session remembers of allowed hosts (a
// run asks about 32 at most).
const maxNetworkGrants = 64

// ConversationSession is a conversation's Claude Code session: the first
// run of the conversation starts it (SessionStart "startup" for
// conversation-scoped hooks), later runs touch it, and it ends when the
// kernel sends fenix_end_session or nothing touched it for the idle
// timeout; then it runs the conversation-scoped SessionEnd hooks. An ended
// session waits 48 idle timeouts for the conversation to go on
// (SessionStart "resume") before it completes.
func ConversationSession(ctx workflow.Context, st ConversationSessionState) (ConversationSessionState, error) {
	c := &convSession{ctx: ctx, st: st, logger: workflow.GetLogger(ctx)}
	if err := c.setup(); err != nil {
		return st, err
	}
	return c.run()
}

type convSession struct {
	ctx    workflow.Context
	st     ConversationSessionState
	logger interface {
		Info(string, ...any)
		Warn(string, ...any)
	}
	// touched is set by a touch since the loop last waited.
	touched bool
	// ending is set while SessionEnd hooks run; touches wait for it.
	ending    bool
	endReason string
	endSeq    int
	endDone   int
	runTouch  int
}

func (c *convSession) setup() error {
	if err := workflow.SetQueryHandler(c.ctx, QuerySession, func() (ConversationSessionState, error) { return c.st, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(c.ctx, UpdateSessionTouch, c.touch); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(c.ctx, UpdateSessionEnv, c.setEnv, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, req SessionEnvRequest) error {
			if len(req.Env) > hooks.MaxSessionEnvBytes {
				return fmt.Errorf("session environment of %d bytes is over the limit of %d", len(req.Env), hooks.MaxSessionEnvBytes)
			}
			return nil
		}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(c.ctx, UpdateSessionNetworkGrant, c.grantNetwork, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, g activities.NetworkGrant) error {
			if g.Dest == "" || len(g.Dest) > maxNetworkHostBytes+6 || len(g.DecidedBy) > MaxDeciderBytes || len(g.RunID) > contract.EchoStringBytes {
				return fmt.Errorf("a network grant names a host:port of 1 to %d bytes, a decider of at most %d and a run of at most %d",
					maxNetworkHostBytes+6, MaxDeciderBytes, contract.EchoStringBytes)
			}
			return nil
		}}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(c.ctx, UpdateEndSession, c.end, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, req EndSessionRequest) error {
			if req.Reason != "" && !slices.Contains(hooks.EndReasons, req.Reason) {
				return fmt.Errorf("session end reason %q is not one of %v", req.Reason, hooks.EndReasons)
			}
			return nil
		}})
}

// touch answers which SessionStart the caller fires and restarts the idle
// timer.
func (c *convSession) touch(ctx workflow.Context, t SessionTouch) (SessionTouchResult, error) {
	if err := workflow.Await(ctx, func() bool { return !c.ending }); err != nil {
		return SessionTouchResult{}, err
	}
	pending, err := c.awaitEnv(ctx)
	if err != nil {
		return SessionTouchResult{}, err
	}
	if t.KeepAlive && c.st.Ended {
		// A run going on after its session ended (a turn longer than the
		// idle timeout) does not resume it: a keep-alive fires no
		// SessionStart, and the session would go on as if it had, its
		// next run told it was going. The conversation's next run resumes
		// it, with SessionStart "resume".
		return SessionTouchResult{Ended: true}, nil
	}
	out := SessionTouchResult{EnvPending: pending}
	switch {
	case !c.st.Started:
		out.Source = hooks.SourceStartup
	case c.st.Ended:
		out.Source = hooks.SourceResume
	}
	if out.Source != "" {
		c.st.Sources = append(c.st.Sources, out.Source)
		if len(c.st.Sources) > 20 {
			c.st.Sources = c.st.Sources[len(c.st.Sources)-20:]
		}
		// A new session: its SessionStart hooks write its environment anew.
		c.st.Env, c.st.EnvPendingSince = "", nil
		if t.WritesEnv {
			now := workflow.Now(ctx).UTC()
			c.st.EnvPendingSince = &now
		}
	}
	out.Env = c.st.Env
	c.st.Started, c.st.Ended, c.st.EndReason = true, false, ""
	c.st.LastTouch = workflow.Now(ctx).UTC()
	c.st.Touches++
	c.runTouch++
	if t.WorkspaceRoot != "" {
		c.st.WorkspaceRoot, c.st.Cwd = t.WorkspaceRoot, t.Cwd
	}
	if t.IdleTimeoutMS > 0 {
		c.st.IdleTimeoutMS = t.IdleTimeoutMS
	}
	c.touched = true
	return out, nil
}

// awaitEnv holds a touch while the run that started the session has not
// reported what its SessionStart hooks wrote, for at most sessionEnvWait
// after the start (Claude Code runs no command before SessionStart ends),
// and reports whether the report is still to come. A run that has not
// reported within sessionEnvPendingMax never will: the session stops
// expecting it.
func (c *convSession) awaitEnv(ctx workflow.Context) (pending bool, err error) {
	if c.st.EnvPendingSince == nil {
		return false, nil
	}
	since := *c.st.EnvPendingSince
	if left := since.Add(sessionEnvWait).Sub(workflow.Now(ctx)); left > 0 {
		if _, err := workflow.AwaitWithTimeout(ctx, left, func() bool { return c.st.EnvPendingSince == nil }); err != nil {
			return false, err
		}
	}
	switch {
	case c.st.EnvPendingSince == nil:
		return false, nil
	case workflow.Now(ctx).Sub(since) >= sessionEnvPendingMax:
		c.logger.Warn("the run that started the session never reported its SessionStart environment; no longer expecting it",
			"conversation_id", c.st.ConversationID, "expected_within", sessionEnvPendingMax)
		c.st.EnvPendingSince = nil
		return false, nil
	}
	return true, nil
}

// setEnv records what the session's SessionStart hooks wrote to
// $CLAUDE_ENV_FILE and releases the touches waiting for it.
func (c *convSession) setEnv(_ workflow.Context, req SessionEnvRequest) error {
	c.st.Env, c.st.EnvPendingSince = req.Env, nil
	return nil
}

// grantNetwork remembers an allowed destination (replacing an earlier
// grant of it) and keeps the session from idling out meanwhile.
func (c *convSession) grantNetwork(_ workflow.Context, g activities.NetworkGrant) error {
	c.st.NetworkGrants = slices.DeleteFunc(c.st.NetworkGrants, func(old activities.NetworkGrant) bool { return old.Dest == g.Dest })
	c.st.NetworkGrants = append(c.st.NetworkGrants, g)
	if len(c.st.NetworkGrants) > maxNetworkGrants {
		c.st.NetworkGrants = c.st.NetworkGrants[len(c.st.NetworkGrants)-maxNetworkGrants:]
	}
	c.runTouch++
	c.touched = true
	return nil
}

// end asks the main loop to end the session and waits until it did.
func (c *convSession) end(ctx workflow.Context, req EndSessionRequest) (EndSessionResult, error) {
	if err := workflow.Await(ctx, func() bool { return !c.ending }); err != nil {
		return EndSessionResult{}, err
	}
	if !c.st.Started || c.st.Ended {
		return EndSessionResult{Message: fmt.Sprintf("the session of conversation %q is not running (it ended: %s)", c.st.ConversationID, c.st.EndReason)}, nil
	}
	reason := req.Reason
	if reason == "" {
		reason = hooks.EndReasonPromptInputExit
	}
	c.endSeq++
	seq := c.endSeq
	c.endReason = reason
	if err := workflow.Await(ctx, func() bool { return c.endDone >= seq }); err != nil {
		return EndSessionResult{}, err
	}
	return EndSessionResult{Ended: true, Reason: reason}, nil
}

func (c *convSession) idle() time.Duration {
	if c.st.IdleTimeoutMS > 0 {
		return time.Duration(c.st.IdleTimeoutMS) * time.Millisecond
	}
	return DefaultSessionIdleTimeout
}

func (c *convSession) run() (ConversationSessionState, error) {
	for {
		wait := c.idle()
		if c.st.Ended {
			wait = sessionEndedRetention * c.idle()
		}
		c.touched = false
		ok, err := workflow.AwaitWithTimeout(c.ctx, wait, func() bool { return c.touched || c.endSeq > c.endDone })
		if err != nil {
			return c.st, err
		}
		switch {
		case c.endSeq > c.endDone:
			c.finish(c.endReason)
			c.endDone = c.endSeq
		case !ok && (c.st.Ended || !c.st.Started):
			// Nobody went on with the conversation (or nobody ever
			// touched this session): forget it.
			return c.st, workflow.Await(c.ctx, func() bool { return workflow.AllHandlersFinished(c.ctx) })
		case !ok:
			c.finish(hooks.EndReasonOther)
		}
		if c.runTouch >= sessionTouchesPerRun || workflow.GetInfo(c.ctx).GetContinueAsNewSuggested() {
			if err := workflow.Await(c.ctx, func() bool { return workflow.AllHandlersFinished(c.ctx) }); err != nil {
				return c.st, err
			}
			return c.st, workflow.NewContinueAsNewError(c.ctx, ConversationSessionWorkflow, c.st)
		}
	}
}

// finish runs the conversation-scoped SessionEnd hooks. They observe; a
// failure is logged and the session ends all the same.
func (c *convSession) finish(reason string) {
	c.ending = true
	defer func() { c.ending = false }()
	info := workflow.GetInfo(c.ctx)
	ev := hooks.SessionStopEvent{
		Session: hooks.Session{SessionID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
			ConversationID: c.st.ConversationID, ConversationSessionID: c.st.ConversationID,
			WorkspaceRoot: c.st.WorkspaceRoot, Cwd: c.st.Cwd},
		StopReason: hooks.StopCompleted, Reason: reason,
	}
	opts := stageOptions("SessionEnd: "+reason, hookStageTimeout)
	var res activities.HookSummaryResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(c.ctx, opts), acts.RunLifecycleHooks,
		activities.LifecycleHooksInput{SessionStop: &ev, SessionScope: hooks.ScopeConversation}).Get(c.ctx, &res)
	if err != nil {
		c.logger.Warn("SessionEnd hooks failed", "conversation_id", c.st.ConversationID, "error", err)
	}
	c.st.Ended, c.st.EndReason = true, reason
	c.logger.Info("conversation session ended", "conversation_id", c.st.ConversationID, "reason", reason)
}
