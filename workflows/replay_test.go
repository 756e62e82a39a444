package workflows_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/devserver"
	"github.com/fenixrt/fenix/internal/fenixworker"
	"github.com/fenixrt/fenix/internal/testtools"
	"github.com/fenixrt/fenix/llm"
	"github.com/fenixrt/fenix/llm/scripted"
	"github.com/fenixrt/fenix/workflows"
)

var (
	record   = flag.Bool("record", false, "record replay histories that are missing from testdata/ (existing ones are the compatibility corpus and are kept)")
	rerecord = flag.Bool("rerecord", false, "overwrite every replay history in testdata/ (only when a change is meant to break old histories)")
)

// TestReplayHistories replays every recorded history against the current
// workflow code: a change that alters the command sequence of an existing
// shape without workflow.GetVersion fails here.
func TestReplayHistories(t *testing.T) {
	if *record || *rerecord {
		recordHistories(t, *rerecord)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no replay histories in testdata/; run `go test ./workflows -run TestReplayHistories -record`")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			require.NoError(t, newReplayer(t).ReplayWorkflowHistoryFromJSONFile(quietReplayLogger(), file))
		})
	}
}

// TestIncompatibleHistoryFailsReplay guards the guard: a history whose
// commands no longer match the code must be rejected.
func TestIncompatibleHistoryFailsReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "incompatible", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			err := newReplayer(t).ReplayWorkflowHistoryFromJSONFile(quietReplayLogger(), file)
			require.Error(t, err)
			require.Contains(t, err.Error(), "nondeterministic")
		})
	}
}

func newReplayer(t *testing.T) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	fenixworker.Register(r)
	return r
}

func quietReplayLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

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

func scenarios() []scenario {
	withTool := func(call map[string]any, allowed ...string) map[string]any {
		a := calculatorAssignment()
		a["tool_call"] = call
		if len(allowed) > 0 {
			a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": allowed}
		}
		return a
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
			if err := waitForPhase(ctx, c, run, contract.PhaseToolReviewed); err != nil {
				return nil, err
			}
			return run, c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalCancel, workflows.CancelRequest{Reason: "recorded cancel"})
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
		{"governed_permission_timeout.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			a := withTool(map[string]any{"call_id": "ask-2", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}})
			a["approval"] = map[string]any{"timeout_seconds": 1}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-governed-timeout", a)
		}},
		{"governed_canceled_while_waiting.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			run, err := startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-governed-cancel",
				withTool(map[string]any{"call_id": "ask-3", "tool_name": "calculator", "arguments": map[string]any{"expression": "1 + 1"}}))
			if err != nil {
				return nil, err
			}
			if err := waitForPhase(ctx, c, run, contract.PhasePermissionPending); err != nil {
				return nil, err
			}
			return run, c.CancelWorkflow(ctx, run.GetID(), run.GetRunID())
		}},
		{"governed_skills_catalog.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			raw, err := os.ReadFile(filepath.Join("..", "examples", "skills_catalog.json"))
			if err != nil {
				return nil, err
			}
			return startJSON(ctx, c, q, workflows.ExecuteAssignmentWorkflow, "replay-skills-catalog", json.RawMessage(raw))
		}},
		{"governed_prepare_round_summary.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
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
			return startJSON(ctx, c, q, workflows.PrepareRoundWorkflow, "replay-summary", a)
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
			if err := waitForPhase(ctx, c, run, contract.PhasePermissionPending); err != nil {
				return err
			}
			handle, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: run.GetID(), RunID: run.GetRunID(), UpdateName: workflows.UpdateDecidePermission,
				WaitForStage: client.WorkflowUpdateStageCompleted,
				Args:         []any{workflows.PermissionDecision{CallID: "ask-1", Decision: workflows.DecisionAllow}},
			})
			if err != nil {
				return err
			}
			return handle.Get(ctx, nil)
		})},
		{"agent_turn_canceled.json", agentScenario("slow", 5, func(ctx context.Context, c client.Client, run client.WorkflowRun) error {
			if err := waitForPhase(ctx, c, run, contract.PhaseToolReviewed); err != nil {
				return err
			}
			return c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalCancel, workflows.CancelRequest{Reason: "recorded cancel"})
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
		{"prepare_round_compacted.json", func(ctx context.Context, c client.Client, q string) (client.WorkflowRun, error) {
			raw, err := os.ReadFile(filepath.Join("..", "examples", "prepare_round.json"))
			if err != nil {
				return nil, err
			}
			return startJSON(ctx, c, q, workflows.PrepareRoundWorkflow, "replay-prepare-round", json.RawMessage(raw))
		}},
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

func waitForPhase(ctx context.Context, c client.Client, run client.WorkflowRun, phase string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.QueryReports); err == nil {
			var reports []contract.Report
			if v.Get(&reports) == nil {
				for _, r := range reports {
					if r.Phase == phase {
						return nil
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("workflow %s never reported phase %s", run.GetID(), phase)
}

// recordHistories runs the scenarios on a fresh dev server and writes their
// histories to testdata/ (with the deliberately incompatible one derived
// from the calculator history).
func recordHistories(t *testing.T, overwrite bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli, err := devserver.CLIPath(ctx, true, os.Stderr)
	require.NoError(t, err)
	srv, err := devserver.Start(ctx, devserver.Options{CLIPath: cli})
	require.NoError(t, err)
	defer srv.Stop()

	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# Fenix\nDurable agents.\n"), 0o644))
	registry, err := testtools.WithBuiltins(testtools.Sleep())
	require.NoError(t, err)
	queue := "fenix-record"
	w, err := fenixworker.New(srv.Client(), fenixworker.Config{
		TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: ws, HostID: "recorder", Tools: registry,
		SkillsDir: filepath.Join("..", "examples", "skills"), Hooks: []hooks.AgentHook{testtools.PolicyHook{}},
		Model:  &llm.Router{Scripted: scriptedProvider(t)},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	defer w.Stop()

	for _, sc := range scenarios() {
		path := filepath.Join("testdata", sc.file)
		if _, err := os.Stat(path); err == nil && !overwrite {
			continue
		}
		run, err := sc.run(ctx, srv.Client(), queue)
		require.NoError(t, err, sc.file)
		// Get follows continue-as-new; the scenario's history is its first run.
		first := srv.Client().GetWorkflow(ctx, run.GetID(), run.GetRunID())
		var ignored any
		require.NoError(t, run.Get(ctx, &ignored), sc.file)
		hist := fetchHistory(t, ctx, srv.Client(), first)
		writeHistory(t, path, hist)
		if last := run.GetRunID(); last != first.GetRunID() {
			continued := strings.TrimSuffix(path, ".json") + "_last_run.json"
			writeHistory(t, continued, fetchHistory(t, ctx, srv.Client(), srv.Client().GetWorkflow(ctx, run.GetID(), last)))
		}
		if sc.file == "execute_assignment_calculator.json" {
			writeHistory(t, filepath.Join("testdata", "incompatible", "review_stage_renamed.json"), renameFirstActivity(t, hist, "ReviewToolCall", "ApproveToolCall"))
		}
		t.Logf("recorded %s: %d events", sc.file, len(hist.Events))
	}
}

func scriptedProvider(t *testing.T) *scripted.Provider {
	p, err := scripted.Load(filepath.Join("testdata", "scripts", "agent.json"))
	require.NoError(t, err)
	return p
}

func fetchHistory(t *testing.T, ctx context.Context, c client.Client, run client.WorkflowRun) *historypb.History {
	hist := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, e)
	}
	return hist
}

func writeHistory(t *testing.T, path string, hist *historypb.History) {
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
}

// renameFirstActivity changes the type of the first scheduled activity
// named from: the code will schedule `from` where history says `to`.
func renameFirstActivity(t *testing.T, hist *historypb.History, from, to string) *historypb.History {
	b, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(hist)
	require.NoError(t, err)
	mutated := strings.Replace(string(b), `"activityType":{"name":"`+from+`"}`, `"activityType":{"name":"`+to+`"}`, 1)
	require.NotEqual(t, string(b), mutated, "activity %s not found in history", from)
	out := &historypb.History{}
	require.NoError(t, temporalproto.CustomJSONUnmarshalOptions{}.Unmarshal([]byte(mutated), out))
	return out
}
