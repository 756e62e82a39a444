package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// The turn events Claude Code hooks rely on, and what their answers do to
// the run (shapeClaudeHooks): context reaching the model, halts ending the
// turn, prompts refused, stops blocked, denials and pending permissions
// announced. Every method is a no-op for runs of older shapes.

// hookSession is the session part of a hook event: with the transcript the
// worker materializes for transcript_path.
func (s *session) hookSession() hooks.Session {
	hs := s.gov.hookSession
	if s.gov.claudeHooks && s.gov.transcript != nil {
		t := *s.gov.transcript
		hs.Transcript = &t
	}
	return hs
}

// setHookTranscript records the transcript hooks read: inline while it
// is small (like the transcript every context stage and CallModel take),
// a context-store reference once it is offloaded.
func (s *session) setHookTranscript(set contract.MessageSet) {
	if s.gov.claudeHooks && s.gov.enabled {
		s.gov.transcript = &set
	}
}

// noteHalt records the first request of a hook to end the turn and
// reports whether there is one (from this stage or an earlier one).
func (s *session) noteHalt(stage string, h *hooks.Halt) bool {
	if !s.gov.claudeHooks {
		return false
	}
	if h != nil && s.gov.halt == nil {
		s.gov.halt = h
		s.gov.haltStage = stage
		s.addTrace(contract.Trace("halt", "stage", stage, "reason", h.Reason, "hook", h.Hook))
	}
	return s.gov.halt != nil
}

// halted reports whether a hook asked to end the turn.
func (s *session) halted() bool { return s.gov.claudeHooks && s.gov.halt != nil }

// haltError is how a turn a hook ended fails: HookHaltError with the
// hook's stop reason.
func (s *session) haltError() error {
	h := s.gov.halt
	return &stageError{stage: s.gov.haltStage, err: fenixerr.New(fenixerr.TypeHookHalt,
		"hook %q ended the turn (continue: false): %s", h.Hook, h.Reason)}
}

// addModelContext queues hook context for the model's next call.
func (s *session) addModelContext(text string) {
	if s.gov.claudeHooks && strings.TrimSpace(text) != "" {
		s.gov.pendingContext = append(s.gov.pendingContext, text)
	}
}

// takeModelContext returns the queued context and clears it.
func (s *session) takeModelContext() string {
	out := strings.Join(s.gov.pendingContext, "\n")
	s.gov.pendingContext = nil
	return out
}

// contextMessage carries hook context to the model as a message of its
// own, so the kernel's transcript shows where it came from.
func contextMessage(text string) contract.Message {
	return contract.Message{Role: contract.RoleUser, Content: "Additional context from hooks:\n" + text}
}

// notifyPermissionPending fires Notification hooks (permission_prompt)
// while a call waits for decide_permission.
func (s *session) notifyPermissionPending(ctx workflow.Context, call contract.ToolCall, req hooks.PermissionRequirement) {
	if !s.gov.claudeHooks {
		return
	}
	ev := hooks.NotificationEvent{Session: s.hookSession(), NotificationType: hooks.NotificationPermissionPrompt,
		Title: "Permission needed", ToolName: call.ToolName, CallID: call.CallID,
		Message: hooks.PermissionPromptMessage(call.ToolName) + ": " + req.Permission}
	s.lifecycle(ctx, activities.LifecycleHooksInput{Notification: &ev})
}

// permissionDenied fires PermissionDenied hooks after a denial and returns
// the reason the model sees: a hook's retry tells it it may try again.
func (s *session) permissionDenied(ctx workflow.Context, call contract.ToolCall, req hooks.PermissionRequirement, d permissionOutcome) string {
	if !s.gov.claudeHooks {
		return d.reason
	}
	res, err := runRepeatable[activities.PermissionDeniedHooksResult](ctx, s, activities.StagePermissionDenied,
		stageOptions("PermissionDenied: "+call.ToolName, hookStageTimeout), acts.RunPermissionDeniedHooks,
		hooks.PermissionDeniedEvent{Session: s.hookSession(), ToolName: call.ToolName, CallID: call.CallID,
			ToolInput: call.Arguments, Permission: req.Permission, Reason: d.reason, DeniedBy: d.decidedBy})
	if err != nil {
		s.addTrace(contract.Trace(activities.StagePermissionDenied, "hook_stage_error", fenixerr.FromTemporal(err).Message))
		return d.reason
	}
	s.addTrace(res.Trace)
	reason := d.reason
	if res.Result.Retry {
		reason += fmt.Sprintf(" (hook %q says you may retry this call)", res.Result.RetryBy)
	}
	if res.Result.AdditionalContext != "" {
		reason += "\n" + res.Result.AdditionalContext
	}
	return reason
}

// userPromptSubmit runs UserPromptSubmit hooks before the turn's first
// model call: a block ends the turn with PromptBlockedError, a halt with
// HookHaltError, context waits for the model's first call.
func (s *session) userPromptSubmit(prompt string) error {
	if !s.gov.claudeHooks || !s.gov.enabled || !s.hasHooks(hooks.EventUserPromptSubmit) {
		return nil
	}
	res, err := runRepeatable[activities.UserPromptSubmitHooksResult](s.stageCtx, s, activities.StageUserPromptSubmit,
		stageOptions("UserPromptSubmit", hookStageTimeout), acts.RunUserPromptSubmitHooks,
		hooks.UserPromptSubmitEvent{Session: s.hookSession(), Prompt: prompt})
	if err != nil {
		return err
	}
	s.addTrace(res.Trace)
	if s.noteHalt(activities.StageUserPromptSubmit, res.Result.Halt) {
		return s.haltError()
	}
	if res.Result.Blocked {
		return &stageError{stage: activities.StageUserPromptSubmit, err: fenixerr.New(fenixerr.TypePromptBlocked,
			"the prompt was blocked by hook %q: %s", res.Result.DecidedBy, res.Result.Reason)}
	}
	s.addModelContext(res.Result.AdditionalContext)
	return s.checkCancel()
}

// stopVerdict is what Stop hooks said about a final answer.
type stopVerdict struct {
	keepGoing bool
	reason    string
}

// stopHooks asks Stop hooks (SubagentStop in a subagent) whether the agent
// may end its turn with answer. A halt lets it stop: the turn ends.
func (s *session) stopHooks(answer string, step, blocks int) (stopVerdict, error) {
	if !s.gov.claudeHooks || !s.gov.enabled || !s.hasHooks(hooks.EventStop) {
		return stopVerdict{}, nil
	}
	res, err := runRepeatable[activities.StopHooksResult](s.stageCtx, s, activities.StageStop,
		stageOptions("Stop", hookStageTimeout), acts.RunStopHooks,
		hooks.StopEvent{Session: s.hookSession(), StopHookActive: blocks > 0, LastAssistantMessage: answer, Step: step, Blocks: blocks})
	if err != nil {
		return stopVerdict{}, err
	}
	s.addTrace(res.Trace)
	if res.Result.Halt != nil {
		s.addTrace(contract.Trace("halt", "stage", activities.StageStop, "reason", res.Result.Halt.Reason, "hook", res.Result.Halt.Hook))
		return stopVerdict{}, nil
	}
	return stopVerdict{keepGoing: res.Result.Continue, reason: res.Result.Reason}, s.checkCancel()
}

// postToolBatch runs PostToolBatch hooks once all calls of a step
// resolved: context waits for the next model call, a block or halt ends
// the turn.
func (s *session) postToolBatch(step int, calls []contract.ToolCall, results []contract.Message, failed []bool) error {
	if !s.gov.claudeHooks || !s.gov.enabled || !s.hasHooks(hooks.EventPostToolBatch) {
		return nil
	}
	batch := make([]hooks.BatchCall, len(calls))
	for i, c := range calls {
		batch[i] = hooks.BatchCall{ToolName: c.ToolName, CallID: c.CallID, ToolInput: c.Arguments, Content: results[i].Content, Failed: failed[i]}
	}
	res, err := runRepeatable[activities.PostToolBatchHooksResult](s.stageCtx, s, activities.StagePostToolBatch,
		stageOptions(fmt.Sprintf("PostToolBatch: step %d", step), hookStageTimeout), acts.RunPostToolBatchHooks,
		hooks.PostToolBatchEvent{Session: s.hookSession(), Step: step, Calls: batch})
	if err != nil {
		return err
	}
	s.addTrace(res.Trace)
	if s.noteHalt(activities.StagePostToolBatch, res.Result.Halt) {
		return s.haltError()
	}
	s.addModelContext(res.Result.AdditionalContext)
	return nil
}
