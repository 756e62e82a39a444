package workflows

import "go.temporal.io/sdk/workflow"

// Workflow versions. Every GetVersion records a marker and upserts the
// TemporalChangeVersion search attribute (two history events), so runs
// started since the fast path read one change ID, versionShape, whose
// value grows with each new shape; older runs replay through the
// per-feature change IDs they were recorded with.
const (
	// versionLifecycleHooks added the lifecycle-hook stages (SessionStart/
	// Stop, Pre/PostToolUse, PostToolUseFailure, Error).
	versionLifecycleHooks = "lifecycle-hooks"
	// versionSearchAttributes added the search-attribute upserts.
	versionSearchAttributes = "search-attributes"
	// versionLocalPureStages made modeLocalPure the default.
	versionLocalPureStages = "local-pure-stages"
	// versionShape is the one change ID of newer runs.
	versionShape = "fenix-shape"
)

// Values of versionShape.
const (
	// shapeFastPath: everything above, modeFast by default, and one
	// search-attribute upsert at start (tool name included) instead of two.
	shapeFastPath workflow.Version = 1
	// shapeClaudeHooks: the turn events Claude Code hooks rely on
	// (UserPromptSubmit, Stop, PostToolBatch, Notification,
	// PermissionDenied), hook context reaching the model, halts ending the
	// turn, deferred calls skipping PermissionRequest hooks, and the
	// transcript in every hook event.
	shapeClaudeHooks workflow.Version = 2
	// shapeBounded: repeated call IDs in one model answer renamed before
	// any call runs, and payloads that repeat tool arguments or hook
	// context bounded (see bounds.go).
	shapeBounded workflow.Version = 3

	// shapeInbox: the AwaitingDecision search attribute while a call
	// waits for a human, and each human or timeout decision recorded with
	// who, when, the arguments hash and the policy fingerprint (trace and
	// a record_permission_decision stage writing the audit row).
	shapeInbox workflow.Version = 4

	// shapeLean: a tool call's review runs first and reports which
	// lifecycle events have a hook to run for the tool; the stages of the
	// others (SessionStart, PreToolUse with only the cancellation guard,
	// PostToolUse, PostToolUseFailure, Error, SessionStop) are left out,
	// and the review's result no longer repeats the call (see lean.go).
	shapeLean workflow.Version = 5

	// shapeConversationSessions: Claude Code dialect hooks see the
	// conversation as the session (one SessionStart per conversation from
	// the ConversationSession workflow's answer, SessionEnd when it ends);
	// Fenix dialect hooks keep the per-run SessionStart/SessionStop. A
	// subagent fires no Claude SessionStart/UserPromptSubmit/SessionEnd,
	// and its events carry the parent's session_id and transcript_path.
	shapeConversationSessions workflow.Version = 6

	// shapeIdleCompaction: PrepareTurn applies CompactContext's gate to
	// the context it assembled, and when nothing needs compacting its
	// result carries CompactContext's answer, so that stage is left out
	// (where the context keeps the worker's inline limit: ExecuteAssignment
	// and AgentTurn, not PrepareRound).
	shapeIdleCompaction workflow.Version = 7

	// shapePrepareBesideReview: a tool call's PrepareTurn, whose messages
	// the tool flow never reads, runs beside its ReviewToolCall (two local
	// activities in flight, one wait) and, when nothing needs compacting,
	// returns its estimates and trace without the messages (see
	// prepare_beside_review.go).
	shapePrepareBesideReview workflow.Version = 8

	// shapeLeanTurn: an agent turn's SessionStart stage also reports which
	// of its session and turn events (UserPromptSubmit, PostToolBatch,
	// StepComplete, Stop, Error, SessionStop) some hook acts on, and the
	// stages of the others are left out, as shapeLean does for a tool
	// call's events.
	shapeLeanTurn workflow.Version = 9

	// shapeTranscriptOnce: an agent turn keeps an inline transcript in
	// workflow state instead of having stages return it again. CallModel
	// returns the answer without the transcript (the workflow appends it),
	// and appending tool results, hook context or Stop feedback that keeps
	// the transcript inline runs no AppendMessages stage (see
	// transcript.go). A transcript over the inline limit is stored as
	// before.
	shapeTranscriptOnce workflow.Version = 10

	// shapeStartAttributes: pending search-attribute updates the run
	// already holds are not upserted, so a run started with
	// StartAttributes (or continued as new) makes no upsert until its
	// status changes, and a subagent's child run starts with its own.
	shapeStartAttributes workflow.Version = 11

	// shapeRunUniqueCallIDs: a call ID an earlier step of the run already
	// used is renamed before the call runs ("x" becomes "x#2"), so each
	// call of a run has its own audit rows (keyed by run and call), its
	// own approval and its own subagent; the transcript keeps the model's
	// ID (see bounds.go).
	shapeRunUniqueCallIDs workflow.Version = 12

	// shapeBoundedIDs: an assignment's identifiers, names and paths over
	// their bounds (contract.MaxIDBytes and the like) are replaced by a
	// short placeholder before the run records any of them, and the run
	// fails with InvalidAssignmentError naming them, instead of being
	// terminated for an oversized search attribute or failing its
	// workflow task forever on an oversized gRPC message. A cancel
	// signal's reason is kept to MaxCancelReasonBytes.
	shapeBoundedIDs workflow.Version = 13

	// shapeOneListener: one coroutine serves the cancel, tool output and
	// rewound signals and a Temporal cancel request, instead of one
	// coroutine each (see listenForSignals). No command changes; the
	// order in which signals of different kinds arriving in the same
	// workflow task are taken may.
	shapeOneListener workflow.Version = 14

	// shapeNetworkAsksEnd: a sandbox network question whose command ended
	// before anyone answered is withdrawn (denied, "command_ended", its
	// audit row written) instead of staying open until the run ends, and
	// a run that has update handlers still running when it finishes waits
	// for them (see network_permission.go).
	shapeNetworkAsksEnd workflow.Version = 15

	// shapeBoundedToolNames: an agent_context.allowed_tool_names over
	// contract.MaxAllowedToolNamesBytes as a whole ends the run with
	// InvalidAssignmentError before any stage carries it: with regular
	// stages the parallel calls of a step each repeated it, and their
	// workflow task overflowed the 4 MB gRPC limit forever.
	shapeBoundedToolNames workflow.Version = 16

	// shapeStepResultBudget: the calls of an agent step with several
	// share activities.StepResultBudget for their raw results (each gets
	// its share in ExecuteToolInput.ResultBudget; a larger result fails
	// that call with PayloadTooLargeError, which the model sees): four
	// parallel 1 MiB reads overflowed the workflow task's 4 MB gRPC
	// message, and the task failed forever.
	shapeStepResultBudget workflow.Version = 17

	// shapeStepHookContext: the calls of an agent step with several share
	// activities.StepHookContextBudget for the additional context their
	// PreToolUse, PostToolUse and PostToolUseFailure hooks give the model
	// (each stage's event carries its share in ContextBudget), and
	// StepArgumentBudget and StepResultBudget for the arguments and
	// output hooks rewrite (ArgsBudget, ResultBudget): a hook adding
	// 64 KiB to 32 parallel calls overflowed the workflow task's 4 MB
	// gRPC message, and the task failed forever.
	shapeStepHookContext workflow.Version = 18

	// shapeToolImages: a tool message names the images its tool returned
	// (contract.Message.Images, by context-store reference), for a model
	// provider that shows them. A tool result without images records the
	// same commands and payloads as before.
	shapeToolImages workflow.Version = 19

	// shapeCancelOutlivesLostWorker: a run canceled while a stage's worker
	// was lost (its stage could not acknowledge the cancel and timed out)
	// ends canceled, its error naming the cancel's reason and what is
	// known of the stage, where it ended failed with WorkerLostError.
	shapeCancelOutlivesLostWorker workflow.Version = 20

	// shapeCallOutlivesLateCancel: a cancel that reaches an assignment's
	// call once ExecuteTool has completed no longer discards it: the
	// call's projection, PostToolUse and output run on where the cancel
	// does not reach, and the run ends completed with the output, whose
	// metadata names the cancel (cancel_too_late). It ended canceled,
	// the invocation failed and PostToolUseFailure fired, and a kernel
	// could run again a side effect it was told never happened. In an
	// AgentTurn the call's projection and PostToolUse run on the same way
	// (its observation recorded, no PostToolUseFailure), and the turn
	// ends canceled before its next step. And an approval.timeout_seconds
	// below 0 or over 30 days ends the run with InvalidAssignmentError
	// (contract.ApprovalOptions.Validate) where it became the default or
	// parked a call for millennia.
	shapeCallOutlivesLateCancel workflow.Version = 21

	shapeLatest = shapeCallOutlivesLateCancel
)

// readVersions sets what the run's versions enable. The order of the
// legacy calls is the order older histories recorded them in.
func (s *session) readVersions() {
	s.shape = workflow.GetVersion(s.ctx, versionShape, workflow.DefaultVersion, shapeLatest)
	if s.shape >= shapeFastPath {
		s.gov.enabled = true
		s.gov.claudeHooks = s.shape >= shapeClaudeHooks
		s.searchAttrs = s.searchAttributesOn()
		s.defaultMode = modeFast
		return
	}
	s.shape = 0
	s.gov.enabled = workflow.GetVersion(s.ctx, versionLifecycleHooks, workflow.DefaultVersion, 1) >= 1
	if workflow.GetVersion(s.ctx, versionSearchAttributes, workflow.DefaultVersion, 1) >= 1 {
		s.searchAttrs = s.searchAttributesOn()
	}
	s.defaultMode = modeRegular
	if workflow.GetVersion(s.ctx, versionLocalPureStages, workflow.DefaultVersion, 1) >= 1 {
		s.defaultMode = modeLocalPure
	}
}
