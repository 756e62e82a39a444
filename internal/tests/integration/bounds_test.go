package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// runBounded runs an assignment and requires that it ends with a result:
// completed, or failed with a typed error. A run the server terminated, or
// whose workflow task keeps failing, fails the test with the reason.
func runBounded(t *testing.T, queue, id string, a map[string]any) contract.Result {
	t.Helper()
	raw, err := json.Marshal(a)
	require.NoError(t, err)
	run, err := server.Client().ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 2 * time.Minute,
	}, workflows.ExecuteAssignmentWorkflow, json.RawMessage(raw))
	require.NoError(t, err, "%s: start (%d bytes of input)", id, len(raw))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		desc, derr := server.Client().DescribeWorkflow(context.Background(), id, run.GetRunID())
		status := "unknown"
		if derr == nil {
			status = desc.Status.String()
		}
		why := lastTaskFailure(t, id, run.GetRunID())
		_ = server.Client().TerminateWorkflow(context.Background(), id, run.GetRunID(), "test gave up")
		t.Fatalf("%s ended without a result (%s): %v%s", id, status, err, why)
	}
	switch res.Status {
	case contract.StatusCompleted:
	case contract.StatusFailed:
		require.NotNil(t, res.Error, id)
		require.NotEmpty(t, res.Error.ErrorType, "%s: failed without a typed error", id)
	default:
		t.Fatalf("%s ended %s", id, res.Status)
	}
	return res
}

// lastTaskFailure names the last workflow task failure, if any.
func lastTaskFailure(t *testing.T, id, runID string) string {
	iter := server.Client().GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	last := ""
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			break
		}
		if f := e.GetWorkflowTaskFailedEventAttributes(); f != nil {
			last = fmt.Sprintf("; workflow task failed: %s %s", f.Cause, f.GetFailure().GetMessage())
		}
		if f := e.GetWorkflowExecutionTerminatedEventAttributes(); f != nil {
			last = "; terminated: " + f.Reason
		}
	}
	return last
}

// maxArgs fills every string property of a tool's schema to its maxLength
// (4 KiB where none is given), keeping the whole under limit bytes.
func maxArgs(t *testing.T, d tools.Descriptor, limit int) map[string]any {
	var schema struct {
		Properties map[string]struct {
			Type      string `json:"type"`
			MaxLength int    `json:"maxLength"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(d.Schema, &schema), d.Name)
	args := map[string]any{}
	budget := limit - 1024
	for name, p := range schema.Properties {
		if p.Type != "string" {
			continue
		}
		n := p.MaxLength
		if n == 0 {
			n = 4 << 10
		}
		n = min(n, budget)
		if n <= 0 {
			break
		}
		args[name] = strings.Repeat("a", n)
		budget -= n + len(name) + 8
	}
	return args
}

// Every tool fed its maximum sizes, and arguments near the server's 2 MB
// blob limit, ends completed or failed with a typed error: never
// terminated by the server, never a workflow task failing forever.
func TestEveryToolAtItsMaximumSizesEndsWithAResult(t *testing.T) {
	w := startWorker(t)
	registry := tools.Builtin()
	names := registry.Names()
	for _, d := range registry.Descriptors() {
		limit := d.MaxArgBytes
		if limit == 0 {
			limit = tools.DefaultMaxArgumentBytes
		}
		cases := map[string]map[string]any{
			"max":  maxArgs(t, d, limit),
			"over": {"path": "x", "content": strings.Repeat("b", 1_900_000)},
		}
		for kind, args := range cases {
			id := fmt.Sprintf("bounds-%s-%s", d.Name, kind)
			a := assignment(id, map[string]any{"call_id": id, "tool_name": d.Name, "arguments": args}, names...)
			res := runBounded(t, w.queue, id, a)
			if kind == "over" {
				require.Equal(t, contract.StatusFailed, res.Status, id)
				assert.Equal(t, fenixerr.TypePayloadTooLarge, res.Error.ErrorType, "%s: %s", id, res.Error.LastErrorSummary)
			}
			t.Logf("%s: %s %s", id, res.Status, errorType(res))
		}
	}
	// The schema maximum of workspace_write is written, and the kernel
	// gets the result.
	id := "bounds-write-1mib"
	content := strings.Repeat("w", 1<<20)
	res := runBounded(t, w.queue, id, assignment(id, map[string]any{"call_id": id, "tool_name": "workspace_write",
		"arguments": map[string]any{"path": "big.txt", "content": content}}, "workspace_write"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	b, err := os.ReadFile(filepath.Join(w.workspace, "big.txt"))
	require.NoError(t, err)
	assert.Equal(t, len(content), len(b))

	// Reading it back at workspace_read's maximum: the content is in the
	// result once, and every copy in reports and markers is bounded.
	id = "bounds-read-1mib"
	res = runBounded(t, w.queue, id, assignment(id, map[string]any{"call_id": id, "tool_name": "workspace_read",
		"arguments": map[string]any{"path": "big.txt", "max_bytes": 1 << 20}}, "workspace_read"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, strings.Repeat("w", 1<<19))
}

// Results made of HTML characters reach history as large as Fenix
// measured them: through the SDK's own JSON converter every '<' would
// become six bytes, the stages' markers would overflow the server's 4 MB
// message limit and the run would never end.
func TestHTMLHeavyResultsEndWithAResult(t *testing.T) {
	w := startWorker(t)
	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "lt.txt"), []byte(strings.Repeat("<", 1<<20)), 0o644))
	lines := strings.Repeat(strings.Repeat("<", 300)+"\n", 1000)
	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "lines.txt"), []byte(lines), 0o644))
	cases := []struct {
		id, tool string
		args     map[string]any
	}{
		{"html-calculator", "calculator", map[string]any{"expression": `repeat("<", 170000)`}},
		{"html-read", "workspace_read", map[string]any{"path": "lt.txt", "max_bytes": 1 << 20}},
		{"html-read-default", "workspace_read", map[string]any{"path": "lt.txt"}},
		{"html-search", "workspace_search", map[string]any{"pattern": "<", "path": "lines.txt", "max_results": 1000}},
	}
	for _, c := range cases {
		res := runBounded(t, w.queue, c.id, assignment(c.id, map[string]any{"call_id": c.id, "tool_name": c.tool, "arguments": c.args}, c.tool))
		require.Equal(t, contract.StatusCompleted, res.Status, "%s: %s", c.id, errorType(res))
		assert.True(t, strings.Contains(res.Output.Content, strings.Repeat("<", 300)), "%s: the content is not in the result", c.id)
	}
}

func errorType(res contract.Result) string {
	if res.Error == nil {
		return ""
	}
	return res.Error.ErrorType + ": " + preview(res.Error.LastErrorSummary)
}

func preview(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// Two PreToolUse hooks each returning ~1 MB of additionalContext, a
// PostToolUse hook returning as much, and a block with ~1 MB of stderr:
// every run ends with a result, an audit row and SessionStop.
func TestMaximumHookOutputEndsWithAResult(t *testing.T) {
	dir := t.TempDir()
	big := func(event string) string {
		return fmt.Sprintf(`#!/bin/sh
cat >/dev/null
printf '{"hookSpecificOutput":{"hookEventName":"%s","additionalContext":"'
head -c 1000000 /dev/zero | tr '\0' c
printf '"}}'
`, event)
	}
	scripts := map[string]string{
		"pre1.sh": big("PreToolUse"), "pre2.sh": big("PreToolUse"), "post.sh": big("PostToolUse"),
		"block.sh": "#!/bin/sh\ncat >/dev/null\nhead -c 1040000 /dev/zero | tr '\\0' r >&2\nexit 2\n",
	}
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	command := func(name string) map[string]any {
		return map[string]any{"type": "command", "command": filepath.Join(dir, name), "timeout": 20}
	}
	settings := map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{
			map[string]any{"matcher": "calculator", "hooks": []any{command("pre1.sh"), command("pre2.sh")}},
			map[string]any{"matcher": "workspace_read", "hooks": []any{command("block.sh")}},
		},
		"PostToolUse": []any{map[string]any{"matcher": "calculator", "hooks": []any{command("post.sh")}}},
	}}
	raw, _ := json.Marshal(settings)
	path := filepath.Join(dir, "hooks.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	w := startWorker(t, withHooksFile(path))

	calc := runBounded(t, w.queue, "bounds-hooks-calculator", assignment("bounds-hooks-calculator", map[string]any{
		"call_id": "big-context", "tool_name": "calculator", "arguments": map[string]any{"expression": "6 * 7"}}))
	require.Equal(t, contract.StatusCompleted, calc.Status, "%+v", calc.Error)
	assert.Contains(t, calc.Output.Content, "42")
	assert.Equal(t, 1, auditCount(t, w.Audit(), "bounds-hooks-calculator", audit.EventToolCall))
	assert.Equal(t, 1, auditCount(t, w.Audit(), "bounds-hooks-calculator", audit.EventSessionStop))

	blocked := runBounded(t, w.queue, "bounds-hooks-blocked", assignment("bounds-hooks-blocked", map[string]any{
		"call_id": "big-reason", "tool_name": "workspace_read", "arguments": map[string]any{"path": "README.md"}}))
	require.Equal(t, contract.StatusFailed, blocked.Status)
	assert.Equal(t, fenixerr.TypeToolBlocked, blocked.Error.ErrorType)
	assert.Equal(t, 1, auditCount(t, w.Audit(), "bounds-hooks-blocked", audit.EventToolFailure))
	assert.Equal(t, 1, auditCount(t, w.Audit(), "bounds-hooks-blocked", audit.EventSessionStop))
}

// Identifiers, names and paths an assignment carries are repeated in its
// search attributes, every stage and every trace entry: one over the
// server's 2 KB search-attribute limit got the run terminated, and a
// megabyte-long one failed its workflow task forever on the 4 MB gRPC
// limit. Each now ends the run with InvalidAssignmentError naming the
// field, on every workflow that takes an assignment.
func TestOversizedIdentifiersEndWithAResult(t *testing.T) {
	w := startWorker(t)
	long := func(n int) string { return strings.Repeat("k", n) }
	cases := []struct {
		field string
		set   func(a map[string]any)
	}{
		{"conversation_id", func(a map[string]any) { a["conversation_id"] = long(5000) }},
		{"turn_id", func(a map[string]any) { a["turn_id"] = long(5000) }},
		{"logical_work_id", func(a map[string]any) { a["logical_work_id"] = long(1 << 20) }},
		{"tool_call.tool_name", func(a map[string]any) { a["tool_call"].(map[string]any)["tool_name"] = long(5000) }},
		{"tool_call.tool_name", func(a map[string]any) { a["tool_call"].(map[string]any)["tool_name"] = long(1 << 20) }},
		{"tool_call.call_id", func(a map[string]any) { a["tool_call"].(map[string]any)["call_id"] = long(1 << 20) }},
		{"agent_context.profile", func(a map[string]any) { a["agent_context"].(map[string]any)["profile"] = long(1 << 20) }},
		{"model_context.likely_model", func(a map[string]any) { a["model_context"] = map[string]any{"likely_model": long(1 << 20)} }},
		{"workspace_root", func(a map[string]any) { a["workspace_root"] = "/" + long(1<<20) }},
	}
	for i, c := range cases {
		id := fmt.Sprintf("bounds-ids-%d", i)
		a := assignment(id, map[string]any{"call_id": "c1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1+1"}})
		c.set(a)
		res := runBounded(t, w.queue, id, a)
		require.Equal(t, contract.StatusFailed, res.Status, "%s: %s", id, c.field)
		assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType, "%s: %s", c.field, errorType(res))
		assert.Contains(t, res.Error.LastErrorSummary, c.field+" is ", id)
	}

	// PrepareRound and AgentTurn take assignments too.
	a := assignment("bounds-ids-round", nil)
	delete(a, "tool_call")
	a["conversation_id"] = long(5000)
	raw, err := json.Marshal(a)
	require.NoError(t, err)
	run, err := server.Client().ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: "bounds-ids-round", TaskQueue: w.queue, WorkflowExecutionTimeout: 2 * time.Minute}, workflows.PrepareRoundWorkflow, json.RawMessage(raw))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var round contract.PreparedRound
	require.NoError(t, run.Get(ctx, &round), lastTaskFailure(t, run.GetID(), run.GetRunID()))
	require.Equal(t, contract.StatusFailed, round.Status)
	assert.Equal(t, fenixerr.TypeInvalidAssignment, round.Error.ErrorType)

	a = assignment("bounds-ids-turn", nil)
	delete(a, "tool_call")
	a["model"] = long(1 << 20)
	raw, err = json.Marshal(a)
	require.NoError(t, err)
	run, err = server.Client().ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: "bounds-ids-turn", TaskQueue: w.queue, WorkflowExecutionTimeout: 2 * time.Minute}, workflows.AgentTurnWorkflow, json.RawMessage(raw))
	require.NoError(t, err)
	var turn contract.Result
	require.NoError(t, run.Get(ctx, &turn), lastTaskFailure(t, run.GetID(), run.GetRunID()))
	require.Equal(t, contract.StatusFailed, turn.Status)
	assert.Equal(t, fenixerr.TypeInvalidAssignment, turn.Error.ErrorType)
	assert.Contains(t, turn.Error.LastErrorSummary, "model is ")
}

// A model's answer is input too. A megabyte-long call ID, repeated by
// every stage of the call, failed the turn's workflow task forever on the
// 4 MB gRPC limit; a megabyte-long tool name failed CallModel with the
// SDK's "Complete result exceeds size limit" as a RuntimeError. The
// oversized names are now replaced by placeholders (the unknown tool is
// refused and the model told, as for any unknown tool) and recorded in
// the trace; an answer over the 2 MiB payload limit fails with
// PayloadTooLargeError.
func TestOversizedModelToolCallsEndWithAResult(t *testing.T) {
	big := strings.Repeat("m", 1<<20)
	call := func(callID, tool string) []any {
		return []any{
			map[string]any{"tool_calls": []any{map[string]any{"call_id": callID, "tool_name": tool, "arguments": map[string]any{"expression": "1 + 1"}}}},
			map[string]any{"content": "answered"},
		}
	}
	raw, err := json.Marshal(map[string]any{"scripts": map[string]any{
		"big_call_id":   map[string]any{"turns": call(big, "calculator")},
		"big_tool_name": map[string]any{"turns": call("c1", big)},
		"big_answer":    map[string]any{"turns": []any{map[string]any{"content": strings.Repeat("a", 2100000)}}},
	}})
	require.NoError(t, err)
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, raw, 0o644))
	w := startWorker(t, withScripts(t, script))
	run := func(name string) contract.Result {
		req := agentTurnRequest(t, name, map[string]any{
			"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}},
			"max_steps":     4,
		})
		id := req["logical_work_id"].(string)
		r := startWorkflow(t, w.queue, workflows.AgentTurnWorkflow, id, req)
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		var res contract.Result
		if err := r.Get(ctx, &res); err != nil {
			why := lastTaskFailure(t, id, r.GetRunID())
			_ = server.Client().TerminateWorkflow(context.Background(), id, r.GetRunID(), "test gave up")
			t.Fatalf("%s ended without a result: %v%s", name, err, why)
		}
		return res
	}

	res := run("big_call_id")
	require.Equal(t, contract.StatusCompleted, res.Status, errorType(res))
	assert.Equal(t, "answered", res.Output.Content)
	model := findTraceEntry(res.Trace, "call_model")
	assert.NotNil(t, model.Get("oversized_tool_call_names"), "the rename is in the trace")

	res = run("big_tool_name")
	require.Equal(t, contract.StatusCompleted, res.Status, errorType(res))
	assert.Equal(t, "answered", res.Output.Content)

	res = run("big_answer")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypePayloadTooLarge, res.Error.ErrorType, errorType(res))
}

// A cancel signal's reason is repeated in the failure, the reports and
// the trace: a 1 MiB one overflowed the workflow task's 4 MB gRPC message
// and the run never ended. It is now kept to 8 KiB.
func TestOversizedCancelReasonEndsWithAResult(t *testing.T) {
	w := startWorker(t)
	id := "bounds-cancel-reason"
	a := assignment(id, map[string]any{"call_id": "c1", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "sleep 30"}}, "exec_command")
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, id, a)
	waitForRunningActivity(t, run, "ExecuteTool")
	reason := strings.Repeat("r", 1<<20)
	require.NoError(t, server.Client().SignalWorkflow(context.Background(), id, "", workflows.SignalCancel, workflows.CancelRequest{Reason: reason}))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		why := lastTaskFailure(t, id, run.GetRunID())
		_ = server.Client().TerminateWorkflow(context.Background(), id, run.GetRunID(), "test gave up")
		t.Fatalf("no result: %v%s", err, why)
	}
	require.Equal(t, contract.StatusCanceled, res.Status, errorType(res))
	assert.Contains(t, res.Error.LastErrorSummary, strings.Repeat("r", 1000))
	assert.Less(t, len(res.Error.LastErrorSummary), 16<<10)
}
