package workflows

import (
	"encoding/json"
	"maps"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// Stage timeouts. PrepareTurn and CompactContext read and write the
// context store, so they get more time than the pure stages.
const (
	contextStageTimeout = 2 * time.Minute
	pureStageTimeout    = 30 * time.Second
	// toolGrace is added to a tool's own timeout for the activity's
	// start-to-close timeout: the tool enforces its limit and reports, the
	// activity timeout only catches a tool that failed to.
	toolGrace = 30 * time.Second
	// pinnedScheduleTimeout bounds how long a host-pinned tool waits for
	// its host to pick it up before the call fails as worker_lost.
	pinnedScheduleTimeout = time.Minute
)

// ExecuteAssignment runs one governed tool call (or a skill operation)
// through the hook pipeline:
//
//	PrepareTurn → CompactContext → ReviewToolCall → ExecuteTool →
//	ProjectToolResult → FinalizeOutput, with HandleError on any failure.
//
// The input is the assignment JSON; it is parsed here rather than by the
// SDK so a malformed assignment ends as a failed result with a typed error
// and a trace instead of a workflow task that can never decode its input.
func ExecuteAssignment(ctx workflow.Context, input json.RawMessage) (contract.Result, error) {
	s, err := newSession(ctx)
	if err != nil {
		return contract.Result{}, err
	}
	r := &assignmentRun{session: s}
	res := r.execute(input)
	s.finishHandlers()
	return res, nil
}

type assignmentRun struct {
	*session
	a          contract.Assignment
	invocation *contract.ToolInvocation
	// processRun is set in the process tool flow instead of invocation.
	processRun *contract.ProcessRun
	// reviewed is the call's review, once it ran.
	reviewed *activities.ReviewToolCallResult
}

// processTool is the tool of the seed's process tool flow.
const processTool = "process_exec"

func (r *assignmentRun) execute(input json.RawMessage) contract.Result {
	a, err := contract.ParseAssignment(input)
	err = r.boundIdentifiers(a.BoundIdentifiers, &a, err)
	r.a = a
	r.gov.approvalTimeout = time.Duration(a.Approval.TimeoutSeconds) * time.Second
	r.bindAssignment(a)
	if err == nil && (len(a.ContextMessages) > 0 || a.ContextRef != "") {
		r.setHookTranscript(contract.MessageSet{Messages: a.ContextMessages, Ref: a.ContextRef, Count: len(a.ContextMessages)})
	}
	if err != nil || !r.reviewsFirst() {
		r.sessionStart()
	}
	if err == nil {
		err = a.ValidateForExecution()
	}
	if err == nil && r.shape >= shapeCallOutlivesLateCancel {
		err = a.Approval.Validate()
	}
	if err != nil {
		r.sessionStart()
		r.currentStage = "validate_assignment"
		return r.finish(nil, &stageError{stage: "validate_assignment", err: fenixerr.InvalidAssignment(err)})
	}
	r.report(contract.Report{Kind: contract.ReportStarted})
	out, err := r.run(len(input))
	return r.finish(out, err)
}

func (r *assignmentRun) run(inputBytes int) (*contract.Output, error) {
	if r.preparesBesideReview(inputBytes) {
		return r.reviewBesidePrepare()
	}
	if r.reviewsFirst() {
		reviewed, err := r.review(nil)
		if err != nil {
			return nil, err
		}
		r.startReviewed(reviewed)
	}
	if err := r.goOn(); err != nil {
		return nil, err
	}
	if err := offloadContext(r.session, &r.a, inputBytes); err != nil {
		return nil, err
	}
	if r.a.ContextRef != "" && r.gov.transcript != nil && r.gov.transcript.Ref == "" {
		r.setHookTranscript(contract.MessageSet{Ref: r.a.ContextRef})
	}
	if _, err := prepareContext(r.session, r.a, 0, r.shape >= shapePrepareBesideReview); err != nil {
		return nil, err
	}
	if r.a.Mode == contract.ModeTool {
		return r.toolFlow()
	}
	return r.skillFlow()
}

// offloadInputBytes is the input size above which an inline transcript is
// moved into the context store before PrepareTurn, so the transcript is in
// history once (the start event) rather than once per stage.
const offloadInputBytes = 64 << 10

func needsOffload(a contract.Assignment, inputBytes int) bool {
	return inputBytes > offloadInputBytes && len(a.ContextMessages) > 0
}

// offloadContext runs StoreContext as a local activity: its input is not
// recorded in history, only its result (the reference) is.
func offloadContext(s *session, a *contract.Assignment, inputBytes int) error {
	if !needsOffload(*a, inputBytes) {
		return nil
	}
	s.currentStage = activities.StageStoreContext
	ctx := workflow.WithLocalActivityOptions(s.stageCtx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		Summary:             "StoreContext",
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	var res activities.StoreContextResult
	if err := workflow.ExecuteLocalActivity(ctx, acts.StoreContext, activities.StoreContextInput{Messages: a.ContextMessages}).Get(ctx, &res); err != nil {
		return s.classify(activities.StageStoreContext, err)
	}
	s.addTrace(res.Trace)
	a.ContextRef = res.Messages.Ref
	a.ContextMessages = nil
	return s.checkCancel()
}

// prepareContext is PrepareTurn → CompactContext, shared with PrepareRound.
// contextUnused says the caller will not read the messages.
func prepareContext(s *session, a contract.Assignment, resultInlineLimit int, contextUnused bool) (activities.CompactContextResult, error) {
	in := prepareTurnInput(s, a, resultInlineLimit, contextUnused)
	prep, err := runRepeatable[activities.PrepareTurnResult](s.stageCtx, s, activities.StagePrepareTurn,
		prepareTurnOptions, acts.PrepareTurn, in)
	return compactPrepared(s, a, in, prep, err, resultInlineLimit)
}

var prepareTurnOptions = stageOptions("PrepareTurn", contextStageTimeout)

// prepareTurnInput asks PrepareTurn to answer for CompactContext when
// nothing needs compacting (since shapeIdleCompaction), unless the result
// must be packed with another inline limit than the worker's (PrepareRound).
//
// Since shapeTranscriptOnce the workflow keeps an inline transcript it
// sends, so PrepareTurn may leave it out of the context it returns (see
// transcript.go).
func prepareTurnInput(s *session, a contract.Assignment, resultInlineLimit int, contextUnused bool) activities.PrepareTurnInput {
	decide := s.shape >= shapeIdleCompaction && resultInlineLimit == 0
	in := activities.PrepareTurnInput{Assignment: a, DecideCompaction: decide, ContextUnused: decide && contextUnused}
	in.TranscriptKept = s.shape >= shapeTranscriptOnce && !in.ContextUnused && a.ContextRef == ""
	return in
}

// compactPrepared records PrepareTurn's outcome and runs CompactContext
// unless PrepareTurn answered for it.
func compactPrepared(s *session, a contract.Assignment, in activities.PrepareTurnInput, prep activities.PrepareTurnResult, err error, resultInlineLimit int) (activities.CompactContextResult, error) {
	if err != nil {
		return activities.CompactContextResult{}, err
	}
	if prep.TranscriptTail {
		prep.Messages.Messages = followedBy(prep.Messages.Messages, a.ContextMessages)
	}
	s.addTrace(prep.Trace)
	if err := s.checkCancel(); err != nil {
		return activities.CompactContextResult{}, err
	}
	if in.DecideCompaction && prep.NoCompaction != nil {
		comp := *prep.NoCompaction
		comp.Messages = prep.Messages
		s.addCompactionTrace(comp)
		return comp, nil
	}
	return compactContext(s, a, prep.Messages, prep.LikelyModel, resultInlineLimit)
}

// compactContext is CompactContext (with Pre/PostCompact hooks inside it)
// and, for the summary strategy, SummarizeContext.
func compactContext(s *session, a contract.Assignment, messages contract.MessageSet, model string, resultInlineLimit int) (activities.CompactContextResult, error) {
	comp, err := runRepeatable[activities.CompactContextResult](s.stageCtx, s, activities.StageCompactContext,
		stageOptions("CompactContext", contextStageTimeout), acts.CompactContext, activities.CompactContextInput{
			Messages:    messages,
			BudgetHints: a.BudgetHints,
			LikelyModel: model,
			Strategy:    a.Compaction.Strategy,
			InlineLimit: resultInlineLimit,
			Session:     s.gov.hookSession,
		})
	if err != nil {
		return activities.CompactContextResult{}, err
	}
	s.addCompactionTrace(comp)
	if err := s.checkCancel(); err != nil {
		return activities.CompactContextResult{}, err
	}
	if comp.Summary == nil {
		return comp, nil
	}
	// Only the extractive summarizer is pure; the others call a model,
	// which stays a regular activity.
	localSummary := s.mode.localRepeatable() && summarizerName(a.Compaction.Summarizer) == "extractive"
	summarized, err := runStageAs[activities.CompactContextResult](s.stageCtx, s, localSummary, activities.StageSummarizeContext,
		stageOptions("SummarizeContext: "+summarizerName(a.Compaction.Summarizer), contextStageTimeout), acts.SummarizeContext,
		activities.SummarizeContextInput{
			Plan:        *comp.Summary,
			Summarizer:  a.Compaction.Summarizer,
			LikelyModel: model,
			InlineLimit: resultInlineLimit,
			Session:     s.gov.hookSession,
		})
	if err != nil {
		return activities.CompactContextResult{}, err
	}
	s.addCompactionTrace(summarized)
	return summarized, s.checkCancel()
}

func summarizerName(name string) string {
	if name == "" {
		return "extractive"
	}
	return name
}

func (s *session) addCompactionTrace(r activities.CompactContextResult) {
	if r.PreCompact != nil {
		s.addTrace(*r.PreCompact)
	}
	s.addTrace(r.Trace)
	if r.PostCompact != nil {
		s.addTrace(*r.PostCompact)
	}
}

// toolFlow is the seed's deterministic tool flow with governance:
// ReviewToolCall → PreToolUse hooks (and a permission decision when one is
// required) → ExecuteTool → ProjectToolResult → PostToolUse hooks →
// FinalizeOutput. A reviewed call that does not complete fires
// PostToolUseFailure, so every attempted call is audited.
func (r *assignmentRun) toolFlow() (*contract.Output, error) {
	if r.reviewed == nil {
		reviewed, err := r.review(nil)
		if err != nil {
			return nil, err
		}
		r.reviewed = &reviewed
	}
	reviewed := *r.reviewed
	call := reviewed.ToolCall
	if call.ToolName == processTool {
		// The process flow tracks a process-run resource, not a tool
		// invocation (the seed's execute_process_tool_flow).
		r.invocation = nil
		r.processRun = &contract.ProcessRun{LifecycleState: "starting"}
	} else {
		r.invocation.Status = "running"
		r.invocation.RegistryBacked = reviewed.Tool.RegistryBacked
		reviewedInvocation := *r.invocation
		r.report(contract.Report{Kind: contract.ReportProgress, Phase: contract.PhaseToolReviewed, ToolInvocation: &reviewedInvocation})
	}

	out, duration, err := r.governedExecution(reviewed)
	if err != nil {
		var resource string
		if resource, err = explainLostTool(reviewed.ToolCall, err); resource != "" {
			if r.invocation != nil {
				r.invocation.ResourceID = resource
			}
			if r.processRun != nil {
				r.processRun.ProcessRunID = resource
			}
		}
		r.toolFailed(r.stageCtx, reviewed.ToolCall, err, duration, 0)
		return nil, err
	}
	return out, nil
}

// review is ReviewToolCall for the assignment's call; a call that fails
// it is recorded (PostToolUseFailure) after SessionStart. awaitBeside,
// when set, waits for a stage running beside the review, so it ends
// before the failure's stages start.
func (r *assignmentRun) review(awaitBeside func()) (activities.ReviewToolCallResult, error) {
	call := *r.a.ToolCall
	r.invocation = &contract.ToolInvocation{CallID: call.CallID, ToolName: call.ToolName, Status: "reviewing", RequestPayload: call}
	if r.shape < shapeFastPath {
		r.upsert(setAttr(SearchAttrToolName, call.ToolName))
	}
	failed := func(recorded contract.ToolCall, err error) (activities.ReviewToolCallResult, error) {
		if awaitBeside != nil {
			awaitBeside()
		}
		r.sessionStart()
		r.toolFailed(r.stageCtx, recorded, err, 0, 0)
		return activities.ReviewToolCallResult{}, err
	}
	if err := r.oversizedArguments(call); err != nil {
		return failed(boundedCall(call), err)
	}
	reviewed, err := r.reviewCall(r.stageCtx, call, r.a.AgentContext)
	if err != nil {
		return failed(call, err)
	}
	r.addTrace(reviewed.Trace)
	return reviewed, nil
}

func (r *assignmentRun) governedExecution(reviewed activities.ReviewToolCallResult) (*contract.Output, int64, error) {
	if err := r.checkCancel(); err != nil {
		return nil, 0, err
	}
	governed, err := r.governToolCall(r.stageCtx, reviewed.ToolCall, reviewed.Hooks, 0, time.Duration(r.a.Approval.TimeoutSeconds)*time.Second)
	if err != nil {
		return nil, 0, err
	}
	call := governed.call
	if r.invocation != nil {
		r.invocation.RequestPayload = call
	}
	if err := r.checkCancel(); err != nil {
		if r.processRun != nil {
			r.processRun.LifecycleState = "stopped"
			r.processRun.Reason = "canceled_before_start"
			run := *r.processRun
			r.report(contract.Report{Kind: contract.ReportProgress, Phase: contract.PhaseProcessCanceledBeforeStart, ProcessRun: &run})
		}
		return nil, 0, err
	}

	executed, err := r.executeTool(r.stageCtx, reviewed, activities.ExecuteToolInput{
		ToolCall:       call,
		WorkspaceRoot:  r.a.WorkspaceRoot,
		ConversationID: r.a.ConversationID,
		TurnID:         r.a.TurnID,
		AgentProfile:   r.a.AgentContext.Profile,
		ReachedPath:    governed.reachedPath,
		SessionEnv:     r.sessionEnvFor(call.ToolName),
	})
	if err != nil {
		return nil, 0, err
	}
	r.addTrace(executed.Trace)
	ran := r.shape >= shapeCallOutlivesLateCancel
	if ran {
		// The tool ran: what is left of the call (its projection, its
		// PostToolUse hooks, its output) runs where a cancel does not
		// reach, so the kernel learns what happened.
		r.stageCtx, _ = workflow.NewDisconnectedContext(r.ctx)
	}
	checkCancel := func() error {
		if ran {
			return nil
		}
		return r.checkCancel()
	}
	if err := checkCancel(); err != nil {
		return nil, executed.DurationMs, err
	}

	projected, err := runPure[activities.ProjectToolResultResult](r.stageCtx, r.session, activities.StageProjectToolResult,
		stageOptions("ProjectToolResult: "+call.ToolName, pureStageTimeout), acts.ProjectToolResult,
		activities.ProjectToolResultInput{ToolCall: call, Raw: executed.Raw})
	if err != nil {
		return nil, executed.DurationMs, err
	}
	r.addTrace(projected.Trace)
	if err := checkCancel(); err != nil {
		return nil, executed.DurationMs, err
	}

	content, postContext, err := r.postToolUse(r.stageCtx, call, reviewed.Hooks, projected.Projection.Content, executed.Raw, executed.DurationMs, 0)
	if err != nil {
		return nil, executed.DurationMs, err
	}
	if err := checkCancel(); err != nil {
		return nil, executed.DurationMs, err
	}

	data := projected.Projection.Metadata
	if ran && r.cancelled {
		data = withEntry(data, "cancel_too_late", map[string]any{"reason": r.cancelReason, "stage": r.cancelStage,
			"note": "the cancel reached the call after its tool ran: the call completed"})
	}
	// Hook context (SessionStart, PreToolUse, PostToolUse) is for the
	// kernel's model: the call has none of its own.
	if extra := joinContext(r.takeModelContext(), governed.additionalContext, postContext); extra != "" {
		data = withEntry(data, "additional_context", extra)
	}
	if r.halted() {
		// The tool ran; the kernel must end its turn here.
		data = withEntry(data, "halt", map[string]any{"reason": r.gov.halt.Reason, "hook": r.gov.halt.Hook, "stage": r.gov.haltStage})
	}
	out, err := r.finalize(content, data)
	if err != nil {
		return nil, executed.DurationMs, err
	}
	if r.processRun != nil {
		meta := projected.Projection.Metadata
		r.processRun.ProcessRunID, _ = meta["process_run_id"].(string)
		r.processRun.HostID, _ = meta["host_id"].(string)
		r.processRun.ProxyPath, _ = meta["proxy_path"].(string)
		r.processRun.LifecycleState = "running"
		if status, ok := meta["status"].(string); ok && status != "" {
			r.processRun.LifecycleState = status
		}
		return out, executed.DurationMs, nil
	}
	r.invocation.Status = "completed"
	r.invocation.ResponsePayload = map[string]any{"content": content, "metadata": projected.Projection.Metadata}
	return out, executed.DurationMs, nil
}

func withEntry(m map[string]any, key string, value any) map[string]any {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]any{}
	}
	out[key] = value
	return out
}

func (r *assignmentRun) finalize(content string, data map[string]any) (*contract.Output, error) {
	fin, err := runPure[activities.FinalizeOutputResult](r.stageCtx, r.session, activities.StageFinalizeOutput,
		stageOptions("FinalizeOutput", pureStageTimeout), acts.FinalizeOutput, activities.FinalizeOutputInput{
			Content: content, Data: data, ConversationID: r.a.ConversationID, TurnID: r.a.TurnID,
		})
	if err != nil {
		return nil, err
	}
	r.addTrace(fin.Trace)
	return &fin.Output, nil
}

// executeTool runs the ExecuteTool stage of a reviewed call. Once it
// ends, the command's open network questions are withdrawn (see
// network_permission.go).
func (s *session) executeTool(ctx workflow.Context, reviewed activities.ReviewToolCallResult, in activities.ExecuteToolInput) (activities.ExecuteToolResult, error) {
	out, err := runStageAs[activities.ExecuteToolResult](ctx, s, s.runsToolLocally(reviewed), activities.StageExecuteTool,
		toolOptions(reviewed), acts.ExecuteTool, in)
	s.commandEnded(ctx, in.ToolCall.CallID)
	return out, err
}

// runsToolLocally is whether ExecuteTool may be a local activity: only in
// the fast mode, for a Local tool (short, idempotent, no side effects)
// that no host owns.
func (s *session) runsToolLocally(reviewed activities.ReviewToolCallResult) bool {
	return s.mode.localRepeatable() && reviewed.Tool.Local && reviewed.TaskQueue == ""
}

// toolOptions derives ExecuteTool's options from the reviewed descriptor:
// host pinning for registry-backed tools, a heartbeat for long tools, and
// no retry for tools whose side effects must not run twice.
func toolOptions(reviewed activities.ReviewToolCallResult) workflow.ActivityOptions {
	tool := reviewed.Tool
	attempts := int32(1)
	if tool.Idempotent {
		attempts = 3
	}
	opts := workflow.ActivityOptions{
		TaskQueue:           reviewed.TaskQueue,
		StartToCloseTimeout: time.Duration(tool.TimeoutSeconds)*time.Second + toolGrace,
		Summary:             "ExecuteTool: " + reviewed.ToolCall.ToolName,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumAttempts:    attempts,
		},
	}
	if tool.HeartbeatSeconds > 0 {
		opts.HeartbeatTimeout = time.Duration(tool.HeartbeatSeconds) * time.Second
		// Wait for the tool to acknowledge cancellation so its processes
		// are gone before the workflow reports canceled.
		opts.WaitForCancellation = true
	}
	if reviewed.TaskQueue != "" {
		opts.ScheduleToStartTimeout = pinnedScheduleTimeout
	}
	return opts
}

// skillFlow returns a skill operation's output directly, skipping tool
// execution, as the seed's execute_skill_flow does.
func (r *assignmentRun) skillFlow() (*contract.Output, error) {
	// An install writes skill files: it stays a regular activity.
	local := r.mode.localRepeatable() && r.a.Mode != contract.ModeSkillsInstall
	res, err := runStageAs[activities.RunSkillResult](r.stageCtx, r.session, local, activities.StageSkills,
		stageOptions("Skills: "+r.a.Mode, pureStageTimeout), acts.RunSkill,
		activities.RunSkillInput{Mode: r.a.Mode, Request: derefSkill(r.a.SkillRequest), WorkspaceRoot: r.a.WorkspaceRoot})
	if err != nil {
		return nil, err
	}
	r.addTrace(res.Trace)
	if err := r.checkCancel(); err != nil {
		return nil, err
	}
	return r.finalize(res.Content, res.Data)
}

func derefSkill(req *contract.SkillRequest) contract.SkillRequest {
	if req == nil {
		return contract.SkillRequest{}
	}
	return *req
}

// finish turns the run's outcome into the result and the terminal report.
func (r *assignmentRun) finish(out *contract.Output, err error) contract.Result {
	res := contract.Result{Reports: nil, Trace: nil}
	switch {
	case err == nil:
		res.Status = contract.StatusCompleted
		res.Output = out
		rep := contract.Report{Kind: contract.ReportComplete, Output: out}
		if r.invocation != nil {
			inv := *r.invocation
			rep.ToolInvocation = &inv
		}
		if r.processRun != nil {
			run := *r.processRun
			rep.ProcessRun = &run
		}
		r.report(rep)
	default:
		in := r.failureInput(err, r.invocation)
		if r.isCanceled(err) {
			res.Status = contract.StatusCanceled
		} else {
			res.Status = contract.StatusFailed
		}
		f := r.handleError(in)
		res.Error = &f
		r.report(contract.Report{Kind: contract.ReportFail, Error: &f})
	}
	r.sessionStop(res.Status, res.Error)
	r.closeAttrs(res.Status)
	r.awaitDeliveries()
	metrics := r.gov.metrics.Metrics()
	res.Metrics = &metrics
	res.Reports = r.reports
	res.Trace = r.trace
	return res
}
