package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// whatIfTools is every run's allow-list, so every verdict of one policy
// has one fingerprint.
var whatIfTools = []string{"calculator", "workspace_read", "exec_command"}

// writePolicy writes a hook settings file and its scripts into dir. Every
// script logs whether it was called for a replay.
func writePolicy(t *testing.T, dir string, freezeReads, freezeExec bool) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	log := filepath.Join(dir, "calls.log")
	script := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`#!/bin/sh
input=$(cat)
case "$input" in *'"is_replay":true'*) echo "%s replay" >> %s ;; *) echo "%s live" >> %s ;; esac
%s
`, name, log, name, log, body)), 0o755))
		return path
	}
	type hook struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Name    string `json:"name"`
	}
	type group struct {
		Matcher string `json:"matcher"`
		Hooks   []hook `json:"hooks"`
	}
	pre := []group{{Matcher: "calculator", Hooks: []hook{{"command", script("ask-guard.sh", `case "$input" in
  *'"tool_use_id":"ask-'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"calculator calls marked ask- need approval"}}' ;;
esac`), "ask-guard"}}}}
	if freezeReads {
		pre = append(pre, group{Matcher: "workspace_read", Hooks: []hook{{"command", script("freeze-reads.sh", `echo "workspace reads are frozen" >&2; exit 2`), "freeze-reads"}}})
	}
	if freezeExec {
		pre = append(pre, group{Matcher: "exec_command", Hooks: []hook{{"command", script("freeze-exec.sh", `echo "exec_command is frozen" >&2; exit 2`), "freeze-exec"}}})
	}
	raw, err := json.MarshalIndent(map[string]any{"hooks": map[string]any{"PreToolUse": pre}}, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(dir, "hooks.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

// policyWorker is a worker on a given queue that a test can stop halfway.
type policyWorker struct {
	*worker.Worker
	workspace string
	stop      func()
}

func startPolicyWorker(t *testing.T, queue, hooksFile string) *policyWorker {
	t.Helper()
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# Fenix\n"), 0o644))
	script, err := scripted.Load(filepath.Join(repoRoot, "workflows", "testdata", "scripts", "agent.json"))
	require.NoError(t, err)
	w, err := worker.New(server.Client(), worker.Config{
		TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: ws, HooksFile: hooksFile,
		Model:  &llm.Router{Scripted: script},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	t.Cleanup(func() { verifyQueue(t, queue) })
	require.NoError(t, w.Start())
	pw := &policyWorker{Worker: w, workspace: ws, stop: sync.OnceFunc(w.Stop)}
	t.Cleanup(pw.stop)
	return pw
}

func policyFingerprint(t *testing.T, hooksFile string) string {
	t.Helper()
	store, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	require.NoError(t, err)
	defer store.Close()
	r, err := worker.PolicyHooks(worker.Config{HooksFile: hooksFile}, store)
	require.NoError(t, err)
	return r.PolicyFingerprint(whatIfTools)
}

func whatIfAssignment(id, conversation string, call map[string]any) map[string]any {
	a := assignment(id, call, whatIfTools...)
	a["conversation_id"] = conversation
	return a
}

func runTo(t *testing.T, queue, id string, input any) (contract.Result, client.WorkflowRun) {
	t.Helper()
	workflowType := workflows.ExecuteAssignmentWorkflow
	if _, isTurn := input.(map[string]any)["max_steps"]; isTurn {
		workflowType = workflows.AgentTurnWorkflow
	}
	run := startWorkflow(t, queue, workflowType, id, input)
	var res contract.Result
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, &res))
	return res, run
}

func traceOf(res contract.Result, hook string) []contract.TraceEntry {
	var out []contract.TraceEntry
	for _, e := range res.Trace {
		if e.Hook == hook {
			out = append(out, e)
		}
	}
	return out
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(raw), "\n")
}

// TestPolicyWhatIfAndRewind records calls under policy A (a command hook
// freezes workspace reads and asks about calculator calls marked ask-),
// diffs them against policy B (reads allowed, exec_command frozen) with
// `starter policy-diff`, then restarts the worker under B and rewinds the
// blocked read to its PreToolUse, where it now completes.
func TestPolicyWhatIfAndRewind(t *testing.T) {
	dir := t.TempDir()
	policyA := writePolicy(t, filepath.Join(dir, "policy-a"), true, false)
	policyB := writePolicy(t, filepath.Join(dir, "policy-b"), false, true)
	fpA, fpB := policyFingerprint(t, policyA), policyFingerprint(t, policyB)
	require.NotEqual(t, fpA, fpB)

	queue := newTaskQueue(t)
	prefix := fmt.Sprintf("whatif-%d-", os.Getpid())
	conversation := "conv-" + prefix + "x"
	workerA := startPolicyWorker(t, queue, policyA)
	ctx := context.Background()

	// Record under policy A.
	calc, _ := runTo(t, queue, prefix+"calc-1", whatIfAssignment("calc-1", conversation,
		map[string]any{"call_id": "calc-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"}}))
	require.Equal(t, contract.StatusCompleted, calc.Status, "%+v", calc.Error)
	read, readRun := runTo(t, queue, prefix+"read-1", whatIfAssignment("read-1", conversation,
		map[string]any{"call_id": "read-1", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}))
	require.Equal(t, contract.StatusFailed, read.Status)
	require.Equal(t, fenixerr.TypeToolBlocked, read.Error.ErrorType)

	askRun := startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, prefix+"ask-1", whatIfAssignment("ask-1", conversation,
		map[string]any{"call_id": "ask-1", "tool_name": "calculator", "arguments": map[string]any{"expression": "3 * 3"}}))
	awaitPermission(t, askRun)
	decidePermission(t, askRun, workflows.PermissionDecision{CallID: "ask-1", Decision: workflows.DecisionAllow, Reason: "fine"})
	var ask contract.Result
	require.NoError(t, askRun.Get(ctx, &ask))
	require.Equal(t, contract.StatusCompleted, ask.Status, "%+v", ask.Error)

	timeoutAssignment := whatIfAssignment("ask-2", conversation,
		map[string]any{"call_id": "ask-2", "tool_name": "calculator", "arguments": map[string]any{"expression": "4 * 4"}})
	timeoutAssignment["approval"] = map[string]any{"timeout_seconds": 1}
	timedOut, _ := runTo(t, queue, prefix+"ask-2", timeoutAssignment)
	require.Equal(t, fenixerr.TypePermissionDenied, timedOut.Error.ErrorType)

	execLog := filepath.Join(workerA.workspace, "exec-log.txt")
	exec, execRun := runTo(t, queue, prefix+"exec-1", whatIfAssignment("exec-1", conversation,
		map[string]any{"call_id": "exec-1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "echo ran >> exec-log.txt"}}))
	require.Equal(t, contract.StatusCompleted, exec.Status, "%+v", exec.Error)
	require.Equal(t, 1, countLines(t, execLog))

	turn := agentRequest("parallel", conversation, prefix+"agent")
	turnRes, _ := runTo(t, queue, prefix+"agent", turn)
	require.Equal(t, contract.StatusCompleted, turnRes.Status, "%+v", turnRes.Error)

	// Every verdict's trace entry names the policy that made it.
	for _, res := range []contract.Result{calc, read, ask, timedOut, exec, turnRes} {
		for _, hook := range []string{"review_tool_call", "pre_tool_use", "permission_request"} {
			for _, e := range traceOf(res, hook) {
				assert.Equal(t, fpA, e.Get("policy_fingerprint"), "%s entry %v", hook, e.Fields)
			}
		}
	}
	assert.Len(t, traceOf(ask, "permission_request"), 1)

	// Visibility is eventually consistent: wait until every run is listed.
	narrow := fmt.Sprintf("ConversationId = '%s'", conversation)
	require.Eventually(t, func() bool {
		resp, err := server.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: narrow + " AND ExecutionStatus != 'Running'"})
		return err == nil && len(resp.GetExecutions()) == 6
	}, 30*time.Second, 200*time.Millisecond)

	// What would policy B decide?
	auditBefore, err := workerA.Audit().Count(ctx, audit.Filter{})
	require.NoError(t, err)
	hookLogB := filepath.Join(dir, "policy-b", "calls.log")
	out, code := runBinary(t, "starter", nil, "policy-diff", "-hooks-file", policyB, "-query", narrow, "-wide")
	t.Logf("starter policy-diff -hooks-file %s -query %q (exit %d):\n%s", policyB, narrow, code, out)
	require.Equal(t, 1, code, "a policy that changes verdicts exits 1")

	link := func(run client.WorkflowRun) string {
		return fmt.Sprintf("%s/namespaces/default/workflows/%s/%s/history", server.UIURL, run.GetID(), run.GetRunID())
	}
	agentRunID := mustDescribe(t, prefix+"agent")
	wantTable := []string{
		"CHANGE WORKFLOW STEP CALL TOOL RECORDED RECORDED POLICY CANDIDATE WEB UI",
		fmt.Sprintf(`block → allow %sagent 1 call-0-1 workspace_read block: hook "freeze-reads": workspace reads are frozen %s allow %s/namespaces/default/workflows/%sagent/%s/history`,
			prefix, fpA, server.UIURL, prefix, agentRunID),
		fmt.Sprintf(`allow → block %sexec-1 - exec-1 exec_command allow %s block: hook "freeze-exec": exec_command is frozen %s`, prefix, fpA, link(execRun)),
		fmt.Sprintf(`block → allow %sread-1 - read-1 workspace_read block: hook "freeze-reads": workspace reads are frozen %s allow %s`, prefix, fpA, link(readRun)),
		"",
		fmt.Sprintf("Recorded verdicts by policy: %s (7 calls).", fpA),
		fmt.Sprintf("Candidate verdicts by policy: %s (7 calls).", fpB),
		"7 calls replayed, 1 newly blocked, 2 newly allowed, 4 unchanged",
	}
	var gotTable []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "policy-diff: ") || (line == "" && len(gotTable) == 0) {
			continue // progress on stderr
		}
		gotTable = append(gotTable, strings.Join(strings.Fields(line), " "))
	}
	assert.Equal(t, wantTable, gotTable[:min(len(gotTable), len(wantTable))])

	// No tool ran and nothing was audited; the candidate's hooks ran, told
	// it was a replay.
	assert.Equal(t, 1, countLines(t, execLog), "exec_command ran during the diff")
	auditAfter, err := workerA.Audit().Count(ctx, audit.Filter{})
	require.NoError(t, err)
	assert.Equal(t, auditBefore, auditAfter)
	hookLog, err := os.ReadFile(hookLogB)
	require.NoError(t, err)
	assert.Contains(t, string(hookLog), "freeze-exec.sh replay")
	assert.NotContains(t, string(hookLog), "live")

	jsonOut, code := runBinary(t, "starter", nil, "policy-diff", "-hooks-file", policyB, "-query", narrow, "-json")
	require.Equal(t, 1, code, jsonOut)
	var report struct {
		Changes []struct {
			Change    string `json:"change"`
			CallID    string `json:"call_id"`
			WebUI     string `json:"web_ui"`
			Candidate struct {
				Outcome           string `json:"outcome"`
				PolicyFingerprint string `json:"policy_fingerprint"`
			} `json:"candidate"`
		} `json:"changes"`
		Summary struct {
			Replayed     int `json:"replayed"`
			NewlyBlocked int `json:"newly_blocked"`
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(jsonOut[strings.Index(jsonOut, "{"):]), &report), jsonOut)
	require.Len(t, report.Changes, 3)
	assert.Equal(t, "newly_blocked", report.Changes[1].Change)
	assert.Equal(t, link(execRun), report.Changes[1].WebUI)
	assert.Equal(t, fpB, report.Changes[1].Candidate.PolicyFingerprint)
	assert.Equal(t, 7, report.Summary.Replayed)
	assert.Equal(t, 1, report.Summary.NewlyBlocked)

	// The same policy changes nothing: exit 0.
	out, code = runBinary(t, "starter", nil, "policy-diff", "-hooks-file", policyA, "-query", narrow)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "7 calls replayed, 0 newly blocked, 0 newly allowed, 7 unchanged")

	// Rewind: the worker restarts under policy B, and the read blocked
	// under A reruns from PreToolUse.
	workerA.stop()
	startPolicyWorker(t, queue, policyB)
	out, code = runBinary(t, "starter", nil, "rewind", prefix+"read-1", "-to", "pre_tool_use", "-reason", "reads unfrozen")
	t.Logf("starter rewind %sread-1 -to pre_tool_use (exit %d):\n%s", prefix, code, out)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Reset point: WorkflowTaskCompleted event")
	var rewound contract.Result
	newRun := server.Client().GetWorkflow(ctx, prefix+"read-1", "")
	require.NoError(t, newRun.Get(ctx, &rewound))
	require.Equal(t, contract.StatusCompleted, rewound.Status, "%+v", rewound.Error)
	assert.Contains(t, rewound.Output.Content, "# Fenix")
	from := traceOf(rewound, workflows.TraceRewoundFrom)
	require.Len(t, from, 1, "trace: %v", rewound.Trace)
	assert.Equal(t, readRun.GetRunID(), from[0].Get("run_id"))
	assert.Equal(t, "reads unfrozen", from[0].Get("reason"))
	assert.Equal(t, "pre_tool_use", from[0].Get("stage"))
	// The rerun was decided under policy B, whose only hook is for
	// exec_command: the lean review (fenix-shape 5) finds no PreToolUse
	// hook for workspace_read and leaves that stage out.
	review := traceOf(rewound, "review_tool_call")
	require.NotEmpty(t, review)
	assert.Equal(t, fpB, review[len(review)-1].Get("policy_fingerprint"))
	assert.NotContains(t, fmt.Sprint(review[len(review)-1].Get("hook_events")), "pre_tool_use")
	assert.Empty(t, traceOf(rewound, "pre_tool_use"), "no PreToolUse hook concerns workspace_read under policy B")
	// The old run stays inspectable, blocked as it was.
	var old contract.Result
	require.NoError(t, server.Client().GetWorkflow(ctx, prefix+"read-1", readRun.GetRunID()).Get(ctx, &old))
	assert.Equal(t, contract.StatusFailed, old.Status)

	// Rewinding past the exec_command that ran is refused, naming it.
	out, code = runBinary(t, "starter", nil, "rewind", prefix+"exec-1", "-to", "pre_tool_use")
	require.Equal(t, 1, code, out)
	assert.True(t, containsAll(out, "exec_command exec-1 (event", "ran and has side effects", "-allow-rerun"), out)
	assert.Equal(t, execRun.GetRunID(), mustDescribe(t, prefix+"exec-1"), "a refused rewind must not reset")
	out, code = runBinary(t, "starter", nil, "rewind", prefix+"exec-1", "-to", "pre_tool_use", "-allow-rerun", "-dry-run")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "temporal workflow reset --workflow-id "+prefix+"exec-1")
}

func mustDescribe(t *testing.T, workflowID string) string {
	t.Helper()
	desc, err := server.Client().DescribeWorkflow(context.Background(), workflowID, "")
	require.NoError(t, err)
	return desc.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

func agentRequest(script, conversation, id string) map[string]any {
	return map[string]any{
		"logical_work_id": id, "attempt_no": 1, "conversation_id": conversation, "turn_id": "turn-" + script,
		"context_messages": []map[string]any{{"role": "user", "content": "Help me."}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": whatIfTools},
		"model_context":    map[string]any{"likely_model": "scripted:" + script},
		"max_steps":        5,
	}
}
