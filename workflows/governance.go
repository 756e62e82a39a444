package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
)

// DefaultPermissionTimeout is how long a PermissionRequired tool call waits
// for decide_permission before it is denied.
const DefaultPermissionTimeout = 10 * time.Minute

// hookStageTimeout bounds a hook stage; command hooks have their own,
// shorter per-hook timeouts.
const hookStageTimeout = 5 * time.Minute

// PendingPermission is a tool call parked until a human decides.
type PendingPermission struct {
	CallID      string         `json:"call_id"`
	ToolName    string         `json:"tool_name"`
	Permission  string         `json:"permission"`
	RequestedBy string         `json:"requested_by,omitempty"`
	Arguments   map[string]any `json:"arguments"`
	RequestedAt time.Time      `json:"requested_at"`
	Deadline    time.Time      `json:"deadline"`
	// Since shapeInbox: what the inbox shows and a decision must match.
	ConversationID    string `json:"conversation_id,omitempty"`
	TurnID            string `json:"turn_id,omitempty"`
	ArgsHash          string `json:"args_hash,omitempty"`
	PolicyFingerprint string `json:"policy_fingerprint,omitempty"`

	decided   bool
	decision  PermissionDecision
	decidedAt time.Time
	// decidedBy and recorded serve a network permission, which several
	// connections may wait for (see askNetwork).
	decidedBy string
	recorded  bool
}

// PermissionDecisionResult is the decide_permission update's answer.
type PermissionDecisionResult struct {
	CallID   string `json:"call_id"`
	Decision string `json:"decision"`
	Accepted bool   `json:"accepted"`
}

// governance is the hook and permission state of a session.
type governance struct {
	// enabled is false only when replaying runs from before lifecycle hooks.
	enabled bool
	// claudeHooks enables what shapeClaudeHooks added (see turn_hooks.go).
	claudeHooks bool
	hookSession hooks.Session
	metrics     *builtin.MetricsHook
	pending     []*PendingPermission
	// elicitations counts the questions MCP servers asked the run.
	elicitations int
	started      bool
	// transcript is what hooks see through transcript_path.
	transcript *contract.MessageSet
	// halt is the first request of a hook to end the turn.
	halt      *hooks.Halt
	haltStage string
	// pendingContext is hook context waiting to reach the model.
	pendingContext []string
	// subscribed is what a lean review found (nil: run every stage).
	subscribed *activities.HookSubscription
	// asksTurnEvents is whether this run's SessionStart stages answer for
	// its session and turn events (an agent turn since shapeLeanTurn).
	asksTurnEvents bool
	// turn is which session and turn events have a hook (nil: all).
	turn *activities.HookSubscription
	// approvalTimeout is the assignment's approval.timeout_seconds, for
	// permissions the workflow code does not park itself (askNetwork).
	approvalTimeout time.Duration
	// sessionEnv is what the session's SessionStart hooks wrote to
	// $CLAUDE_ENV_FILE, as the last SessionStart stage answered: every
	// exec_command and process_exec runs it before its command.
	sessionEnv string
}

// registerGovernance installs the metrics query and the permission update.
func (s *session) registerGovernance(initial contract.Metrics) error {
	s.gov.metrics = builtin.NewMetricsHook(initial, s.logger.Info)
	if err := workflow.SetQueryHandler(s.ctx, QueryMetrics, func() (contract.Metrics, error) {
		return s.gov.metrics.Metrics(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(s.ctx, QueryPendingPermissions, func() ([]PendingPermission, error) {
		out := make([]PendingPermission, 0, len(s.gov.pending))
		for _, p := range s.gov.pending {
			if !p.decided {
				out = append(out, *p)
			}
		}
		return out, nil
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(s.ctx, UpdateDecidePermission,
		func(ctx workflow.Context, d PermissionDecision) (PermissionDecisionResult, error) {
			p := s.findPending(d.CallID)
			p.decided = true
			p.decision = d
			p.decidedAt = workflow.Now(ctx).UTC()
			s.setDetails()
			return PermissionDecisionResult{CallID: d.CallID, Decision: d.Decision, Accepted: true}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, d PermissionDecision) error {
			return decisionRefused(s.checkDecision(d))
		}})
}

// Codes of decide_permission's refusals (ValidationError application
// errors), for a kernel that acts on them rather than read the text.
const (
	CodeInvalidDecision  = "invalid_decision"
	CodeCallNotPending   = "call_not_pending"
	CodeAlreadyDecided   = "already_decided"
	CodeArgsHashMismatch = "args_hash_mismatch"
)

// decisionRefused is a validator's refusal as a typed application error
// (ValidationError, its code in the details), as a stage's errors are:
// a plain error reached a kernel in another language with no type.
func decisionRefused(err error) error {
	if err == nil {
		return nil
	}
	return fenixerr.ToTemporal(fenixerr.As(err))
}

// checkDecision is decide_permission's validator: nothing it refuses is
// recorded.
func (s *session) checkDecision(d PermissionDecision) error {
	if d.CallID == "" {
		return fenixerr.Validation("decision names no call_id (the fields are snake_case: call_id, decision, reason, args_hash, decided_by); pending: %s", s.pendingIDs()).WithCode(CodeInvalidDecision)
	}
	if d.Decision != DecisionAllow && d.Decision != DecisionDeny {
		return fenixerr.Validation("decision %q is not %q or %q", d.Decision, DecisionAllow, DecisionDeny).WithCode(CodeInvalidDecision)
	}
	// Refused before it is accepted, so nothing of it is recorded: the
	// reason is repeated in the trace, the reports and the result, and an
	// unbounded one would overflow history.
	if len(d.Reason) > MaxDecisionReasonBytes {
		return fenixerr.Validation("decision on tool call %q has a reason of %d bytes, over the %d-byte limit: shorten it", d.CallID, len(d.Reason), MaxDecisionReasonBytes).WithCode(CodeInvalidDecision)
	}
	p := s.findPending(d.CallID)
	if p == nil {
		return fenixerr.Validation("no tool call %q is waiting for a permission decision (pending: %s)", d.CallID, s.pendingIDs()).WithCode(CodeCallNotPending)
	}
	if p.decided {
		return fenixerr.Validation("tool call %q was already decided: %s", d.CallID, p.decision.Decision).WithCode(CodeAlreadyDecided)
	}
	if err := checkArgsHash(p, d); err != nil {
		return err
	}
	if err := checkElicitationAnswer(p, d); err != nil {
		return fenixerr.Validation("%v", err).WithCode(CodeInvalidDecision)
	}
	return nil
}

func (s *session) findPending(callID string) *PendingPermission {
	for _, p := range s.gov.pending {
		if p.CallID == callID {
			return p
		}
	}
	return nil
}

func (s *session) pendingIDs() string {
	var ids []string
	for _, p := range s.gov.pending {
		if !p.decided {
			ids = append(ids, p.CallID)
		}
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// setDetails keeps the Web UI's current details up to date.
func (s *session) setDetails() {
	parts := []string{"**Stage:** " + s.currentStage}
	if s.cancelled {
		parts = append(parts, "**Canceling:** "+s.cancelReason)
	}
	for _, p := range s.gov.pending {
		if !p.decided {
			parts = append(parts, fmt.Sprintf("**Waiting for permission:** `%s` call `%s` (%s) until %s — answer with update `%s`",
				p.ToolName, p.CallID, p.Permission, p.Deadline.Format(time.RFC3339), UpdateDecidePermission))
		}
	}
	workflow.SetCurrentDetails(s.ctx, strings.Join(parts, "\n\n"))
}

// lifecycle runs fire-and-forget hooks. A failing hook stage is recorded,
// never fatal: observers must not break the work they observe.
func (s *session) lifecycle(ctx workflow.Context, in activities.LifecycleHooksInput) hooks.Summary {
	if !s.gov.enabled || !s.hasHooks(in.Event()) {
		return hooks.Summary{}
	}
	stage := s.currentStage
	res, err := runRepeatable[activities.HookSummaryResult](ctx, s, stage, stageOptions("Hooks: "+string(in.Event()), hookStageTimeout),
		acts.RunLifecycleHooks, in)
	if err != nil {
		fe := fenixerr.FromTemporal(err)
		s.addTrace(contract.Trace(string(in.Event()), "hook_stage_error", fe.Message))
		s.logger.Warn("lifecycle hooks failed", "event", in.Event(), "error", err)
		return hooks.Summary{}
	}
	s.addTrace(res.Trace)
	if res.Turn != nil {
		s.gov.turn = res.Turn
	}
	s.noteHalt(string(in.Event()), res.Summary.Halt)
	return res.Summary
}

// hasHooks is whether ev's stage runs: neither a lean review nor the
// turn's SessionStart stage found it without a hook.
func (s *session) hasHooks(ev hooks.Event) bool {
	return s.gov.subscribed.Has(ev) && s.gov.turn.Has(ev)
}

// askTurnEvents has a SessionStart stage report which session and turn
// events have a hook, where the run asks (shapeLeanTurn).
func (s *session) askTurnEvents(in *activities.LifecycleHooksInput) {
	if s.gov.asksTurnEvents {
		in.TurnEvents = true
		in.ConversationSessions = s.conversationSessions()
	}
}

// sessionStart fires SessionStart hooks once per run.
func (s *session) sessionStart() {
	if s.gov.started {
		return
	}
	s.gov.started = true
	ev := hooks.SessionStartEvent{Session: s.hookSession(), Source: hooks.SourceStartup}
	_ = s.gov.metrics.OnSessionStart(context.Background(), ev)
	s.currentStage = string(hooks.EventSessionStart)
	in := activities.LifecycleHooksInput{SessionStart: &ev}
	s.scopeSessionStart(&in)
	s.askTurnEvents(&in)
	sum := s.lifecycle(s.stageCtx, in)
	s.addModelContext(sum.AdditionalContext)
	s.gov.sessionEnv = sum.SessionEnv
}

// sessionStop fires Error (for failures) and SessionStop hooks, whatever
// the outcome, in a disconnected context so they run after a cancel.
func (s *session) sessionStop(status string, failure *contract.Failure) {
	if !s.gov.started {
		return
	}
	ctx, _ := workflow.NewDisconnectedContext(s.ctx)
	if status == contract.StatusFailed && failure != nil {
		ev := hooks.ErrorEvent{Session: s.hookSession(), Stage: failure.Stage, ErrorType: failure.ErrorType,
			ErrorClass: fenixerr.Class(failure.Classification), ErrorCode: failure.Code, ErrorMessage: failure.LastErrorSummary}
		if len(failure.ToolInvocations) > 0 {
			ev.ToolName = failure.ToolInvocations[0].ToolName
			ev.CallID = failure.ToolInvocations[0].CallID
		}
		_ = s.gov.metrics.OnError(context.Background(), ev)
		s.lifecycle(ctx, activities.LifecycleHooksInput{Error: &ev})
	}
	stop := hooks.SessionStopEvent{Session: s.hookSession(), StopReason: status, Steps: s.gov.metrics.Metrics().Steps}
	if failure != nil {
		stop.ErrorMessage = failure.LastErrorSummary
	}
	_ = s.gov.metrics.OnSessionStop(context.Background(), stop)
	in := activities.LifecycleHooksInput{SessionStop: &stop}
	s.scopeSessionStop(&in)
	s.lifecycle(ctx, in)
}

// toolFailed fires PostToolUseFailure for a call that was reviewed but did
// not complete (rejected, blocked, denied, failed or canceled), so every
// attempted call reaches the audit log. It returns the hooks' context for
// the model.
func (s *session) toolFailed(ctx workflow.Context, call contract.ToolCall, err error, durationMs int64, step int) string {
	fe := fenixerr.FromTemporal(err)
	if s.isCanceled(err) {
		fe = fenixerr.New(fenixerr.TypeCanceled, "tool call canceled: %s", s.cancelReason)
	}
	ev := hooks.PostToolUseFailureEvent{Session: s.hookSession(), ToolName: call.ToolName, CallID: call.CallID,
		ToolInput: call.Arguments, DurationMS: durationMs, ErrorType: fe.Type, ErrorMessage: fe.Message, Step: step,
		ContextBudget: s.stepShare(activities.StepHookContextBudget, shapeStepHookContext)}
	if s.gov.claudeHooks {
		ev.IsInterrupt = fe.Type == fenixerr.TypeCanceled
	}
	_ = s.gov.metrics.PostToolUseFailure(context.Background(), ev)
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	return s.lifecycle(ctx, activities.LifecycleHooksInput{PostToolUseFailure: &ev}).AdditionalContext
}

// governedCall is a reviewed call after PreToolUse and, when asked for,
// a permission decision.
type governedCall struct {
	call              contract.ToolCall
	additionalContext string
	// reachedPath is where the call's path led when PreToolUse judged
	// it; ExecuteTool refuses the open if it leads elsewhere by then.
	reachedPath string
}

// governToolCall runs PreToolUse hooks (the CancellationHook reads this
// workflow's cancel state from the event) and, for PermissionRequired,
// PermissionRequest hooks and then a human through decide_permission.
// subs is the call's lean review answer: without a PreToolUse hook the
// stage is left out.
func (s *session) governToolCall(ctx workflow.Context, call contract.ToolCall, subs *activities.HookSubscription, step int, approvalTimeout time.Duration) (governedCall, error) {
	if !s.gov.enabled || !subs.Has(hooks.EventPreToolUse) {
		return governedCall{call: call}, nil
	}
	pre, err := runRepeatable[activities.PreToolUseHooksResult](ctx, s, activities.StagePreToolUse,
		stageOptions("PreToolUse: "+call.ToolName, hookStageTimeout), acts.RunPreToolUseHooks,
		hooks.PreToolUseEvent{Session: s.hookSession(), ToolName: call.ToolName, CallID: call.CallID,
			ToolInput: call.Arguments, Step: step, Cancelled: s.cancelled, CancelReason: s.cancelReason,
			ContextBudget: s.stepShare(activities.StepHookContextBudget, shapeStepHookContext), ArgsBudget: s.stepShare(activities.StepArgumentBudget, shapeStepHookContext)})
	if err != nil {
		return governedCall{}, err
	}
	s.addTrace(pre.Trace)
	if err := s.checkCancel(); err != nil {
		return governedCall{}, err
	}
	res := pre.Result
	if s.noteHalt(activities.StagePreToolUse, res.Halt) {
		return governedCall{}, s.haltError()
	}
	if res.Blocked() {
		return governedCall{}, &stageError{stage: activities.StagePreToolUse, err: fenixerr.New(fenixerr.TypeToolBlocked,
			"tool call %q (%s) was blocked by hook %q: %s", call.CallID, call.ToolName, res.DecidedBy, res.Action.Reason).WithTool(call.ToolName)}
	}
	if res.ArgsMutated {
		call.Arguments = res.FinalArgs
	}
	out := governedCall{call: call, additionalContext: res.AdditionalContext, reachedPath: pre.ReachedPath}
	if !res.NeedsPermission() {
		return out, nil
	}
	decision, err := s.decidePermission(ctx, call, *res.PermissionRequired, approvalTimeout, pre.PolicyFingerprint)
	if err != nil {
		return governedCall{}, err
	}
	if !decision.allowed {
		reason := s.permissionDenied(ctx, call, *res.PermissionRequired, decision)
		return governedCall{}, &stageError{stage: activities.StagePermissionDecision, err: fenixerr.New(fenixerr.TypePermissionDenied,
			"tool call %q (%s) was denied permission %q: %s", call.CallID, call.ToolName, res.PermissionRequired.Permission, reason).WithTool(call.ToolName)}
	}
	if decision.updatedArgs != nil {
		// Arguments a PermissionRequest hook replaced were not resolved.
		out.call.Arguments, out.reachedPath = decision.updatedArgs, ""
	}
	return out, nil
}

// permissionOutcome is how a permission request ended.
type permissionOutcome struct {
	allowed bool
	reason  string
	// decidedBy is "hook:<name>", "decide_permission" or "timeout".
	decidedBy string
	// updatedArgs are a hook's replacement arguments for an allowed call.
	updatedArgs map[string]any
}

// decidePermission lets hooks settle the request, else parks the call
// until decide_permission, the timeout (deny) or a cancel.
// A deferred call (a PreToolUse hook's "defer") skips PermissionRequest
// hooks: the decision comes from outside the run.
func (s *session) decidePermission(ctx workflow.Context, call contract.ToolCall, req hooks.PermissionRequirement, timeout time.Duration, fingerprint string) (permissionOutcome, error) {
	if !(s.gov.claudeHooks && req.Deferred) {
		hookRes, err := runRepeatable[activities.PermissionRequestHooksResult](ctx, s, activities.StagePermissionRequest,
			stageOptions("PermissionRequest: "+call.ToolName, hookStageTimeout), acts.RunPermissionRequestHooks,
			hooks.PermissionRequestEvent{Session: s.hookSession(), ToolName: call.ToolName, CallID: call.CallID,
				ToolInput: call.Arguments, Permission: req.Permission, RequestedBy: req.Hook})
		if err != nil {
			return permissionOutcome{}, err
		}
		s.addTrace(hookRes.Trace)
		if err := s.checkCancel(); err != nil {
			return permissionOutcome{}, err
		}
		if s.noteHalt(activities.StagePermissionRequest, hookRes.Result.Halt) {
			return permissionOutcome{}, s.haltError()
		}
		if hookRes.Result.Settled() {
			d := hookRes.Result.Decision
			out := permissionOutcome{allowed: d.Kind == hooks.KindAllow, reason: d.Reason, decidedBy: "hook:" + hookRes.Result.DecidedBy}
			if s.gov.claudeHooks && out.allowed {
				out.updatedArgs = d.UpdatedArgs
			}
			s.addTrace(permissionTrace(call, decisionWord(out.allowed), out.reason, out.decidedBy))
			return out, nil
		}
	}

	if timeout <= 0 {
		timeout = DefaultPermissionTimeout
	}
	now := workflow.Now(s.ctx).UTC()
	p := &PendingPermission{CallID: call.CallID, ToolName: call.ToolName, Permission: req.Permission, RequestedBy: req.Hook,
		Arguments: call.Arguments, RequestedAt: now, Deadline: now.Add(timeout)}
	if s.shape >= shapeInbox {
		p.ConversationID, p.TurnID = s.id.ConversationID, s.id.TurnID
		p.ArgsHash, p.PolicyFingerprint = contract.ArgumentsHash(call.Arguments), fingerprint
	}
	s.gov.pending = append(s.gov.pending, p)
	s.currentStage = activities.StagePermissionDecision
	s.setDetails()
	s.report(contract.Report{Kind: contract.ReportProgress, Phase: contract.PhasePermissionPending, ToolInvocation: &contract.ToolInvocation{
		CallID: call.CallID, ToolName: call.ToolName, Status: "waiting_for_permission", RequestPayload: call}})
	s.notifyPermissionPending(ctx, call, req)

	s.markAwaiting()
	s.flushAttrs()
	decided, err := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return p.decided || s.cancelled })
	s.unmarkAwaiting(p)
	if s.cancelled {
		return permissionOutcome{}, errCanceledBetweenStages
	}
	if err != nil {
		return permissionOutcome{}, s.classify(activities.StagePermissionDecision, err)
	}
	decidedBy := "decide_permission"
	if !decided {
		p.decided = true
		p.decision = PermissionDecision{CallID: call.CallID, Decision: DecisionDeny, Reason: fmt.Sprintf("no decision within %s", timeout)}
		p.decidedAt = workflow.Now(ctx).UTC()
		decidedBy = "timeout"
	}
	s.recordDecision(ctx, call, p, decidedBy)
	s.setDetails()
	return permissionOutcome{allowed: p.decision.Decision == DecisionAllow, reason: p.decision.Reason, decidedBy: decidedBy}, nil
}

func decisionWord(allowed bool) string {
	if allowed {
		return DecisionAllow
	}
	return DecisionDeny
}

func permissionTrace(call contract.ToolCall, decision, reason, decidedBy string) contract.TraceEntry {
	return contract.Trace(activities.StagePermissionDecision,
		"tool_name", call.ToolName, "call_id", call.CallID, "decision", decision, "reason", reason, "decided_by", decidedBy)
}

// postToolUse runs PostToolUse hooks on the projected content; the last
// MutateOutput wins. The audit row is written in this stage. It returns
// the content and the hooks' context for the model.
// Without a PostToolUse hook (subs) the stage is left out.
func (s *session) postToolUse(ctx workflow.Context, call contract.ToolCall, subs *activities.HookSubscription, content string, raw []byte, durationMs int64, step int) (string, string, error) {
	if !s.gov.enabled {
		return content, "", nil
	}
	ev := hooks.PostToolUseEvent{Session: s.hookSession(), ToolName: call.ToolName, CallID: call.CallID, ToolInput: call.Arguments,
		Content: content, RawResult: raw, DurationMS: durationMs, Status: contract.StatusCompleted, Step: step,
		ContextBudget: s.stepShare(activities.StepHookContextBudget, shapeStepHookContext), ResultBudget: s.stepShare(activities.StepResultBudget, shapeStepHookContext)}
	if !subs.Has(hooks.EventPostToolUse) {
		_, _ = s.gov.metrics.PostToolUse(context.Background(), ev)
		return content, "", nil
	}
	post, err := runRepeatable[activities.PostToolUseHooksResult](ctx, s, activities.StagePostToolUse,
		stageOptions("PostToolUse: "+call.ToolName, hookStageTimeout), acts.RunPostToolUseHooks, ev)
	if err != nil {
		return "", "", err
	}
	s.addTrace(post.Trace)
	_, _ = s.gov.metrics.PostToolUse(context.Background(), ev)
	var extra string
	if s.gov.claudeHooks {
		extra = post.Result.AdditionalContext
		s.noteHalt(activities.StagePostToolUse, post.Result.Halt)
	}
	if post.Result.Mutated {
		return post.Result.FinalContent, extra, nil
	}
	return content, extra, nil
}

// explainLostTool turns an ExecuteTool whose worker stopped answering into
// an explicit "outcome unknown" failure naming the resource the tool
// created, read from its last heartbeat: a non-idempotent tool is not run
// again, so the kernel (or the model) needs to know where to look. Other
// errors pass through; resource is "" when there is none.
func explainLostTool(call contract.ToolCall, err error) (resource string, explained error) {
	var se *stageError
	if !errors.As(err, &se) || se.stage != activities.StageExecuteTool || se.err.Type != fenixerr.TypeWorkerLost {
		return "", err
	}
	var hb activities.ToolHeartbeat
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) && timeoutErr.HasLastHeartbeatDetails() {
		_ = timeoutErr.LastHeartbeatDetails(&hb)
	}
	msg := fmt.Sprintf("%s; the outcome of %s is unknown: it ran at most once and is not retried", se.err.Message, call.ToolName)
	if timeoutErr != nil && timeoutErr.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		// No worker took the task: the call did not run at all.
		msg = fmt.Sprintf("%s; %s never started: no worker polling its task queue took it in time (is the worker of its host running?), so it did not run", se.err.Message, call.ToolName)
	}
	if hb.ResourceID != "" {
		msg += fmt.Sprintf(" (its resource is %s; read it with command_run_read or process_list)", hb.ResourceID)
	}
	lost := fenixerr.New(fenixerr.TypeWorkerLost, "%s", msg).WithTool(call.ToolName).WithCause(se.err)
	return hb.ResourceID, &stageError{stage: se.stage, err: lost}
}
