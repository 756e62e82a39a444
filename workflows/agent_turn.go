package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/tools"
)

const (
	// DefaultMaxSteps bounds an agent turn's model calls.
	DefaultMaxSteps = 10
	// DefaultContinueAsNewEvents keeps a long turn's history well under
	// Temporal's 10,240-event warning.
	DefaultContinueAsNewEvents = 8000
	// MaxSubagentDepth bounds nesting: a subagent at this depth cannot
	// spawn another.
	MaxSubagentDepth = 3
	// DefaultSubagentProfile names a subagent's profile when none is given.
	DefaultSubagentProfile = "subagent"

	modelStageTimeout = 5 * time.Minute
	modelHeartbeat    = 30 * time.Second
)

// errContinueAsNew ends a run so the turn continues in a new one.
var errContinueAsNew = errors.New("continue as new")

// AgentTurn is the durable ReAct loop: SessionStart → up to max_steps of
// (PrepareTurn → CompactContext → CallModel → every tool call in parallel
// through ReviewToolCall, PreToolUse, ExecuteTool, ProjectToolResult and
// PostToolUse → StepComplete) until the model answers without tool calls →
// FinalizeOutput → SessionStop. spawn_subagent runs a child AgentTurn.
func AgentTurn(ctx workflow.Context, input json.RawMessage) (contract.Result, error) {
	s, err := newSession(ctx)
	if err != nil {
		return contract.Result{}, err
	}
	t := &turnRun{session: s}
	res, err := t.execute(input)
	if errors.Is(err, errContinueAsNew) {
		return contract.Result{}, t.continueAsNew()
	}
	s.finishHandlers()
	return res, err
}

type turnRun struct {
	*session
	req        contract.AgentTurnRequest
	model      string
	transcript contract.MessageSet
	step       int
	previous   []string
	// stopBlocks counts the stops Stop hooks blocked in this turn.
	stopBlocks int
	// usedCallIDs are the call IDs this run's steps ran (see
	// runUniqueCallIDs).
	usedCallIDs map[string]bool
}

func (t *turnRun) execute(input json.RawMessage) (contract.Result, error) {
	req, err := contract.ParseAgentTurn(input)
	err = t.boundIdentifiers(req.BoundIdentifiers, &req.Assignment, err)
	if err == nil && t.shape >= shapeCallOutlivesLateCancel {
		err = req.Approval.Validate()
	}
	t.req = req
	t.gov.approvalTimeout = time.Duration(req.Approval.TimeoutSeconds) * time.Second
	t.bindAssignment(req.Assignment)
	if req.MaxSteps == 0 {
		t.req.MaxSteps = DefaultMaxSteps
	}
	t.model = req.Model
	if t.model == "" {
		t.model = req.InferModel()
	}
	t.gov.asksTurnEvents = t.shape >= shapeLeanTurn
	if c := req.Continuation; c != nil {
		t.resume(*c)
	} else {
		t.sessionStart()
	}
	if err != nil {
		t.currentStage = "validate_assignment"
		return t.finish(nil, &stageError{stage: "validate_assignment", err: fenixerr.InvalidAssignment(err)}), nil
	}
	if req.Continuation == nil {
		t.report(contract.Report{Kind: contract.ReportStarted})
		if err := offloadContext(t.session, &t.req.Assignment, len(input)); err != nil {
			return t.finish(nil, err), nil
		}
		t.transcript = contract.MessageSet{Messages: t.req.ContextMessages, Ref: t.req.ContextRef, Count: len(t.req.ContextMessages)}
		t.setHookTranscript(t.transcript)
		if t.halted() {
			return t.finish(nil, t.haltError()), nil
		}
		if err := t.userPromptSubmit(lastUserMessage(req.ContextMessages)); err != nil {
			return t.finish(nil, err), nil
		}
	}
	out, err := t.loop()
	if errors.Is(err, errContinueAsNew) {
		return contract.Result{}, err
	}
	return t.finish(out, err), nil
}

// resume restores a continued turn: its transcript, step count and metrics.
func (t *turnRun) resume(c contract.TurnContinuation) {
	t.transcript = c.Transcript
	t.step = c.Step
	t.previous = c.PreviousRunIDs
	t.gov.metrics = builtin.NewMetricsHook(c.Metrics, t.logger.Info)
	t.addTrace(contract.Trace("continued", "step", c.Step, "previous_run_ids", c.PreviousRunIDs, "transcript_messages", c.Transcript.Count))
	// SessionStart with source "resume": hooks see the session continue.
	t.gov.started = true
	t.setHookTranscript(t.transcript)
	ev := hooks.SessionStartEvent{Session: t.hookSession(), Source: hooks.SourceResume}
	in := activities.LifecycleHooksInput{SessionStart: &ev}
	t.scopeResume(&in)
	t.askTurnEvents(&in)
	sum := t.lifecycle(t.stageCtx, in)
	t.addModelContext(sum.AdditionalContext)
	t.gov.sessionEnv = sum.SessionEnv
}

// lastUserMessage is the prompt a turn answers: its last user message.
func lastUserMessage(msgs []contract.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == contract.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

func (t *turnRun) loop() (*contract.Output, error) {
	for t.step < t.req.MaxSteps {
		if err := t.checkCancel(); err != nil {
			return nil, err
		}
		if t.halted() {
			return nil, t.haltError()
		}
		if text := t.takeModelContext(); text != "" {
			if err := t.appendMessages([]contract.Message{contextMessage(text)}); err != nil {
				return nil, err
			}
		}
		step := t.step + 1
		prompt, err := t.prepare()
		if err != nil {
			return nil, err
		}
		in := t.modelInput(prompt, step)
		answer, err := runStage[activities.CallModelResult](t.session, activities.StageCallModel, t.modelOptions(step), acts.CallModel, in)
		if err != nil {
			return nil, err
		}
		t.addTrace(answer.Trace)
		if err := t.takeAnswer(in, answer); err != nil {
			return nil, err
		}
		calls := answer.Message.ToolCalls
		if len(calls) == 0 {
			verdict, err := t.stopHooks(answer.Message.Content, step, t.stopBlocks)
			if err != nil {
				return nil, err
			}
			t.step = step
			t.stepComplete(step, 0, answer.Usage)
			if verdict.keepGoing {
				if step < t.req.MaxSteps {
					t.stopBlocks++
					if err := t.appendMessages([]contract.Message{stopFeedback(verdict.reason)}); err != nil {
						return nil, err
					}
					continue
				}
				t.addTrace(contract.Trace(activities.StageStop, "overridden", "max_steps reached: the turn ends with this answer",
					"max_steps", t.req.MaxSteps))
			}
			return t.finalizeTurn(answer.Message.Content)
		}
		batch, err := t.runTools(step, calls)
		if err != nil {
			return nil, err
		}
		if err := t.appendMessages(batch.transcript); err != nil {
			return nil, err
		}
		// A halt still completes the step (metrics, StepComplete hooks)
		// before the turn ends.
		if err := t.postToolBatch(step, batch.calls, batch.messages, batch.failed); err != nil && !t.halted() {
			return nil, err
		}
		t.step = step
		t.stepComplete(step, len(calls), answer.Usage)
		if t.halted() {
			return nil, t.haltError()
		}
		if t.shouldContinueAsNew() {
			return nil, errContinueAsNew
		}
	}
	return nil, &stageError{stage: activities.StageCallModel, err: fenixerr.New(fenixerr.TypeStepLimit,
		"the agent took %d steps without a final answer (max_steps %d)", t.step, t.req.MaxSteps)}
}

// prepare is PrepareTurn → CompactContext over the current transcript.
func (t *turnRun) prepare() (contract.MessageSet, error) {
	a := t.req.Assignment
	a.ContextMessages, a.ContextRef = t.transcript.Messages, t.transcript.Ref
	comp, err := prepareContext(t.session, a, 0, false)
	if err == nil && comp.Compacted {
		t.sessionCompacted()
	}
	return comp.Messages, err
}

func (t *turnRun) modelOptions(step int) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: modelStageTimeout,
		HeartbeatTimeout:    modelHeartbeat,
		Summary:             fmt.Sprintf("CallModel: %s (step %d)", t.model, step),
		// 429/5xx come back retryable (with Retry-After as the next
		// delay); every other provider error is non-retryable.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 6},
	}
}

// stopFeedback is a Stop hook's reason as the agent's next instruction.
func stopFeedback(reason string) contract.Message {
	return contract.Message{Role: contract.RoleUser, Content: "A hook asked you to continue before finishing:\n" + reason}
}

// toolResult is one tool call's observation for the model.
type toolResult struct {
	message contract.Message
	// failed marks an observation of a failed, blocked or denied call.
	failed bool
	err    error
}

// toolBatch is one step's calls (with their IDs filled in) and their
// observations, in the model's order.
type toolBatch struct {
	calls    []contract.ToolCall
	messages []contract.Message
	failed   []bool
	// transcript is messages as the transcript keeps them: answering the
	// call IDs of the model's message (see runUniqueCallIDs).
	transcript []contract.Message
}

// runTools runs every call of one model answer in parallel; results keep
// the model's order. Only cancellation is fatal to the turn: other
// failures become observations the model can react to.
func (t *turnRun) runTools(step int, calls []contract.ToolCall) (toolBatch, error) {
	results := make([]toolResult, len(calls))
	batch := toolBatch{calls: make([]contract.ToolCall, len(calls)), messages: make([]contract.Message, len(calls)), failed: make([]bool, len(calls))}
	for i, call := range calls {
		if call.CallID == "" {
			call.CallID = fmt.Sprintf("call-%d-%d", step, i+1)
		}
		if call.Arguments == nil {
			call.Arguments = map[string]any{}
		}
		batch.calls[i] = call
	}
	t.uniqueCallIDs(step, batch.calls)
	modelIDs := t.runUniqueCallIDs(step, batch.calls)
	t.stepCalls = len(batch.calls)
	defer func() { t.stepCalls = 0 }()
	wg := workflow.NewWaitGroup(t.ctx)
	for i := range batch.calls {
		call := batch.calls[i]
		wg.Add(1)
		workflow.Go(t.stageCtx, func(ctx workflow.Context) {
			defer wg.Done()
			results[i] = t.runTool(ctx, step, call, t.stepShare(activities.StepResultBudget, shapeStepResultBudget))
		})
	}
	wg.Wait(t.ctx)
	for i, r := range results {
		if r.err != nil {
			return toolBatch{}, r.err
		}
		batch.messages[i] = r.message
		batch.failed[i] = r.failed
	}
	batch.transcript = batch.messages
	if modelIDs != nil {
		batch.transcript = slices.Clone(batch.messages)
		for i := range batch.transcript {
			batch.transcript[i].ToolCallID = modelIDs[i]
		}
	}
	return batch, nil
}

// runTool takes one call through the governed pipeline, blocking only on
// its own coroutine's context.
func (t *turnRun) runTool(ctx workflow.Context, step int, call contract.ToolCall, budget int) toolResult {
	if call.ToolName == activities.SubagentToolName {
		return t.runSubagent(ctx, step, call)
	}
	if err := t.oversizedArguments(call); err != nil {
		return t.observeFailure(ctx, step, boundedCall(call), err, 0)
	}
	reviewed, err := t.reviewCall(ctx, call, t.req.AgentContext)
	if err != nil {
		return t.observeFailure(ctx, step, call, err, 0)
	}
	t.addTrace(reviewed.Trace)
	t.report(contract.Report{Kind: contract.ReportProgress, Phase: contract.PhaseToolReviewed, ToolInvocation: &contract.ToolInvocation{
		CallID: call.CallID, ToolName: call.ToolName, Status: "running", RequestPayload: reviewed.ToolCall, RegistryBacked: reviewed.Tool.RegistryBacked}})
	governed, err := t.governToolCall(ctx, reviewed.ToolCall, reviewed.Hooks, step, time.Duration(t.req.Approval.TimeoutSeconds)*time.Second)
	if err != nil {
		return t.observeFailure(ctx, step, call, err, 0)
	}
	call = governed.call
	executed, err := t.executeTool(ctx, reviewed, activities.ExecuteToolInput{ToolCall: call, WorkspaceRoot: t.req.WorkspaceRoot,
		ConversationID: t.req.ConversationID, TurnID: t.req.TurnID, AgentProfile: t.req.AgentContext.Profile,
		ReachedPath: governed.reachedPath, SessionEnv: t.sessionEnvFor(call.ToolName), ResultBudget: budget})
	if err != nil {
		_, err = explainLostTool(call, err)
		return t.observeFailure(ctx, step, call, err, 0)
	}
	t.addTrace(executed.Trace)
	if t.shape >= shapeCallOutlivesLateCancel {
		// The tool ran: its projection and PostToolUse run where a cancel
		// does not reach, so the call is recorded as it happened (the turn
		// still ends canceled before its next step).
		ctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	projected, err := runPure[activities.ProjectToolResultResult](ctx, t.session, activities.StageProjectToolResult,
		stageOptions("ProjectToolResult: "+call.ToolName, pureStageTimeout), acts.ProjectToolResult,
		activities.ProjectToolResultInput{ToolCall: call, Raw: executed.Raw})
	if err != nil {
		return t.observeFailure(ctx, step, call, err, executed.DurationMs)
	}
	t.addTrace(projected.Trace)
	content, extra, err := t.postToolUse(ctx, call, reviewed.Hooks, projected.Projection.Content, executed.Raw, executed.DurationMs, step)
	if err != nil {
		return t.observeFailure(ctx, step, call, err, executed.DurationMs)
	}
	msg := toolMessage(call, withContext(content, joinContext(governed.additionalContext, extra)))
	if t.shape >= shapeToolImages {
		msg.Images = imagesOf(projected.Projection.Metadata)
	}
	return toolResult{message: msg}
}

// maxImagesPerToolMessage bounds the images one tool message names.
const maxImagesPerToolMessage = 8

// imagesOf are the image attachments of a projection's metadata.
func imagesOf(meta map[string]any) []contract.ImageRef {
	attached, err := tools.AttachmentsOf(meta)
	if err != nil {
		return nil
	}
	var out []contract.ImageRef
	for _, a := range attached {
		if a.Type == tools.AttachmentImage && a.Ref != "" && len(out) < maxImagesPerToolMessage {
			out = append(out, contract.ImageRef{Ref: a.Ref, MIMEType: a.MIMEType, Bytes: a.Bytes})
		}
	}
	return out
}

// observeFailure records a failed call (hooks, audit, metrics) and turns it
// into an observation, unless the turn itself is being canceled.
func (t *turnRun) observeFailure(ctx workflow.Context, step int, call contract.ToolCall, err error, durationMs int64) toolResult {
	extra := t.toolFailed(ctx, call, err, durationMs, step)
	if t.isCanceled(err) {
		return toolResult{err: err}
	}
	fe := fenixerr.FromTemporal(err)
	var se *stageError
	if errors.As(err, &se) {
		fe = se.err
	}
	t.addTrace(contract.Trace("tool_failed", "tool_name", call.ToolName, "call_id", call.CallID, "error_type", fe.Type,
		"classification", string(fe.Class), "code", fe.Code, "error", fe.Message))
	observation := fmt.Sprintf("Tool %s failed (%s, %s): %s", call.ToolName, fe.Type, fe.Code, fe.Message)
	if !t.gov.claudeHooks {
		return toolResult{message: toolMessage(call, observation)}
	}
	return toolResult{message: toolMessage(call, withContext(observation, extra)), failed: true}
}

func toolMessage(call contract.ToolCall, content string) contract.Message {
	return contract.Message{Role: contract.RoleTool, ToolCallID: call.CallID, Name: call.ToolName, Content: content}
}

// joinContext joins hook contexts, skipping empty ones.
func joinContext(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n")
}

func withContext(content, additional string) string {
	if additional == "" {
		return content
	}
	return content + "\n\nAdditional context:\n" + additional
}

// runSubagent runs spawn_subagent as a child AgentTurn with is_subagent set
// and a subset of this agent's tools. Cancelling this turn cancels it.
func (t *turnRun) runSubagent(ctx workflow.Context, step int, call contract.ToolCall) toolResult {
	agent := t.req.AgentContext
	if !slices.Contains(agent.AllowedToolNames, activities.SubagentToolName) {
		return t.observeFailure(ctx, step, call, &stageError{stage: activities.StageReviewToolCall,
			err: fenixerr.ToolNotVisible(call.ToolName, agent.Profile)}, 0)
	}
	args, err := subagentArgs(call, agent)
	if err != nil {
		return t.observeFailure(ctx, step, call, &stageError{stage: activities.StageReviewToolCall, err: fenixerr.As(err)}, 0)
	}
	t.addTrace(contract.Trace(activities.StageReviewToolCall, "tool_name", call.ToolName, "call_id", call.CallID,
		"subagent_profile", args.Profile, "subagent_tools", args.AllowedToolNames))
	governed, err := t.governToolCall(ctx, call, nil, step, time.Duration(t.req.Approval.TimeoutSeconds)*time.Second)
	if err != nil {
		return t.observeFailure(ctx, step, call, err, 0)
	}
	if governed.call.Arguments != nil {
		if args, err = subagentArgs(governed.call, agent); err != nil {
			return t.observeFailure(ctx, step, call, &stageError{stage: activities.StagePreToolUse, err: fenixerr.As(err)}, 0)
		}
	}

	childID := SubagentWorkflowID(t.req.LogicalWorkID, t.req.AttemptNo, call.CallID)
	start := hooks.SubagentStartEvent{Session: t.hookSession(), SubagentID: childID, SubagentProfile: args.Profile, Task: args.Task, Depth: agent.SubagentDepth + 1}
	startSummary := t.lifecycle(ctx, activities.LifecycleHooksInput{SubagentStart: &start})

	child := t.childRequest(call, args)
	if t.gov.claudeHooks && startSummary.AdditionalContext != "" {
		// SubagentStart context starts the subagent's conversation.
		child.ContextMessages = append(child.ContextMessages, contextMessage(startSummary.AdditionalContext))
	}
	raw, _ := json.Marshal(child)
	started := workflow.Now(t.ctx)
	childOpts := workflow.ChildWorkflowOptions{
		WorkflowID:          childID,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
		StaticSummary:       fmt.Sprintf("Subagent %s of %s", args.Profile, call.CallID),
	}
	if t.searchAttrs && t.shape >= shapeStartAttributes {
		childOpts.TypedSearchAttributes = StartAttributes(child.Assignment)
	}
	childCtx := workflow.WithChildOptions(ctx, childOpts)
	t.currentStage = "subagent"
	t.flushAttrs()
	var res contract.Result
	err = workflow.ExecuteChildWorkflow(childCtx, AgentTurnWorkflow, json.RawMessage(raw)).Get(childCtx, &res)
	duration := workflow.Now(t.ctx).Sub(started).Milliseconds()

	stop := hooks.SubagentStopEvent{Session: t.hookSession(), SubagentID: childID, SubagentProfile: args.Profile, StopReason: res.Status}
	if err != nil {
		stop.StopReason = contract.StatusFailed
		if t.cancelled {
			stop.StopReason = contract.StatusCanceled
		}
		stop.ErrorMessage = err.Error()
	} else if res.Error != nil {
		stop.ErrorMessage = res.Error.LastErrorSummary
	}
	stopCtx, _ := workflow.NewDisconnectedContext(ctx)
	t.lifecycle(stopCtx, activities.LifecycleHooksInput{SubagentStop: &stop})
	if err != nil {
		return t.observeFailure(ctx, step, call, t.classify("subagent", err), duration)
	}
	t.addTrace(contract.Trace("subagent", "call_id", call.CallID, "workflow_id", childID, "status", res.Status,
		"steps", metricSteps(res.Metrics), "tool_calls", metricToolCalls(res.Metrics)))
	if t.cancelled {
		return toolResult{err: errCanceledBetweenStages}
	}
	if res.Status != contract.StatusCompleted || res.Output == nil {
		summary := "no output"
		if res.Error != nil {
			summary = fmt.Sprintf("%s: %s", res.Error.ErrorType, res.Error.LastErrorSummary)
		}
		return t.observeFailure(ctx, step, call, &stageError{stage: "subagent", err: fenixerr.Runtime("subagent %s ended %s: %s", childID, res.Status, summary)}, duration)
	}
	content, extra, err := t.postToolUse(ctx, call, nil, res.Output.Content, nil, duration, step)
	if err != nil {
		return t.observeFailure(ctx, step, call, err, duration)
	}
	return toolResult{message: toolMessage(call, withContext(content, joinContext(governed.additionalContext, extra)))}
}

func metricSteps(m *contract.Metrics) int {
	if m == nil {
		return 0
	}
	return m.Steps
}

func metricToolCalls(m *contract.Metrics) int {
	if m == nil {
		return 0
	}
	return m.ToolCalls
}

// subagentArgs validates spawn_subagent's arguments: the child's tools are
// a subset of the parent's, and nesting is bounded.
func subagentArgs(call contract.ToolCall, parent contract.AgentContext) (activities.SubagentArgs, error) {
	var args activities.SubagentArgs
	raw, _ := json.Marshal(call.Arguments)
	if err := json.Unmarshal(raw, &args); err != nil || args.Task == "" {
		return args, fenixerr.Validation("spawn_subagent needs a task (got %s)", raw).WithTool(call.ToolName)
	}
	if parent.SubagentDepth+1 > MaxSubagentDepth {
		return args, fenixerr.Validation("spawn_subagent: subagents may nest at most %d deep", MaxSubagentDepth).WithTool(call.ToolName)
	}
	if args.Profile == "" {
		args.Profile = DefaultSubagentProfile
	}
	if len(args.AllowedToolNames) == 0 {
		for _, n := range parent.AllowedToolNames {
			if n != activities.SubagentToolName {
				args.AllowedToolNames = append(args.AllowedToolNames, n)
			}
		}
	}
	for _, n := range args.AllowedToolNames {
		if !slices.Contains(parent.AllowedToolNames, n) {
			return args, fenixerr.ToolNotVisible(n, parent.Profile).WithTool(call.ToolName)
		}
	}
	if args.MaxSteps < 0 || args.MaxSteps > 50 {
		return args, fenixerr.Validation("spawn_subagent max_steps must be between 1 and 50").WithTool(call.ToolName)
	}
	return args, nil
}

func (t *turnRun) childRequest(call contract.ToolCall, args activities.SubagentArgs) contract.AgentTurnRequest {
	parent := t.req.Assignment
	model := t.model
	if llm.IsScriptedModel(model) {
		model = llm.ScriptedModelPrefix + args.Profile
	}
	return contract.AgentTurnRequest{
		Assignment: contract.Assignment{
			LogicalWorkID:   contract.ChildID(parent.LogicalWorkID, call.CallID),
			AttemptNo:       parent.AttemptNo,
			ConversationID:  parent.ConversationID,
			TurnID:          contract.ChildID(parent.TurnID, call.CallID),
			ContextMessages: []contract.Message{{Role: contract.RoleUser, Content: args.Task}},
			AgentContext: contract.AgentContext{Profile: args.Profile, IsSubagent: true,
				AllowedToolNames: args.AllowedToolNames, SubagentDepth: parent.AgentContext.SubagentDepth + 1,
				ParentSessionID: t.parentSessionForChild(), PermissionMode: parent.AgentContext.PermissionMode},
			ModelContext:  contract.ModelContext{LikelyModel: model},
			BudgetHints:   parent.BudgetHints,
			WorkspaceRoot: parent.WorkspaceRoot,
			Compaction:    parent.Compaction,
			Approval:      parent.Approval,
		},
		MaxSteps:  args.MaxSteps,
		MaxTokens: t.req.MaxTokens,
	}
}

// appendMessages adds the tool results to the transcript: in workflow
// state while it stays inline (fenix-shape 10), else in a local activity
// that stores it (the results are already in history).
func (t *turnRun) appendMessages(messages []contract.Message) error {
	if longer, ok := t.appendInline(messages); ok {
		t.transcript = longer
		t.setHookTranscript(t.transcript)
		return nil
	}
	ctx := workflow.WithLocalActivityOptions(t.stageCtx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute, Summary: "AppendMessages",
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	var res activities.AppendMessagesResult
	if err := workflow.ExecuteLocalActivity(ctx, acts.AppendMessages, activities.AppendMessagesInput{Transcript: t.transcript, Messages: messages}).Get(ctx, &res); err != nil {
		return t.classify(activities.StageAppendMessages, err)
	}
	t.transcript = res.Transcript
	t.setHookTranscript(t.transcript)
	return nil
}

func (t *turnRun) stepComplete(step, toolCalls int, usage llm.Usage) {
	ev := hooks.StepCompleteEvent{Session: t.hookSession(), Step: step, ToolCalls: toolCalls,
		Usage: hooks.TokenUsage{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens, TotalTokens: usage.TotalTokens}}
	_ = t.gov.metrics.OnStepComplete(context.Background(), ev)
	in := activities.LifecycleHooksInput{StepComplete: &ev}
	t.touchSession(&in, step)
	t.lifecycle(t.stageCtx, in)
}

func (t *turnRun) finalizeTurn(content string) (*contract.Output, error) {
	fin, err := runPure[activities.FinalizeOutputResult](t.stageCtx, t.session, activities.StageFinalizeOutput,
		stageOptions("FinalizeOutput", pureStageTimeout), acts.FinalizeOutput, activities.FinalizeOutputInput{
			Content: content, ConversationID: t.req.ConversationID, TurnID: t.req.TurnID,
			Data: map[string]any{"steps": t.step},
		})
	if err != nil {
		return nil, err
	}
	t.addTrace(fin.Trace)
	return &fin.Output, nil
}

func (t *turnRun) shouldContinueAsNew() bool {
	info := workflow.GetInfo(t.ctx)
	limit := t.req.ContinueAsNewAfterEvents
	if limit == 0 {
		limit = DefaultContinueAsNewEvents
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= limit
}

// continueAsNew carries the compacted transcript, the step count and the
// metrics into a new run, after every update handler has finished.
func (t *turnRun) continueAsNew() error {
	if err := workflow.Await(t.ctx, func() bool { return workflow.AllHandlersFinished(t.ctx) }); err != nil {
		return err
	}
	a := t.req.Assignment
	comp, err := compactContext(t.session, a, t.transcript, t.model, 0)
	if err != nil {
		return err
	}
	next := t.req
	next.ContextMessages, next.ContextRef = nil, ""
	next.Model = t.model
	next.Continuation = &contract.TurnContinuation{
		Transcript:     comp.Messages,
		Step:           t.step,
		Metrics:        t.gov.metrics.Metrics(),
		PreviousRunIDs: append(slices.Clone(t.previous), workflow.GetInfo(t.ctx).WorkflowExecution.RunID),
	}
	raw, _ := json.Marshal(next)
	t.logger.Info("continuing the agent turn as new", "step", t.step, "history_events", workflow.GetInfo(t.ctx).GetCurrentHistoryLength())
	return workflow.NewContinueAsNewError(t.ctx, AgentTurnWorkflow, json.RawMessage(raw))
}

// finish is shared with ExecuteAssignment's terminal handling.
func (t *turnRun) finish(out *contract.Output, err error) contract.Result {
	r := &assignmentRun{session: t.session, a: t.req.Assignment}
	return r.finish(out, err)
}
