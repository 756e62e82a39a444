package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// acts is the nil receiver used to name activities by method value, so the
// SDK checks argument types; the worker registers a real instance.
var acts *activities.Activities

// DefaultReportSignal is the signal name reports are delivered with when
// report_to names no signal.
const DefaultReportSignal = "fenix_report"

// stageError is a classified failure of one stage.
type stageError struct {
	stage string
	err   *fenixerr.Error
}

func (e *stageError) Error() string { return fmt.Sprintf("%s: %s", e.stage, e.err.Message) }
func (e *stageError) Unwrap() error { return e.err }

// errCanceledBetweenStages is returned by checkCancel.
var errCanceledBetweenStages = errors.New("canceled between stages")

// identity anchors reports and failures.
type identity struct {
	LogicalWorkID  string
	AttemptNo      int
	ConversationID string
	TurnID         string
}

func identityOf(a contract.Assignment) identity {
	return identity{LogicalWorkID: a.LogicalWorkID, AttemptNo: a.AttemptNo, ConversationID: a.ConversationID, TurnID: a.TurnID}
}

// session is the state every Fenix workflow shares: the cancellation flag
// (the one cancellation source), the trace, the reports, and how stages are
// run. All of it lives in workflow state, so it survives worker crashes and
// is rebuilt by replay.
type session struct {
	ctx          workflow.Context
	stageCtx     workflow.Context
	cancelStages workflow.CancelFunc
	logger       log.Logger

	cancelled    bool
	cancelReason string
	cancelStage  string
	currentStage string

	trace []contract.TraceEntry
	// policy is the policy fingerprint the run's stages last recorded
	// (notePolicy).
	policy   string
	reports  []contract.Report
	id       identity
	reportTo *contract.ReportTarget
	delivery reportDelivery
	gov      governance
	// searchAttrs is whether this run upserts Fenix's search attributes.
	searchAttrs bool
	// pendingAttrs wait for flushAttrs (see upsert).
	pendingAttrs []attrUpdate
	// shape is the run's fenix-shape version (0 for runs from before it).
	shape workflow.Version
	// stepCalls is how many calls the agent step in progress runs in
	// parallel (0 outside one): they share the step's budgets.
	stepCalls int
	// mode is where this run's stages run; defaultMode is the mode when
	// the assignment does not choose (it depends on the workflow version).
	mode        stageMode
	defaultMode stageMode
	// endedCommands are the call IDs whose ExecuteTool has ended (see
	// executeTool); read by key only.
	endedCommands map[string]bool
}

// newSession registers the query handlers and the cancel listener before
// anything blocks, so a query or a cancel sent right after start is served.
func newSession(ctx workflow.Context) (*session, error) {
	s := &session{ctx: ctx, logger: workflow.GetLogger(ctx)}
	s.readVersions()
	s.stageCtx, s.cancelStages = workflow.WithCancel(ctx)
	if err := workflow.SetQueryHandler(ctx, QueryTrace, func() ([]contract.TraceEntry, error) {
		return s.trace, nil
	}); err != nil {
		return nil, err
	}
	if err := workflow.SetQueryHandler(ctx, QueryReports, func() ([]contract.Report, error) {
		return s.reports, nil
	}); err != nil {
		return nil, err
	}
	if err := s.registerGovernance(contract.Metrics{}); err != nil {
		return nil, err
	}
	if err := s.registerNetworkPermission(); err != nil {
		return nil, err
	}
	if err := s.registerElicitation(); err != nil {
		return nil, err
	}
	if s.shape >= shapeOneListener {
		s.listenForSignals()
	} else {
		s.listenForCancel()
		s.listenForToolOutput()
		s.listenForRewind()
	}
	return s, nil
}

// listenForSignals serves the cancel, tool output and rewound signals and
// a Temporal cancel request from one coroutine (shapeOneListener). The
// workflow's dispatcher resumes every coroutine on each of its passes, and
// it makes several passes per stage, so each idle listener cost every
// stage a few goroutine switches.
func (s *session) listenForSignals() {
	cancels := workflow.GetSignalChannel(s.ctx, SignalCancel)
	outputs := workflow.GetSignalChannel(s.ctx, activities.SignalToolOutput)
	rewinds := workflow.GetSignalChannel(s.ctx, SignalRewound)
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		temporalCancel := false
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(cancels, func(c workflow.ReceiveChannel, _ bool) { s.receiveCancel(ctx, c) })
			if !temporalCancel {
				// Done stays ready once closed: listened to once.
				sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {
					temporalCancel = true
					s.requestCancel("Temporal cancellation requested")
				})
			}
			sel.AddReceive(outputs, func(c workflow.ReceiveChannel, _ bool) { s.receiveToolOutput(ctx, c) })
			sel.AddReceive(rewinds, func(c workflow.ReceiveChannel, _ bool) { s.receiveRewound(ctx, c) })
			sel.Select(ctx)
		}
	})
}

// bindAssignment records who the session is working for: report identity,
// the report target and the hook session.
func (s *session) bindAssignment(a contract.Assignment) {
	s.id = identityOf(a)
	s.reportTo = a.ReportTo
	info := workflow.GetInfo(s.ctx)
	s.gov.hookSession = hooks.SessionFromAssignment(info.WorkflowExecution.ID, info.WorkflowExecution.RunID, a)
	s.bindConversationSession(a)
	toolName := ""
	if s.shape >= shapeFastPath && a.ToolCall != nil {
		toolName = a.ToolCall.ToolName
	}
	s.upsert(startAttributes(a.ConversationID, a.TurnID, toolName)...)
	s.mode = s.stageModeFor(a.Execution)
}

// MaxCancelReasonBytes bounds the reason of a cancel signal the run
// keeps (fenix-shape 13): it is repeated in the failure, the reports and
// the trace, and a megabyte-long one overflowed the workflow task's 4 MB
// gRPC message, so the run never ended.
const MaxCancelReasonBytes = 8 << 10

// listenForCancel turns the cancel signal and a Temporal cancel request
// into the same state change.
func (s *session) listenForCancel() {
	signals := workflow.GetSignalChannel(s.ctx, SignalCancel)
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) { s.receiveCancel(ctx, c) })
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {
			s.requestCancel("Temporal cancellation requested")
		})
		sel.Select(ctx)
	})
}

// receiveCancel takes one cancel signal.
func (s *session) receiveCancel(ctx workflow.Context, c workflow.ReceiveChannel) {
	var req CancelRequest
	c.Receive(ctx, &req)
	reason := req.Reason
	if reason == "" {
		reason = "cancel signal without a reason"
	}
	if s.shape >= shapeBoundedIDs {
		reason = contract.TruncateText(reason, MaxCancelReasonBytes)
	}
	s.requestCancel(reason)
}

// listenForToolOutput turns streamed tool output into progress reports
// (before shapeOneListener).
func (s *session) listenForToolOutput() {
	signals := workflow.GetSignalChannel(s.ctx, activities.SignalToolOutput)
	workflow.Go(s.ctx, func(ctx workflow.Context) {
		for s.receiveToolOutput(ctx, signals) {
		}
	})
}

// receiveToolOutput turns one tool output signal into progress reports;
// false when the channel is closed.
func (s *session) receiveToolOutput(ctx workflow.Context, c workflow.ReceiveChannel) bool {
	var sig activities.ToolOutputSignal
	if !c.Receive(ctx, &sig) {
		return false
	}
	for i := range sig.Chunks {
		chunk := sig.Chunks[i]
		s.report(contract.Report{Kind: contract.ReportProgress, Phase: contract.PhaseToolOutput, OutputChunk: &chunk})
	}
	return true
}

func (s *session) requestCancel(reason string) {
	if s.cancelled {
		return
	}
	s.cancelled = true
	s.cancelReason = reason
	s.cancelStage = s.currentStage
	s.logger.Info("cancellation requested", "reason", reason, "stage", s.currentStage)
	s.cancelStages()
	s.setDetails()
}

// checkCancel is the check between every two stages.
func (s *session) checkCancel() error {
	if s.cancelled {
		return errCanceledBetweenStages
	}
	return nil
}

func (s *session) isCanceled(err error) bool {
	if errors.Is(err, errCanceledBetweenStages) {
		return true
	}
	var se *stageError
	if !s.cancelled || !errors.As(err, &se) {
		return false
	}
	// A stage on a worker that died could not acknowledge the cancel: it
	// ended at its heartbeat timeout, and the run was still canceled.
	return se.err.Type == fenixerr.TypeCanceled || se.err.Type == fenixerr.TypeWorkerLost && s.shape >= shapeCancelOutlivesLostWorker
}

func (s *session) addTrace(e contract.TraceEntry) {
	s.trace = append(s.trace, e)
	s.notePolicy(e)
}

// notePolicy follows the policy fingerprint the run's stages record (the
// review, PreToolUse, a permission decision, PostToolUse): a stage that
// ran under another one than the run's first — its activity taken by a
// worker holding other settings while a call waited for approval, or a
// reload — is traced as policy_changed and logged, where a run used to
// finish under the second policy with nothing saying so.
func (s *session) notePolicy(e contract.TraceEntry) {
	fingerprint, _ := e.Get("policy_fingerprint").(string)
	switch {
	case fingerprint == "" || fingerprint == s.policy:
	case s.policy == "":
		s.policy = fingerprint
	default:
		s.logger.Warn("a stage ran under another hook policy than the run's earlier stages", "stage", e.Hook, "from", s.policy, "to", fingerprint)
		s.trace = append(s.trace, contract.Trace("policy_changed", "stage", e.Hook, "from", s.policy, "to", fingerprint))
		s.policy = fingerprint
	}
}

// stageHeartbeatTimeout bounds how long a stage may go without a
// heartbeat before it counts as lost.
const stageHeartbeatTimeout = 20 * time.Second

// stageOptions are the defaults of a stage that is safe to repeat: a
// bounded number of retries for infrastructure failures only (every Fenix
// error is non-retryable at the activity boundary).
func stageOptions(summary string, timeout time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		// The worker heartbeats every stage while it runs, so a lost
		// completion or a dead worker is retried after this, not after
		// the whole start-to-close timeout.
		HeartbeatTimeout: stageHeartbeatTimeout,
		Summary:          summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
			MaximumAttempts:    3,
		},
	}
}

// runStage executes one stage as a regular activity in the cancellable
// stage context and classifies its failure.
func runStage[T any](s *session, stage string, opts workflow.ActivityOptions, activity any, input any) (T, error) {
	return runStageIn[T](s.stageCtx, s, stage, opts, activity, input)
}

// runStageIn is runStage in a given context: a coroutine started with
// workflow.Go must block on its own context, derived from the stage
// context so a cancel still reaches it.
func runStageIn[T any](ctx workflow.Context, s *session, stage string, opts workflow.ActivityOptions, activity any, input any) (T, error) {
	return runStageAs[T](ctx, s, false, stage, opts, activity, input)
}

// runPure runs a stage without I/O (review, projection, finalization,
// HandleError): locally unless the run asks for regular stages.
func runPure[T any](ctx workflow.Context, s *session, stage string, opts workflow.ActivityOptions, activity any, input any) (T, error) {
	return runStageAs[T](ctx, s, s.mode.localPure(), stage, opts, activity, input)
}

// runRepeatable runs a stage that does I/O but is safe to repeat and
// needs no particular host (context preparation, compaction, hooks):
// locally in the fast mode.
func runRepeatable[T any](ctx workflow.Context, s *session, stage string, opts workflow.ActivityOptions, activity any, input any) (T, error) {
	return runStageAs[T](ctx, s, s.mode.localRepeatable(), stage, opts, activity, input)
}

// runStageAs runs a stage as a local activity — one history marker with
// its result, no round trip to the server — or as a regular one.
func runStageAs[T any](ctx workflow.Context, s *session, local bool, stage string, opts workflow.ActivityOptions, activity any, input any) (T, error) {
	var out T
	err := s.getStage(ctx, stage, startStage(ctx, s, local, stage, opts, activity, input), &out)
	return out, err
}

// startStage schedules a stage without waiting for it: runStageAs, or two
// stages in flight at once (see prepare_beside_review.go).
func startStage(ctx workflow.Context, s *session, local bool, stage string, opts workflow.ActivityOptions, activity any, input any) workflow.Future {
	s.currentStage = stage
	s.setDetails()
	if local {
		return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, localOptions(opts)), activity, input)
	}
	s.flushAttrs()
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activity, input)
}

// getStage waits for a started stage and classifies its failure.
func (s *session) getStage(ctx workflow.Context, stage string, f workflow.Future, out any) error {
	if err := f.Get(ctx, out); err != nil {
		return s.classify(stage, err)
	}
	return nil
}

// localOptions keeps a stage's timeout, retries and summary. A local
// activity cannot heartbeat; the SDK keeps its workflow task alive.
func localOptions(opts workflow.ActivityOptions) workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: opts.StartToCloseTimeout, RetryPolicy: opts.RetryPolicy, Summary: opts.Summary,
	}
}

func (s *session) classify(stage string, err error) error {
	fe := fenixerr.FromTemporal(err)
	if s.cancelled {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			fe = fenixerr.New(fenixerr.TypeCanceled, "%s", s.cancelReason)
		}
	}
	return &stageError{stage: stage, err: fe}
}

// handleError runs HandleError in a disconnected context (it must run even
// when the workflow itself is being canceled). If the stage cannot run, the
// same pure rule is applied here so a failure payload always exists.
func (s *session) handleError(in activities.HandleErrorInput) contract.Failure {
	ctx, _ := workflow.NewDisconnectedContext(s.ctx)
	res, err := runPure[activities.HandleErrorResult](ctx, s, activities.StageHandleError,
		stageOptions("HandleError: "+in.Error.Type, 30*time.Second), acts.HandleError, in)
	if err != nil {
		s.logger.Error("HandleError stage failed; building the failure payload in the workflow", "error", err)
		f := activities.BuildFailure(in)
		s.addTrace(activities.FailureTrace(f))
		return f
	}
	s.addTrace(res.Trace)
	return res.Failure
}

// failureInput classifies a run error for HandleError.
func (s *session) failureInput(err error, inv *contract.ToolInvocation) activities.HandleErrorInput {
	in := activities.HandleErrorInput{LogicalWorkID: s.id.LogicalWorkID, AttemptNo: s.id.AttemptNo, ToolInvocation: s.boundedInvocation(inv)}
	var se *stageError
	switch {
	case s.isCanceled(err):
		stage := s.cancelStage
		if stage == "" {
			stage = s.currentStage
		}
		msg := "execution canceled: " + s.cancelReason
		if errors.As(err, &se) && se.err.Type == fenixerr.TypeWorkerLost {
			// The stage could not hear the cancel: what is known of it.
			msg += "; " + se.err.Message
		}
		in.Error = activities.ErrorInfoOf(stage, fenixerr.New(fenixerr.TypeCanceled, "%s", msg))
	case errors.As(err, &se):
		in.Error = activities.ErrorInfoOf(se.stage, se.err)
	default:
		in.Error = activities.ErrorInfoOf(s.currentStage, fenixerr.As(err))
	}
	return in
}
