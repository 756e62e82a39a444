// Package workflows holds Fenix's Temporal workflows and owns their public
// names: the task queue, workflow types, signal, query and update names and
// workflow-ID builders that kernels and operators depend on.
//
// Workflow code here is deterministic: no time.Now, native goroutines or
// select, map-order iteration, rand or I/O. Stages run as activities (see
// package activities); their results, including every trace entry and hook
// verdict, are recorded in history, so replay sees the same decisions.
package workflows

import "fmt"

// DefaultTaskQueue is the shared task queue every worker polls.
const DefaultTaskQueue = "fenix"

// Workflow types.
const (
	ExecuteAssignmentWorkflow = "ExecuteAssignment"
	PrepareRoundWorkflow      = "PrepareRound"
	AgentTurnWorkflow         = "AgentTurn"
	// ConversationSessionWorkflow is a conversation's Claude Code session
	// (fenix-shape 6): started by the first run of the conversation,
	// ended by the kernel or by idling.
	ConversationSessionWorkflow = "ConversationSession"
)

// Signals, queries and updates.
const (
	// SignalCancel carries CancelRequest.
	SignalCancel = "cancel"
	// SignalToolOutput is sent by a running tool's activity with streamed
	// output chunks; it becomes a progress report.
	SignalToolOutput = "tool_output"
	QueryTrace       = "trace"
	QueryReports     = "reports"
	QueryMetrics     = "metrics"
	// QueryPendingPermissions lists tool calls waiting for decide_permission.
	QueryPendingPermissions = "pending_permissions"
	// UpdateDecidePermission carries PermissionDecision.
	UpdateDecidePermission = "decide_permission"
	// UpdateSessionTouch carries SessionTouch to a conversation's session
	// and answers SessionTouchResult.
	UpdateSessionTouch = "fenix_session_touch"
	// UpdateSessionEnv carries SessionEnvRequest: the run whose
	// SessionStart hooks started the session reports what they wrote to
	// $CLAUDE_ENV_FILE, for the conversation's other runs.
	UpdateSessionEnv = "fenix_session_env"
	// UpdateEndSession carries EndSessionRequest: the kernel ends a
	// conversation's session; it answers EndSessionResult once the
	// SessionEnd hooks ran.
	UpdateEndSession = "fenix_end_session"
	// UpdateSessionNetworkGrant carries activities.NetworkGrant: a person
	// allowed a sandboxed command of the conversation to reach a host,
	// and its later runs are not asked again while the session lasts.
	UpdateSessionNetworkGrant = "fenix_session_network_grant"
	// QuerySession answers a conversation session's ConversationSessionState.
	QuerySession = "session"
)

// CancelRequest is the payload of the cancel signal.
type CancelRequest struct {
	Reason string `json:"reason"`
}

// Permission decisions.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// PermissionDecision is the payload of the decide_permission update.
type PermissionDecision struct {
	CallID   string `json:"call_id"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// ArgsHash is contract.ArgumentsHash of the arguments the decider saw; when
	// set, a call whose arguments hash differently refuses the decision.
	ArgsHash string `json:"args_hash,omitempty"`
	// DecidedBy names who decided (an inbox token's name, the CLI user);
	// it is recorded in the trace and the audit log.
	DecidedBy string `json:"decided_by,omitempty"`
	// Content answers an MCP server's form (an elicitation's allow); it
	// must match the form's schema.
	Content map[string]any `json:"content,omitempty"`
}

// AssignmentWorkflowID is the workflow ID of an assignment's attempt. One
// attempt of one logical work item runs at most once at a time.
func AssignmentWorkflowID(logicalWorkID string, attemptNo int) string {
	return fmt.Sprintf("assignment-%s-%d", logicalWorkID, attemptNo)
}

// PrepareRoundWorkflowID is the workflow ID of a prepare_round request.
func PrepareRoundWorkflowID(logicalWorkID string, attemptNo int) string {
	return fmt.Sprintf("prepare-round-%s-%d", logicalWorkID, attemptNo)
}

// AgentTurnWorkflowID is the workflow ID of an agent turn.
func AgentTurnWorkflowID(conversationID, turnID string) string {
	return fmt.Sprintf("agent-turn-%s-%s", conversationID, turnID)
}

// SubagentWorkflowID is the workflow ID of the subagent a tool call spawns.
// It derives from the assignment, not the parent's workflow ID, so it is
// the same on every replay.
func SubagentWorkflowID(parentLogicalWorkID string, attemptNo int, callID string) string {
	return fmt.Sprintf("subagent-%s-%d-%s", parentLogicalWorkID, attemptNo, callID)
}

// SessionWorkflowID is the workflow ID of a conversation's session on a
// task queue: fenix-session-<conversation_id> on the default queue. A
// session runs its SessionEnd hooks on the workers that ran its
// SessionStart, so a conversation served by another worker pool (task
// queue), with its own hooks, has a session of its own there.
func SessionWorkflowID(taskQueue, conversationID string) string {
	if taskQueue == "" || taskQueue == DefaultTaskQueue {
		return "fenix-session-" + conversationID
	}
	return "fenix-session-" + taskQueue + "-" + conversationID
}
