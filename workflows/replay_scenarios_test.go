package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// scenario is one workflow shape worth a replay history.
type scenario struct {
	file string
	run  func(ctx context.Context, c client.Client, queue string) (client.WorkflowRun, error)
}

func startJSON(ctx context.Context, c client.Client, queue, workflowType, id string, input any) (client.WorkflowRun, error) {
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflowType, json.RawMessage(raw))
}

// startAttributed starts like Fenix's starters: with the run's start
// search attributes (workflows.StartWorkflow, fenix-shape 11).
func startAttributed(ctx context.Context, c client.Client, queue, workflowType, id string, input any) (client.WorkflowRun, error) {
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	return workflows.StartWorkflowJSON(ctx, c, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflowType, raw)
}

// withTool is the calculator assignment making another call, with the
// tools it may use.
func withTool(call map[string]any, allowed ...string) map[string]any {
	a := calculatorAssignment()
	a["tool_call"] = call
	if len(allowed) > 0 {
		a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": allowed}
	}
	return a
}

func scenarios() []scenario {
	// A calculator call the test policy asks about, denied by a 1s expiry.
	timeoutScenario := func(id string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := withTool(map[string]any{"call_id": "ask-2", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}})
			a["approval"] = map[string]any{"timeout_seconds": 1}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id, a)
		}
	}
	// The same call, canceled while it waits.
	cancelWhileWaitingScenario := func(id string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id,
				withTool(map[string]any{"call_id": "ask-3", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
			if err != nil {
				return nil, err
			}
			if err := waitForPhase(ctx, c, run, contract.PhasePermissionPending); err != nil {
				return nil, err
			}
			return run, c.CancelWorkflow(ctx, run.GetID(), run.GetRunID())
		}
	}
	return []scenario{
		{"execute_assignment_calculator.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-calculator", calculatorAssignment())
		}},
		{"execute_assignment_workspace_read.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-workspace-read",
				withTool(map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}))
		}},
		{"execute_assignment_tool_not_visible.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-not-visible",
				withTool(map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}, "calculator"))
		}},
		{"execute_assignment_invalid.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-invalid", map[string]any{"logical_work_id": "w"})
		}},
		{"execute_assignment_canceled.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-canceled",
				withTool(map[string]any{"call_id": "c", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 120}}, "test_sleep"))
			if err != nil {
				return nil, err
			}
			return run, cancelOnceReviewed(ctx, c, run)
		}},
		{"prepare_round_large_context.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			// Over the 64 KiB offload threshold: StoreContext runs as a
			// local activity before PrepareTurn.
			a := calculatorAssignment()
			delete(a, "tool_call")
			var msgs []map[string]any
			for i := 0; i < 100; i++ {
				msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("message %d %s", i, strings.Repeat("lorem ipsum ", 60))})
			}
			a["context_messages"] = msgs
			a["budget_hints"] = map[string]any{"advisory_compaction_threshold_tokens": 500}
			return startJSON(ctx, c, q, workflows.PrepareRoundWorkflow, "replay-large-context", a)
		}},
		// Shapes with lifecycle hooks (version lifecycle-hooks = 1).
		{"governed_calculator.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-governed-calculator",
				withTool(map[string]any{"call_id": "rewrite-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
		}},
		{"governed_blocked.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-governed-blocked",
				withTool(map[string]any{"call_id": "block-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
		}},
		{"governed_permission_allowed.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-governed-permission",
				withTool(map[string]any{"call_id": "ask-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
			if err != nil {
				return nil, err
			}
			if err := waitForPhase(ctx, c, run, contract.PhasePermissionPending); err != nil {
				return nil, err
			}
			handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: run.GetID(), RunID: run.GetRunID(), UpdateName: workflows.UpdateDecidePermission,
				WaitForStage: client.WorkflowUpdateStageCompleted,
				Args:         []any{workflows.PermissionDecision{CallID: "ask-1", Decision: workflows.DecisionAllow, Reason: "recorded approval"}},
			})
			if err != nil {
				return nil, err
			}
			return run, handle.Get(ctx, nil)
		}},
		{"governed_permission_timeout.json", timeoutScenario("replay-governed-timeout")},
		{"governed_canceled_while_waiting.json", cancelWhileWaitingScenario("replay-governed-cancel")},
		{"governed_skills_catalog.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			raw, err := os.ReadFile(filepath.Join("..", "examples", "skills_catalog.json"))
			if err != nil {
				return nil, err
			}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-skills-catalog", json.RawMessage(raw))
		}},
		{"governed_prepare_round_summary.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.PrepareRoundWorkflow, "replay-summary", summaryAssignment())
		}},
		{"governed_process_flow.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-process-flow",
				withTool(map[string]any{"call_id": "proc-1", "tool_name": "process_exec", "arguments": map[string]any{"command_line": "sleep 30"}}, "process_exec"))
		}},
		{"governed_exec_command.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-exec-command",
				withTool(map[string]any{"call_id": "exec-1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "echo hello; echo oops >&2; exit 3"}}, "exec_command"))
		}},
		{"agent_turn_answer.json", agentScenario("answer", 5, nil)},
		{"agent_turn_tool.json", agentScenario("main", 5, nil)},
		{"agent_turn_parallel.json", agentScenario("parallel", 5, nil)},
		{"agent_turn_blocked.json", agentScenario("blocked", 5, nil)},
		{"agent_turn_subagent.json", agentScenario("delegating", 5, nil)},
		{"agent_turn_max_steps.json", agentScenario("endless", 2, nil)},
		{"agent_turn_permission.json", agentScenario("ask", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return decidePermission(ctx, c, run, "ask-1")
		})},
		{"agent_turn_canceled.json", agentScenario("slow", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return cancelOnceReviewed(ctx, c, run)
		})},
		{"agent_turn_continue_as_new.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("long", 10)
			req["continue_as_new_after_events"] = 40
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-agent-can", req)
		}},
		{"search_attributes_calculator.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-search-attributes", calculatorAssignment())
		}},
		// Pure stages as local activities (the default since local-pure-stages).
		{"local_pure_stages_calculator.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-local-calculator", calculatorAssignment())
		}},
		{"local_pure_stages_not_visible.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-local-not-visible",
				withTool(map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}, "calculator"))
		}},
		{"local_pure_stages_agent_turn.json", agentScenario("parallel", 5, nil)},
		{"local_pure_stages_regular_option.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := calculatorAssignment()
			a["execution"] = map[string]any{"pure_stages": "regular"}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-regular-option", a)
		}},
		// The fast path (version fast-path = 1): every stage that is safe to
		// repeat runs as a local activity; side-effecting tools, model calls
		// and skill installs stay regular.
		{"fast_path_calculator.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-calculator", calculatorAssignment())
		}},
		{"fast_path_workspace_read.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-workspace-read",
				withTool(map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}))
		}},
		{"fast_path_exec_command.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-exec-command",
				withTool(map[string]any{"call_id": "exec-1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "echo hello; echo oops >&2; exit 3"}}, "exec_command"))
		}},
		{"fast_path_not_visible.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-not-visible",
				withTool(map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}, "calculator"))
		}},
		{"fast_path_blocked.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-blocked",
				withTool(map[string]any{"call_id": "block-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
		}},
		{"fast_path_permission_allowed.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-permission",
				withTool(map[string]any{"call_id": "ask-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
			if err != nil {
				return nil, err
			}
			return run, decidePermission(ctx, c, run, "ask-1")
		}},
		{"fast_path_canceled.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-canceled",
				withTool(map[string]any{"call_id": "c", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 120}}, "test_sleep"))
			if err != nil {
				return nil, err
			}
			return run, cancelOnceReviewed(ctx, c, run)
		}},
		{"fast_path_process_flow.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-process-flow",
				withTool(map[string]any{"call_id": "proc-1", "tool_name": "process_exec", "arguments": map[string]any{"command_line": "sleep 30"}}, "process_exec"))
		}},
		{"fast_path_skills_catalog.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			raw, err := os.ReadFile(filepath.Join("..", "examples", "skills_catalog.json"))
			if err != nil {
				return nil, err
			}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-skills-catalog", json.RawMessage(raw))
		}},
		{"fast_path_prepare_round_summary.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := summaryAssignment()
			return startJSON(ctx, c, q, workflows.PrepareRoundWorkflow, "replay-fast-summary", a)
		}},
		{"fast_path_regular_option.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := calculatorAssignment()
			a["execution"] = map[string]any{"stages": "regular"}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-regular-option", a)
		}},
		{"fast_path_report_to.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			// Reports go out one at a time, in order; the kernel here is
			// gone, so each delivery is recorded as failed and logged.
			a := calculatorAssignment()
			a["report_to"] = map[string]any{"workflow_id": "replay-kernel-gone"}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-fast-report-to", a)
		}},
		{"fast_path_agent_turn_parallel.json", agentScenario("parallel", 5, nil)},
		{"fast_path_agent_turn_subagent.json", agentScenario("delegating", 5, nil)},
		{"fast_path_agent_turn_permission.json", agentScenario("ask", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return decidePermission(ctx, c, run, "ask-1")
		})},
		{"fast_path_agent_turn_canceled.json", agentScenario("slow", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return cancelOnceReviewed(ctx, c, run)
		})},
		{"fast_path_agent_turn_continue_as_new.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("long", 10)
			req["continue_as_new_after_events"] = 20
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-fast-agent-can", req)
		}},
		// Claude Code's turn events (fenix-shape 2): UserPromptSubmit,
		// Stop, PostToolBatch, Notification, PermissionDenied, halts and
		// hook context reaching the model.
		{"claude_hooks_calculator.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-claude-calculator", calculatorAssignment())
		}},
		{"claude_hooks_halt.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-claude-halt",
				withTool(map[string]any{"call_id": "halt-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
		}},
		{"claude_hooks_deferred.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-claude-deferred",
				withTool(map[string]any{"call_id": "defer-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
			if err != nil {
				return nil, err
			}
			return run, decidePermission(ctx, c, run, "defer-1")
		}},
		{"claude_hooks_agent_turn_tool.json", agentScenario("main", 5, nil)},
		{"claude_hooks_agent_turn_stop.json", promptedTurn("replay-claude-stop", "verify", "policy-context: what is 2 + 2?")},
		{"claude_hooks_agent_turn_prompt_blocked.json", promptedTurn("replay-claude-prompt-blocked", "answer", "please policy-block this")},
		{"claude_hooks_agent_turn_halt.json", agentScenario("halting", 5, nil)},
		{"claude_hooks_agent_turn_subagent.json", agentScenario("delegating", 5, nil)},
		{"claude_hooks_agent_turn_permission.json", agentScenario("ask", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return decidePermission(ctx, c, run, "ask-1")
		})},
		{"claude_hooks_agent_turn_regular.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("post_context", 5)
			req["execution"] = map[string]any{"stages": "regular"}
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-claude-regular", req)
		}},
		// Bounded payloads and unique call IDs (fenix-shape 3).
		{"bounded_calculator.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-bounded-calculator", calculatorAssignment())
		}},
		{"bounded_blocked.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-bounded-blocked",
				withTool(map[string]any{"call_id": "block-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
		}},
		{"bounded_agent_turn_duplicate_call_ids.json", agentScenario("duplicate", 5, nil)},
		// fenix-shape 12: a call ID an earlier step used is renamed.
		{"run_unique_call_ids_agent_turn.json", agentScenario("reused_ids", 5, nil)},
		// Shape inbox (fenix-shape 4): AwaitingDecision upserts, decisions with decider and
		// arguments hash, the record_permission_decision stage.
		{"inbox_permission_allowed.json", inboxScenario("replay-inbox-permission", workflows.DecisionAllow)},
		{"inbox_permission_denied.json", inboxScenario("replay-inbox-denied", workflows.DecisionDeny)},
		// fenix-shape 11: AwaitingDecision set before the wait and unset
		// after it, on a run started with its start search attributes.
		{"start_attributes_inbox_allowed.json", inboxScenarioStarted("replay-start-attributes-inbox", workflows.DecisionAllow, startAttributed)},
		{"inbox_permission_timeout.json", timeoutScenario("replay-inbox-timeout")},
		{"inbox_canceled_while_waiting.json", cancelWhileWaitingScenario("replay-inbox-cancel")},
		{"inbox_agent_turn_permission.json", agentScenario("ask", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return decideFromInbox(ctx, c, run, "ask-1", workflows.DecisionAllow)
		})},
		// Lean review (fenix-shape 5) with the test policy: every stage
		// runs, the review first (builtinScenarios has the lean ones).
		{file: "lean_policy_blocked.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-lean-blocked",
				withTool(map[string]any{"call_id": "block-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
		}},
		{file: "lean_policy_calculator.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-lean-policy-calculator", calculatorAssignment())
		}},
		// PrepareTurn beside ReviewToolCall (fenix-shape 8) with the test
		// policy: SessionStart after both, a blocked call.
		{file: "beside_review_policy_calculator.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-beside-review-policy-calculator", calculatorAssignment())
		}},
		{file: "beside_review_policy_blocked.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-beside-review-blocked",
				withTool(map[string]any{"call_id": "block-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
		}},
		// The lean turn (fenix-shape 9) under Claude Code turn hooks: the
		// SessionStart stage's answer keeps their stages (builtinScenarios
		// has the lean ones).
		{"lean_turn_claude_stop.json", promptedTurn("replay-lean-turn-claude-stop", "verify", "policy-context: what is 2 + 2?")},
		{"lean_turn_claude_prompt_blocked.json", promptedTurn("replay-lean-turn-claude-prompt-blocked", "answer", "please policy-block this")},
		{"lean_turn_claude_halt.json", agentScenario("halting", 5, nil)},
		// fenix-shape 10 with hook context and a Stop hook's feedback,
		// both appended in the workflow.
		{"transcript_once_claude_stop.json", promptedTurn("replay-transcript-once-claude-stop", "verify", "policy-context: what is 2 + 2?")},
		// fenix-shape 10: PrepareRound's PrepareTurn returns the system
		// prompt alone and the workflow puts the transcript back.
		{"transcript_once_prepare_round.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			raw, err := os.ReadFile(filepath.Join("..", "examples", "prepare_round.json"))
			if err != nil {
				return nil, err
			}
			return startJSON(ctx, c, q, workflows.PrepareRoundWorkflow, "replay-transcript-once-prepare-round", json.RawMessage(raw))
		}},
		{"prepare_round_compacted.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			raw, err := os.ReadFile(filepath.Join("..", "examples", "prepare_round.json"))
			if err != nil {
				return nil, err
			}
			return startJSON(ctx, c, q, workflows.PrepareRoundWorkflow, "replay-prepare-round", json.RawMessage(raw))
		}},
		// The MCP gateway's tools/list.
		{"list_tools.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-list-tools", TaskQueue: q}, workflows.ListToolsWorkflow,
				workflows.ListToolsRequest{Requester: "replay"})
		}},
		// A workspace tool's PreToolUse result records the file its path
		// led to (reached_path), and ExecuteTool's input carries it.
		{"reached_path_workspace_read.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-reached-path-workspace-read",
				withTool(map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "./README.md"}}, "workspace_read"))
		}},
	}
}

// builtinScenarios run on a worker with only the built-in hooks (no test
// policy): the lean review (fenix-shape 5) leaves SessionStart and
// PreToolUse out.
func builtinScenarios() []scenario {
	withTool := func(call map[string]any, allowed ...string) map[string]any {
		a := calculatorAssignment()
		a["tool_call"] = call
		a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": allowed}
		return a
	}
	// toolCalls are a shape's calculator call, exec_command call and call
	// refused by review, recorded as prefix_calculator.json and so on.
	toolCallsStarted := func(prefix string, startRun func(context.Context, client.Client, string, string, string, any) (client.WorkflowRun, error)) []scenario {
		start := func(name string, a map[string]any) scenario {
			id := "replay-" + strings.ReplaceAll(prefix, "_", "-") + "-" + strings.ReplaceAll(name, "_", "-")
			return scenario{file: prefix + "_" + name + ".json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
				return startRun(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id, a)
			}}
		}
		return []scenario{
			start("calculator", calculatorAssignment()),
			start("exec_command", withTool(map[string]any{"call_id": "exec-1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "true"}}, "exec_command")),
			start("not_visible", withTool(map[string]any{"call_id": "c", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}, "calculator")),
		}
	}
	toolCalls := func(prefix string) []scenario { return toolCallsStarted(prefix, startJSON) }
	attributedTurn := func(file, script string, maxSteps, continueAfter int) scenario {
		return scenario{file: file, run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest(script, maxSteps)
			if continueAfter > 0 {
				req["continue_as_new_after_events"] = continueAfter
			}
			return startAttributed(ctx, c, q, workflows.AgentTurnWorkflow, "replay-start-attributes-"+script, req)
		}}
	}
	// fenix-shape 5 (lean_*) and 8 (beside_review_*).
	shapes := append(append(toolCalls("lean"), toolCalls("beside_review")...),
		scenario{file: "lean_agent_turn_tool.json", run: agentScenario("main", 5, nil)},
		// fenix-shape 7: nothing to compact, PrepareTurn answers for
		// CompactContext.
		scenario{file: "idle_compaction_calculator.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-idle-compaction-calculator", calculatorAssignment())
		}},
		scenario{file: "idle_compaction_agent_turn_tool.json", run: agentScenario("main", 5, nil)},
		// fenix-shape 8 (beside_review_*, the tool calls above too):
		// PrepareTurn beside ReviewToolCall, without its messages, and a
		// review that fails waits for it; with regular stages PrepareTurn
		// follows the review as before, still without its messages; a
		// skill operation's PrepareTurn without its messages.
		scenario{file: "beside_review_regular_stages.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := calculatorAssignment()
			a["execution"] = map[string]any{"stages": "regular"}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-beside-review-regular-stages", a)
		}},
		scenario{file: "beside_review_skills_catalog.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			raw, err := os.ReadFile(filepath.Join("..", "examples", "skills_catalog.json"))
			if err != nil {
				return nil, err
			}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-beside-review-skills-catalog", json.RawMessage(raw))
		}},
		// fenix-shape 9: the turn's SessionStart stage answers for its
		// session and turn events; with only the built-in hooks just
		// SessionStop (the audit log) keeps its stage. A subagent asks
		// again, a continued run too, and a failed or canceled turn still
		// stops and audits.
		scenario{file: "lean_turn_agent_turn_tool.json", run: agentScenario("main", 5, nil)},
		scenario{file: "lean_turn_agent_turn_subagent.json", run: agentScenario("delegating", 5, nil)},
		scenario{file: "lean_turn_agent_turn_max_steps.json", run: agentScenario("endless", 2, nil)},
		scenario{file: "lean_turn_agent_turn_canceled.json", run: agentScenario("slow", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return cancelOnceReviewed(ctx, c, run)
		})},
		scenario{file: "lean_turn_agent_turn_continue_as_new.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("long", 10)
			req["continue_as_new_after_events"] = 20
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-lean-turn-can", req)
		}},
		// fenix-shape 10: the inline transcript stays in the workflow, so
		// no AppendMessages stage and no transcript in CallModel's result;
		// a tool result over the inline limit is still stored by the
		// stage and passed on by reference.
		scenario{file: "transcript_once_agent_turn_tool.json", run: agentScenario("main", 5, nil)},
		scenario{file: "transcript_once_agent_turn_parallel.json", run: agentScenario("parallel", 5, nil)},
		scenario{file: "transcript_once_agent_turn_subagent.json", run: agentScenario("delegating", 5, nil)},
		scenario{file: "transcript_once_agent_turn_large.json", run: agentScenario("reader", 5, nil)},
		scenario{file: "transcript_once_agent_turn_continue_as_new.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("long", 10)
			req["continue_as_new_after_events"] = 20
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-transcript-once-can", req)
		}},
	)
	// fenix-shape 11: runs started with their start search attributes
	// upsert only what changes (the status at the end, or before a
	// yield); a subagent's child starts with its own; a continued run
	// keeps them. start_attributes_plain_* is a run of the same shape
	// started without them, as by a kernel that sets none.
	shapes = append(shapes, toolCallsStarted("start_attributes", startAttributed)...)
	shapes = append(shapes, toolCallsStarted("start_attributes_plain", startJSON)...)
	// fenix-shape 13: oversized identifiers are shortened before the run
	// records them, and the run fails with InvalidAssignmentError.
	oversized := calculatorAssignment()
	oversized["conversation_id"] = strings.Repeat("c", 5000)
	shapes = append(shapes,
		scenario{file: "bounded_ids_calculator.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-bounded-ids-calculator", calculatorAssignment())
		}},
		scenario{file: "bounded_ids_oversized.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-bounded-ids-oversized", oversized)
		}},
	)
	// fenix-shape 14: one listener coroutine for the signals; a cancel
	// signal, a Temporal cancel and an agent turn's cancel still end
	// their runs as before.
	shapes = append(shapes, toolCalls("one_listener")...)
	shapes = append(shapes,
		scenario{file: "one_listener_canceled.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-one-listener-canceled",
				withTool(map[string]any{"call_id": "c", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 120}}, "test_sleep"))
			if err != nil {
				return nil, err
			}
			return run, cancelOnceReviewed(ctx, c, run)
		}},
		scenario{file: "one_listener_temporal_cancel.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-one-listener-temporal-cancel",
				withTool(map[string]any{"call_id": "c", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 120}}, "test_sleep"))
			if err != nil {
				return nil, err
			}
			if err := waitForPhase(ctx, c, run, contract.PhaseToolReviewed); err != nil {
				return nil, err
			}
			return run, c.CancelWorkflow(ctx, run.GetID(), run.GetRunID())
		}},
		scenario{file: "one_listener_agent_turn_tool.json", run: agentScenario("main", 5, nil)},
		scenario{file: "one_listener_agent_turn_canceled.json", run: agentScenario("slow", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			return cancelOnceReviewed(ctx, c, run)
		})},
	)
	// A network-sandboxed command's question about a host outside its
	// domains (activities.UpdateNetworkPermission), asked while the call
	// runs, allowed with decide_permission; and one denied by the
	// timeout.
	shapes = append(shapes,
		scenario{file: "network_permission_allowed.json", run: networkAskScenario("replay-network-allowed", workflows.DecisionAllow, 0)},
		scenario{file: "network_permission_timeout.json", run: networkAskScenario("replay-network-timeout", "", 1)},
	)
	// shapeNetworkAsksEnd: a question nobody answers before its command
	// ends is withdrawn. A destination the conversation's session holds a
	// grant of is allowed at once (the update carries the grant).
	shapes = append(shapes,
		scenario{file: "network_permission_withdrawn.json", run: networkAskScenario("replay-network-withdrawn", "", 0)},
		scenario{file: "network_permission_granted.json", run: networkAskScenario("replay-network-granted", workflows.DecisionAllow, -1)},
	)
	// An MCP server's question during a call (activities.UpdateElicitation),
	// answered with decide_permission's allow and the form's content.
	shapes = append(shapes,
		scenario{file: "mcp_elicitation_answered.json", run: elicitationScenario("replay-mcp-elicitation")},
	)
	// fenix-shape 16: an allowed_tool_names over
	// contract.MaxAllowedToolNamesBytes ends the run with
	// InvalidAssignmentError before any stage carries it.
	manyNames := calculatorAssignment()
	padded := []string{"calculator"}
	for i := 0; len(padded) < 400; i++ {
		padded = append(padded, fmt.Sprintf("padding_tool_%0100d", i))
	}
	manyNames["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": padded}
	shapes = append(shapes,
		scenario{file: "bounded_tool_names_calculator.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-bounded-tool-names-calculator", calculatorAssignment())
		}},
		scenario{file: "bounded_tool_names_oversized.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-bounded-tool-names-oversized", manyNames)
		}},
	)
	// fenix-shape 17: the parallel calls of a step share
	// activities.StepResultBudget (ExecuteToolInput.ResultBudget).
	shapes = append(shapes, scenario{file: "step_result_budget_agent_turn_parallel.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-step-result-budget", agentRequest("parallel", 5))
	}})
	// fenix-shape 18: the parallel calls of a step share
	// activities.StepHookContextBudget (the tool hook events'
	// ContextBudget).
	shapes = append(shapes, scenario{file: "step_hook_context_agent_turn_parallel.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-step-hook-context", agentRequest("parallel", 5))
	}})
	// A subagent of a parent whose identifiers are near contract.MaxIDBytes
	// gets identifiers within it (contract.ChildID).
	shapes = append(shapes, scenario{file: "child_ids_agent_turn_subagent.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		req := agentRequest("delegating", 5)
		req["logical_work_id"] = "replay-child-ids-" + strings.Repeat("l", 230)
		req["turn_id"] = "turn-" + strings.Repeat("t", 245)
		return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-child-ids", req)
	}})
	// A tool that returns an image: its tool message names the image
	// (versionToolImages), for a model provider that shows it.
	shapes = append(shapes, scenario{file: "tool_images_agent_turn.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		req := agentRequest("picture", 5)
		req["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": []string{"test_picture"}}
		return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-tool-images", req)
	}})
	// A subagent of a session whose permission mode the kernel chose
	// (agent_context.permission_mode) runs in its parent's mode.
	shapes = append(shapes, scenario{file: "permission_mode_agent_turn_subagent.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		req := agentRequest("delegating", 5)
		req["agent_context"].(map[string]any)["permission_mode"] = "acceptEdits"
		return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-permission-mode", req)
	}})
	// fenix-shape 20: a run canceled while its stage's worker is lost
	// ends canceled. A worker is not lost in the recording (the dev
	// server test TestACancelOutlivesALostWorker loses one); the shape's
	// cancel is recorded, as every shape's commands are.
	shapes = append(shapes, scenario{file: "cancel_outlives_lost_worker_canceled.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-cancel-lost-worker",
			withTool(map[string]any{"call_id": "c", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 120}}, "test_sleep"))
		if err != nil {
			return nil, err
		}
		return run, cancelOnceReviewed(ctx, c, run)
	}})
	// fenix-shape 21: a cancel that reaches the call once its tool ran
	// (here a tool that sleeps on through the cancel and completes) lets
	// the call complete, its output naming the cancel.
	shapes = append(shapes, scenario{file: "late_cancel_completes_the_call.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-late-cancel",
			withTool(map[string]any{"call_id": "c", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 1, "finish_despite_cancel": true}}, "test_sleep"))
		if err != nil {
			return nil, err
		}
		return run, cancelOnceReviewed(ctx, c, run)
	}})
	outOfRange := calculatorAssignment()
	outOfRange["approval"] = map[string]any{"timeout_seconds": -5}
	shapes = append(shapes, scenario{file: "approval_timeout_out_of_range.json", run: func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-approval-out-of-range", outOfRange)
	}})
	shapes = append(shapes, scenario{file: "late_cancel_agent_turn.json", run: agentScenario("late", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
		return cancelOnceReviewed(ctx, c, run)
	})})
	return append(shapes,
		attributedTurn("start_attributes_agent_turn_tool.json", "main", 5, 0),
		attributedTurn("start_attributes_agent_turn_subagent.json", "delegating", 5, 0),
		attributedTurn("start_attributes_agent_turn_continue_as_new.json", "long", 10, 20),
	)
}

// promptedTurn starts an AgentTurn on a script with prompt as its user
// message: the test policy acts on prompts it recognizes.
func promptedTurn(id, script, prompt string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		req := agentRequest(script, 5)
		req["context_messages"] = []map[string]any{{"role": "user", "content": prompt}}
		return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, id, req)
	}
}

func agentRequest(script string, maxSteps int) map[string]any {
	return map[string]any{
		"logical_work_id": "replay-" + script, "attempt_no": 1, "conversation_id": "conv-replay", "turn_id": "turn-" + script,
		"context_messages": []map[string]any{{"role": "user", "content": "Help me."}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator", "workspace_read", "spawn_subagent", "test_sleep"}},
		"model_context":    map[string]any{"likely_model": "scripted:" + script},
		"max_steps":        maxSteps,
	}
}

// agentScenario starts an AgentTurn on a script and runs drive while it
// goes (answering a permission, canceling).
func agentScenario(script string, maxSteps int, drive func(context.Context, client.Client, client.WorkflowRun) error) func(context.Context, client.Client, string) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		run, err := startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-agent-"+script, agentRequest(script, maxSteps))
		if err != nil || drive == nil {
			return run, err
		}
		return run, drive(ctx, c, run)
	}
}

// summaryAssignment is a PrepareRound over a transcript long enough for
// the summary strategy to compact.
func summaryAssignment() map[string]any {
	a := calculatorAssignment()
	delete(a, "tool_call")
	a["compaction"] = map[string]any{"strategy": "summary"}
	a["budget_hints"] = map[string]any{"advisory_compaction_threshold_tokens": 20}
	a["context_messages"] = []map[string]any{
		{"role": "user", "content": "Plan the billing migration to the new queue, step by step please."},
		{"role": "assistant", "content": "First inventory the consumers. Then dual-write for a week."},
		{"role": "user", "content": "Which consumers are risky?"},
		{"role": "assistant", "content": "The invoice renderer."},
	}
	return a
}

// decidePermission waits for a pending permission and allows it.
func decidePermission(ctx context.Context, c client.Client, run client.WorkflowRun, callID string) error {
	if err := waitForPhase(ctx, c, run, contract.PhasePermissionPending); err != nil {
		return err
	}
	handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run.GetID(), RunID: run.GetRunID(), UpdateName: workflows.UpdateDecidePermission,
		WaitForStage: client.WorkflowUpdateStageCompleted,
		Args:         []any{workflows.PermissionDecision{CallID: callID, Decision: workflows.DecisionAllow, Reason: "recorded approval"}},
	})
	if err != nil {
		return err
	}
	return handle.Get(ctx, nil)
}

// inboxScenario starts a calculator call the test policy asks about and
// decides it from the inbox.
func inboxScenario(id, decision string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
	return inboxScenarioStarted(id, decision, startJSON)
}

func inboxScenarioStarted(id, decision string, startRun func(context.Context, client.Client, string, string, string, any) (client.WorkflowRun, error)) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		a := calculatorAssignment()
		a["tool_call"] = map[string]any{"call_id": "ask-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}
		run, err := startRun(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id, a)
		if err != nil {
			return nil, err
		}
		return run, decideFromInbox(ctx, c, run, "ask-1", decision)
	}
}

// decideFromInbox decides like the inbox: on the arguments hash the
// pending query shows, naming the decider.
func decideFromInbox(ctx context.Context, c client.Client, run client.WorkflowRun, callID, decision string) error {
	if err := waitForPhase(ctx, c, run, contract.PhasePermissionPending); err != nil {
		return err
	}
	v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.QueryPendingPermissions)
	if err != nil {
		return err
	}
	var pending []workflows.PendingPermission
	if err := v.Get(&pending); err != nil || len(pending) != 1 {
		return fmt.Errorf("pending permissions of %s: %v (%d)", run.GetID(), err, len(pending))
	}
	handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: run.GetID(), RunID: run.GetRunID(), UpdateName: workflows.UpdateDecidePermission,
		WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{workflows.PermissionDecision{CallID: callID, Decision: decision, Reason: "recorded decision",
			ArgsHash: pending[0].ArgsHash, DecidedBy: "recorder"}},
	})
	if err != nil {
		return err
	}
	return handle.Get(ctx, nil)
}

// cancelOnceReviewed sends the cancel signal once the tool call was
// reviewed, so the run is canceled while its tool runs.
func cancelOnceReviewed(ctx context.Context, c client.Client, run client.WorkflowRun) error {
	if err := waitForPhase(ctx, c, run, contract.PhaseToolReviewed); err != nil {
		return err
	}
	return c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalCancel, workflows.CancelRequest{Reason: "recorded cancel"})
}

// networkAskScenario runs a test_sleep call and, while it sleeps, asks
// its run as a sandboxed command's activity does; decision answers it
// ("" leaves it to the approval timeout, timeoutSeconds; with neither the
// command ends first); a negative timeoutSeconds sends the question with
// a grant of the conversation.
func networkAskScenario(id, decision string, timeoutSeconds int) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		a := withTool(map[string]any{"call_id": "net-1", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 3}}, "test_sleep")
		if decision == "" && timeoutSeconds == 0 {
			// Neither answered nor timed out: the command ends first.
			a = withTool(map[string]any{"call_id": "net-1", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 1}}, "test_sleep")
		}
		if timeoutSeconds > 0 {
			a["approval"] = map[string]any{"timeout_seconds": timeoutSeconds}
		}
		run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id, a)
		if err != nil {
			return nil, err
		}
		if err := waitForPhase(ctx, c, run, contract.PhaseToolReviewed); err != nil {
			return nil, err
		}
		req := activities.NetworkPermissionRequest{CallID: "net-1", ToolName: "test_sleep", Host: "registry.example", Port: 443}
		granted := timeoutSeconds < 0
		if granted {
			// Allowed earlier in the conversation: nobody is asked.
			req.Granted = &activities.NetworkGrant{Dest: "registry.example:443", DecidedBy: "recorder", RunID: "assignment-earlier-1",
				At: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)}
		}
		asked, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
			UpdateName: activities.UpdateNetworkPermission, WaitForStage: client.WorkflowUpdateStageAccepted,
			Args: []any{req}})
		if err != nil {
			return nil, err
		}
		if decision != "" && !granted {
			if err := decideFromInbox(ctx, c, run, "net-1/network/registry.example:443", decision); err != nil {
				return nil, err
			}
		}
		var answer activities.NetworkPermissionAnswer
		if err := asked.Get(ctx, &answer); err != nil {
			return nil, err
		}
		if want := decision == workflows.DecisionAllow; answer.Allowed != want {
			return nil, fmt.Errorf("network permission answered %+v, want allowed=%v", answer, want)
		}
		if decision == "" && timeoutSeconds == 0 && answer.DecidedBy != "command_ended" {
			return nil, fmt.Errorf("network permission answered %+v, want it withdrawn when its command ended", answer)
		}
		return run, nil
	}
}

func elicitationScenario(id string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id,
			withTool(map[string]any{"call_id": "elicit-1", "tool_name": "test_sleep", "arguments": map[string]any{"seconds": 3}}, "test_sleep"))
		if err != nil {
			return nil, err
		}
		if err := waitForPhase(ctx, c, run, contract.PhaseToolReviewed); err != nil {
			return nil, err
		}
		asked, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
			UpdateName: activities.UpdateElicitation, WaitForStage: client.WorkflowUpdateStageAccepted,
			Args: []any{activities.ElicitationRequest{CallID: "elicit-1", Seq: 1, ToolName: "mcp__crm__lookup", ServerName: "crm",
				Message: "Which account?", Mode: "form", RequestedSchema: map[string]any{"type": "object",
					"properties": map[string]any{"account": map[string]any{"type": "string"}}}}}})
		if err != nil {
			return nil, err
		}
		if err := waitForPhase(ctx, c, run, contract.PhasePermissionPending); err != nil {
			return nil, err
		}
		decided, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
			UpdateName: workflows.UpdateDecidePermission, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{workflows.PermissionDecision{CallID: "elicit-1/elicitation/1", Decision: workflows.DecisionAllow, DecidedBy: "recorder",
				Content: map[string]any{"account": "acme"}}}})
		if err != nil {
			return nil, err
		}
		if err := decided.Get(ctx, nil); err != nil {
			return nil, err
		}
		var answer activities.ElicitationAnswer
		if err := asked.Get(ctx, &answer); err != nil {
			return nil, err
		}
		if answer.Action != "accept" || answer.Content["account"] != "acme" {
			return nil, fmt.Errorf("elicitation answered %+v, want accept with account acme", answer)
		}
		return run, nil
	}
}
