package workflows

import (
	"encoding/json"
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
	return r.execute(input), nil
}

type assignmentRun struct {
	*session
	a          contract.Assignment
	invocation *contract.ToolInvocation
}

func (r *assignmentRun) execute(input json.RawMessage) contract.Result {
	a, err := contract.ParseAssignment(input)
	r.a = a
	r.id = identityOf(a)
	r.reportTo = a.ReportTo
	if err == nil {
		err = a.ValidateForExecution()
	}
	if err != nil {
		r.currentStage = "validate_assignment"
		return r.finish(nil, &stageError{stage: "validate_assignment", err: fenixerr.InvalidAssignment(err)})
	}
	r.report(contract.Report{Kind: contract.ReportStarted})
	out, err := r.run(len(input))
	return r.finish(out, err)
}

func (r *assignmentRun) run(inputBytes int) (*contract.Output, error) {
	if err := offloadContext(r.session, &r.a, inputBytes); err != nil {
		return nil, err
	}
	if _, err := r.prepareContext(); err != nil {
		return nil, err
	}
	if r.a.Mode == contract.ModeTool {
		return r.toolFlow()
	}
	return r.skillFlow()
}

// prepareContext is PrepareTurn → CompactContext, shared with PrepareRound.
func (r *assignmentRun) prepareContext() (activities.CompactContextResult, error) {
	return prepareContext(r.session, r.a, 0)
}

// offloadInputBytes is the input size above which an inline transcript is
// moved into the context store before PrepareTurn, so the transcript is in
// history once (the start event) rather than once per stage.
const offloadInputBytes = 64 << 10

// offloadContext runs StoreContext as a local activity: its input is not
// recorded in history, only its result (the reference) is.
func offloadContext(s *session, a *contract.Assignment, inputBytes int) error {
	if inputBytes <= offloadInputBytes || len(a.ContextMessages) == 0 {
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

func prepareContext(s *session, a contract.Assignment, resultInlineLimit int) (activities.CompactContextResult, error) {
	prep, err := runStage[activities.PrepareTurnResult](s, activities.StagePrepareTurn,
		stageOptions("PrepareTurn", contextStageTimeout), acts.PrepareTurn, activities.PrepareTurnInput{Assignment: a})
	if err != nil {
		return activities.CompactContextResult{}, err
	}
	s.addTrace(prep.Trace)
	if err := s.checkCancel(); err != nil {
		return activities.CompactContextResult{}, err
	}
	comp, err := runStage[activities.CompactContextResult](s, activities.StageCompactContext,
		stageOptions("CompactContext", contextStageTimeout), acts.CompactContext, activities.CompactContextInput{
			Messages:    prep.Messages,
			BudgetHints: a.BudgetHints,
			LikelyModel: prep.LikelyModel,
			Strategy:    a.Compaction.Strategy,
			InlineLimit: resultInlineLimit,
		})
	if err != nil {
		return activities.CompactContextResult{}, err
	}
	s.addTrace(comp.Trace)
	return comp, s.checkCancel()
}

// toolFlow is the seed's deterministic tool flow.
func (r *assignmentRun) toolFlow() (*contract.Output, error) {
	call := *r.a.ToolCall
	r.invocation = &contract.ToolInvocation{CallID: call.CallID, ToolName: call.ToolName, Status: "reviewing", RequestPayload: call}

	reviewed, err := runStage[activities.ReviewToolCallResult](r.session, activities.StageReviewToolCall,
		stageOptions("ReviewToolCall: "+call.ToolName, pureStageTimeout), acts.ReviewToolCall,
		activities.ReviewToolCallInput{ToolCall: call, AgentContext: r.a.AgentContext})
	if err != nil {
		return nil, err
	}
	r.addTrace(reviewed.Trace)
	r.invocation.Status = "running"
	r.invocation.RegistryBacked = reviewed.Tool.RegistryBacked
	reviewedInvocation := *r.invocation
	r.report(contract.Report{Kind: contract.ReportProgress, Phase: contract.PhaseToolReviewed, ToolInvocation: &reviewedInvocation})
	if err := r.checkCancel(); err != nil {
		return nil, err
	}

	executed, err := runStage[activities.ExecuteToolResult](r.session, activities.StageExecuteTool,
		toolOptions(reviewed), acts.ExecuteTool, activities.ExecuteToolInput{
			ToolCall:       reviewed.ToolCall,
			WorkspaceRoot:  r.a.WorkspaceRoot,
			ConversationID: r.a.ConversationID,
			TurnID:         r.a.TurnID,
			AgentProfile:   r.a.AgentContext.Profile,
		})
	if err != nil {
		return nil, err
	}
	r.addTrace(executed.Trace)
	if err := r.checkCancel(); err != nil {
		return nil, err
	}

	projected, err := runStage[activities.ProjectToolResultResult](r.session, activities.StageProjectToolResult,
		stageOptions("ProjectToolResult: "+call.ToolName, pureStageTimeout), acts.ProjectToolResult,
		activities.ProjectToolResultInput{ToolCall: reviewed.ToolCall, Raw: executed.Raw})
	if err != nil {
		return nil, err
	}
	r.addTrace(projected.Trace)
	if err := r.checkCancel(); err != nil {
		return nil, err
	}

	out, err := r.finalize(projected.Projection.Content, projected.Projection.Metadata)
	if err != nil {
		return nil, err
	}
	r.invocation.Status = "completed"
	r.invocation.ResponsePayload = map[string]any{"content": projected.Projection.Content, "metadata": projected.Projection.Metadata}
	return out, nil
}

func (r *assignmentRun) finalize(content string, data map[string]any) (*contract.Output, error) {
	fin, err := runStage[activities.FinalizeOutputResult](r.session, activities.StageFinalizeOutput,
		stageOptions("FinalizeOutput", pureStageTimeout), acts.FinalizeOutput, activities.FinalizeOutputInput{
			Content: content, Data: data, ConversationID: r.a.ConversationID, TurnID: r.a.TurnID,
		})
	if err != nil {
		return nil, err
	}
	r.addTrace(fin.Trace)
	return &fin.Output, nil
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
	res, err := runStage[activities.RunSkillResult](r.session, activities.StageSkills,
		stageOptions("Skills: "+r.a.Mode, pureStageTimeout), acts.RunSkill,
		activities.RunSkillInput{Mode: r.a.Mode, Request: derefSkill(r.a.SkillRequest)})
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
	r.awaitDeliveries()
	res.Reports = r.reports
	res.Trace = r.trace
	return res
}
