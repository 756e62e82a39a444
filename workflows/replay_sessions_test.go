package workflows_test

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/sessions"
	"github.com/fenixrt/fenix/workflows"
)

// sessionScenarios record fenix-shape 6 under the session-project's
// Claude Code hooks (the recorder loads it): two assignments of one
// conversation (the first starts its session, the second finds it), an
// agent turn with a subagent, a turn that continues as new (SessionStart
// "resume" to every hook once, touching the session), and a session's whole life (startup, idle
// expiry, resume, the kernel's end, retention).
func sessionScenarios() []scenario {
	inConversation := func(id, conv string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := calculatorAssignment()
			a["logical_work_id"], a["conversation_id"] = id, conv
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id, a)
		}
	}
	inConversationRunning := func(id, conv, command string) func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
		return func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := withTool(map[string]any{"call_id": "exec-1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": command}}, "exec_command")
			a["logical_work_id"], a["conversation_id"] = id, conv
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, id, a)
		}
	}
	return []scenario{
		{"conversation_session_first.json", inConversation("replay-conv-session-1", "replay-conv-session")},
		{"conversation_session_second.json", inConversation("replay-conv-session-2", "replay-conv-session")},
		{"conversation_session_subagent.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("delegating", 5)
			req["logical_work_id"], req["conversation_id"] = "replay-conv-subagent", "replay-conv-subagent"
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-conv-subagent", req)
		}},
		{"conversation_session_continue_as_new.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("long", 10)
			req["logical_work_id"], req["conversation_id"] = "replay-conv-can", "replay-conv-can"
			req["continue_as_new_after_events"] = 20
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-conv-can", req)
		}},
		{"conversation_session_lifecycle.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return sessionLifecycle(ctx, c, q, "replay-conv-lifecycle", false)
		}},
		// A long turn's keep-alive after the session idled out leaves it
		// ended; the next run resumes it.
		{"conversation_session_keepalive_after_end.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			return sessionLifecycle(ctx, c, q, "replay-conv-keepalive", true)
		}},
		// A person allowed a host: the conversation's session remembers it
		// (a session only a grant started idles out without SessionEnd).
		{"conversation_session_network_grant.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			const conv = "replay-conv-network-grant"
			memory := sessions.NetworkMemory{Client: c, TaskQueue: q, Idle: time.Second}
			if err := memory.Grant(ctx, conv, activities.NetworkGrant{Dest: "pypi.org:443", DecidedBy: "recorder", RunID: "assignment-replay-1",
				At: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)}); err != nil {
				return nil, err
			}
			grants, err := memory.Grants(ctx, conv)
			if err != nil || len(grants) != 1 {
				return nil, fmt.Errorf("grants = %+v, %v", grants, err)
			}
			return c.GetWorkflow(ctx, workflows.SessionWorkflowID(q, conv), ""), nil
		}},
		// The session-project's SessionStart hook writes $CLAUDE_ENV_FILE:
		// the first call's stage reports it to the session, the second
		// gets it from the claim; both ExecuteTool inputs carry it.
		{"session_env_first.json", inConversationRunning("replay-session-env-1", "replay-session-env", `echo "indent: $PROJECT_INDENT"`)},
		{"session_env_second.json", inConversationRunning("replay-session-env-2", "replay-session-env", `echo "indent: $PROJECT_INDENT"`)},
		{"session_env_lifecycle.json", sessionEnvLifecycle},
		// A subagent of that conversation reads the session environment
		// (a read claim) without starting or touching the session.
		{"session_env_subagent.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			// The conversation's first call starts its session.
			first, err := inConversationRunning("replay-session-env-sub-first", "replay-session-env-sub", `echo "$PROJECT_INDENT"`)(ctx, c, q)
			if err == nil {
				err = first.Get(ctx, nil)
			}
			if err != nil {
				return nil, err
			}
			req := agentRequest("researcher", 5)
			req["logical_work_id"], req["conversation_id"] = "replay-session-env-sub", "replay-session-env-sub"
			req["agent_context"] = map[string]any{"profile": "researcher", "is_subagent": true, "parent_session_id": "replay-session-env-sub",
				"allowed_tool_names": []string{"calculator"}}
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-session-env-sub", req)
		}},
		// fenix-shape 9: the conversation's hooks keep each step's
		// StepComplete stage, which touches the session.
		{"lean_turn_conversation_continue_as_new.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			req := agentRequest("long", 10)
			req["logical_work_id"], req["conversation_id"] = "replay-lean-turn-conv-can", "replay-lean-turn-conv-can"
			req["continue_as_new_after_events"] = 20
			return startJSON(ctx, c, q, workflows.AgentTurnWorkflow, "replay-lean-turn-conv-can", req)
		}},
	}
}

// sessionLifecycle drives a ConversationSession with a 1s idle timeout:
// touch (startup), idle expiry (SessionEnd other), with keepAlive a
// keep-alive touch that leaves it ended, touch (resume), the kernel's end
// (SessionEnd prompt_input_exit); it then completes after its retention.
func sessionLifecycle(ctx context.Context, c client.Client, q, conv string, keepAlive bool) (client.WorkflowRun, error) {
	id := workflows.SessionWorkflowID(q, conv)
	touchAs := func(updateID string, keepAlive bool) (workflows.SessionTouchResult, error) {
		start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: id, TaskQueue: q,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING},
			workflows.ConversationSessionWorkflow, workflows.ConversationSessionState{ConversationID: conv})
		h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{UpdateID: updateID, UpdateName: workflows.UpdateSessionTouch,
				Args: []any{workflows.SessionTouch{ConversationID: conv, IdleTimeoutMS: 1000, KeepAlive: keepAlive}}, WaitForStage: client.WorkflowUpdateStageCompleted}})
		var res workflows.SessionTouchResult
		if err == nil {
			err = h.Get(ctx, &res)
		}
		return res, err
	}
	touch := func(updateID string) (string, error) {
		res, err := touchAs(updateID, false)
		return res.Source, err
	}
	state := func() (workflows.ConversationSessionState, error) {
		var st workflows.ConversationSessionState
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QuerySession)
		if err == nil {
			err = v.Get(&st)
		}
		return st, err
	}
	if _, err := touch("lifecycle-1"); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := state(); err == nil && st.Ended {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("session %s did not expire", id)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if keepAlive {
		if res, err := touchAs("lifecycle-keepalive", true); err != nil || !res.Ended {
			return nil, fmt.Errorf("keep-alive after expiry = %+v, %v; want it left ended", res, err)
		}
	}
	src, err := touch("lifecycle-2")
	if err != nil {
		return nil, err
	}
	if src != "resume" {
		return nil, fmt.Errorf("touch after expiry answered %q, want resume", src)
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.UpdateEndSession,
		Args: []any{workflows.EndSessionRequest{}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return nil, err
	}
	var ended workflows.EndSessionResult
	if err := h.Get(ctx, &ended); err != nil {
		return nil, err
	}
	return c.GetWorkflow(ctx, id, ""), nil
}

// sessionEnvLifecycle drives a ConversationSession through its session
// environment: a touch that starts it for a run whose hooks write
// $CLAUDE_ENV_FILE, another touch that waits for them, the report that
// releases it; then, after the kernel's end, a resume whose run never
// reports, so the next touch waits out sessionEnvWait and goes on with
// the environment still pending; the session then idles out and
// completes after its retention.
func sessionEnvLifecycle(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
	const conv = "replay-session-env-lifecycle"
	id := workflows.SessionWorkflowID(q, conv)
	touch := func(updateID string, writesEnv bool) (workflows.SessionTouchResult, error) {
		start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: id, TaskQueue: q,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING},
			workflows.ConversationSessionWorkflow, workflows.ConversationSessionState{ConversationID: conv})
		h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{UpdateID: updateID, UpdateName: workflows.UpdateSessionTouch,
				Args:         []any{workflows.SessionTouch{ConversationID: conv, IdleTimeoutMS: 1000, WritesEnv: writesEnv}},
				WaitForStage: client.WorkflowUpdateStageCompleted}})
		var res workflows.SessionTouchResult
		if err == nil {
			err = h.Get(ctx, &res)
		}
		return res, err
	}
	if res, err := touch("env-1", true); err != nil || res.Source != "startup" {
		return nil, fmt.Errorf("first touch = %+v, %v; want startup", res, err)
	}
	waiting := make(chan workflows.SessionTouchResult, 1)
	go func() {
		res, _ := touch("env-2", false)
		waiting <- res
	}()
	time.Sleep(500 * time.Millisecond)
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: "env-1/env", UpdateName: workflows.UpdateSessionEnv,
		Args: []any{workflows.SessionEnvRequest{Env: "export PROJECT_INDENT=tabs\n"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return nil, err
	}
	if res := <-waiting; res.Env != "export PROJECT_INDENT=tabs\n" {
		return nil, fmt.Errorf("the waiting touch got %+v, want the reported env", res)
	}
	if _, err := sessions.End(ctx, c, q, conv, ""); err != nil {
		return nil, err
	}
	if res, err := touch("env-3", true); err != nil || res.Source != "resume" || res.Env != "" {
		return nil, fmt.Errorf("touch after the end = %+v, %v; want resume without the old env", res, err)
	}
	if res, err := touch("env-4", false); err != nil || res.Env != "" || !res.EnvPending {
		return nil, fmt.Errorf("touch after the unreported resume = %+v, %v; want no env, still pending", res, err)
	}
	return c.GetWorkflow(ctx, id, ""), nil
}
