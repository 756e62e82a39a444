package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/workflows"
)

// Toucher delivers a touch to a conversation's session and returns its
// answer: the source its SessionStart hooks must fire with ("" for none)
// and the session environment. SetEnv reports the environment a run's
// SessionStart hooks wrote; Env reads it without touching the session.
type Toucher interface {
	Touch(ctx context.Context, updateID string, t workflows.SessionTouch) (workflows.SessionTouchResult, error)
	SetEnv(ctx context.Context, conversationID, updateID, env string) error
	Env(ctx context.Context, conversationID string) (string, error)
}

// Claimer answers session claims from the cache, asking Toucher on a miss.
type Claimer struct {
	Cache   *Cache
	Toucher Toucher
	// Idle is the session idle timeout the sessions are started with.
	Idle time.Duration
	Now  func() time.Time
}

var _ activities.SessionClaimer = (*Claimer)(nil)

// NewClaimer returns a claimer with a cache sized for idle.
func NewClaimer(t Toucher, idle time.Duration) *Claimer {
	return &Claimer{Cache: NewCache(RefreshFor(idle)), Toucher: t, Idle: idle, Now: time.Now}
}

// Claim implements activities.SessionClaimer.
func (c *Claimer) Claim(ctx context.Context, req activities.SessionClaim) (activities.ClaimAnswer, error) {
	if req.ConversationID == "" {
		return activities.ClaimAnswer{}, errors.New("session claim without a conversation_id")
	}
	now := c.Now()
	if env, fresh := c.Cache.Fresh(req.ConversationID, now); fresh {
		return activities.ClaimAnswer{Env: env, Cached: true}, nil
	}
	if req.Mode == activities.ClaimRead {
		env, err := c.Toucher.Env(ctx, req.ConversationID)
		return activities.ClaimAnswer{Env: env}, err
	}
	res, err := c.Toucher.Touch(ctx, req.UpdateID, workflows.SessionTouch{ConversationID: req.ConversationID,
		WorkspaceRoot: req.WorkspaceRoot, Cwd: req.Cwd, IdleTimeoutMS: c.Idle.Milliseconds(), WritesEnv: req.WritesEnv,
		KeepAlive: req.Mode == activities.ClaimTouch})
	if err != nil {
		return activities.ClaimAnswer{}, err
	}
	if res.Ended {
		// Left ended: the next run's claim must ask, and resume it.
		c.Cache.Forget(req.ConversationID)
		return activities.ClaimAnswer{}, nil
	}
	if !res.EnvPending {
		// While the session's environment is still to come, the next
		// run asks again rather than go on without it for a whole
		// freshness window.
		c.Cache.Mark(req.ConversationID, now, res.Env)
	}
	return activities.ClaimAnswer{Source: res.Source, Env: res.Env}, nil
}

// SetEnv implements activities.SessionClaimer: the session learns the
// environment, and so does this worker's cache.
func (c *Claimer) SetEnv(ctx context.Context, conversationID, updateID, env string) error {
	if err := c.Toucher.SetEnv(ctx, conversationID, updateID, env); err != nil {
		return err
	}
	c.Cache.SetEnv(conversationID, env)
	return nil
}

// DefaultTouchTimeout bounds a touch: a run waits at most this long for
// its session's answer before it goes on without conversation hooks.
const DefaultTouchTimeout = 10 * time.Second

// TemporalToucher touches the ConversationSession workflow with
// Update-With-Start: it starts the session if none is running.
type TemporalToucher struct {
	Client    client.Client
	TaskQueue string
	// Timeout defaults to DefaultTouchTimeout.
	Timeout time.Duration
}

// Touch implements Toucher.
func (t TemporalToucher) Touch(ctx context.Context, updateID string, touch workflows.SessionTouch) (workflows.SessionTouchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	id := workflows.SessionWorkflowID(t.TaskQueue, touch.ConversationID)
	h, err := t.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: startSession(t.Client, t.TaskQueue, touch.ConversationID, 0),
		UpdateOptions: client.UpdateWorkflowOptions{UpdateID: updateID, UpdateName: workflows.UpdateSessionTouch,
			Args: []any{touch}, WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	if err != nil {
		return workflows.SessionTouchResult{}, fmt.Errorf("touch session %s: %w", id, err)
	}
	var res workflows.SessionTouchResult
	if err := h.Get(ctx, &res); err != nil {
		return workflows.SessionTouchResult{}, fmt.Errorf("touch session %s: %w", id, err)
	}
	return res, nil
}

// startSession starts the conversation's session if none is running, for
// an Update-With-Start; idle, when set, is its idle timeout until a touch
// sets it.
func startSession(c client.Client, taskQueue, conversationID string, idle time.Duration) client.WithStartWorkflowOperation {
	return c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       workflows.SessionWorkflowID(taskQueue, conversationID),
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            "Claude Code session of conversation " + conversationID,
	}, workflows.ConversationSessionWorkflow, workflows.ConversationSessionState{ConversationID: conversationID, IdleTimeoutMS: idle.Milliseconds()})
}

// SetEnv implements Toucher with the session's UpdateSessionEnv.
func (t TemporalToucher) SetEnv(ctx context.Context, conversationID, updateID, env string) error {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	id := workflows.SessionWorkflowID(t.TaskQueue, conversationID)
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: updateID,
		UpdateName: workflows.UpdateSessionEnv, Args: []any{workflows.SessionEnvRequest{Env: env}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("report the session environment to %s: %w", id, err)
	}
	return nil
}

// Env implements Toucher with the session's QuerySession; a conversation
// without a session has none.
func (t TemporalToucher) Env(ctx context.Context, conversationID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	st, err := State(ctx, t.Client, t.TaskQueue, conversationID)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return "", nil
	}
	return st.Env, err
}

// State reads a conversation's session (QuerySession); a conversation
// without one is a *serviceerror.NotFound.
func State(ctx context.Context, c client.Client, taskQueue, conversationID string) (workflows.ConversationSessionState, error) {
	id := workflows.SessionWorkflowID(taskQueue, conversationID)
	var st workflows.ConversationSessionState
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QuerySession)
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		return st, fmt.Errorf("read the session %s: %w", id, err)
	}
	return st, nil
}

func (t TemporalToucher) timeout() time.Duration { return orTouchTimeout(t.Timeout) }

// orTouchTimeout is d, or DefaultTouchTimeout when unset.
func orTouchTimeout(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return DefaultTouchTimeout
}

// End ends a conversation's session (the kernel's request): its SessionEnd
// hooks have run when End returns with Ended set.
func End(ctx context.Context, c client.Client, taskQueue, conversationID, reason string) (workflows.EndSessionResult, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: workflows.SessionWorkflowID(taskQueue, conversationID),
		UpdateName: workflows.UpdateEndSession, Args: []any{workflows.EndSessionRequest{Reason: reason}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return workflows.EndSessionResult{}, fmt.Errorf("end the session of conversation %q: %w", conversationID, err)
	}
	var res workflows.EndSessionResult
	if err := h.Get(ctx, &res); err != nil {
		return res, fmt.Errorf("end the session of conversation %q: %w", conversationID, err)
	}
	return res, nil
}
