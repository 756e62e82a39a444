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
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/scarce"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// An MCP server that writes bytes which are not UTF-8 to stderr and exits:
// its stderr is quoted in the error of a call to its tools. That error's
// text reached the stage's Temporal failure unchanged, which the worker
// cannot marshal (protobuf strings are UTF-8), so the workflow task that
// recorded the stage timed out again and again and the run never ended.
// Now the call fails with ToolUnavailableError naming the server, its
// stderr included.
func TestMCPServerWithBinaryStderrEndsWithAResult(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "broken.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nprintf 'bad \\377\\376 news\\n' >&2\nexit 3\n"), 0o755))
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"broken": map[string]any{"command": script}}})
	require.NoError(t, err)
	cfg := filepath.Join(dir, "mcp.json")
	require.NoError(t, os.WriteFile(cfg, raw, 0o644))
	w := startWorker(t, func(c *worker.Config) { c.MCPConfig = cfg; c.MCPStartWait = 5 * time.Second })
	require.Eventually(t, func() bool { return mcpStatus(w, "broken").LastError != "" }, 10*time.Second, 20*time.Millisecond)

	id := "bounds-mcp-binary-stderr"
	res := runBounded(t, w.queue, id, assignment(id, map[string]any{"call_id": "c1", "tool_name": "mcp__broken__t",
		"arguments": map[string]any{}}, "mcp__broken"))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolUnavailable, res.Error.ErrorType, errorType(res))
	assert.Contains(t, res.Error.LastErrorSummary, `MCP server "broken"`)
	assert.Contains(t, res.Error.LastErrorSummary, "bad \uFFFD news")
}

// A model answering with 10,000 tool calls: every call of a step runs in
// parallel through its stages, so the step alone would record some 50,000
// events (the server terminates a run at 51,200) and took minutes for
// every few hundred calls. The answer is now refused, and the turn fails
// with PayloadTooLargeError naming the count, in seconds.
func TestTenThousandToolCallsInOneAnswerEndWithAResult(t *testing.T) {
	calls := make([]any, 10000)
	for i := range calls {
		calls[i] = map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "1+1"}}
	}
	raw, err := json.Marshal(map[string]any{"scripts": map[string]any{
		"flood": map[string]any{"turns": []any{map[string]any{"tool_calls": calls}, map[string]any{"content": "done"}}},
	}})
	require.NoError(t, err)
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, raw, 0o644))
	w := startWorker(t, withScripts(t, script))
	req := agentTurnRequest(t, "flood", map[string]any{
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}}, "max_steps": 3})
	id := req["logical_work_id"].(string)
	run := startWorkflow(t, w.queue, workflows.AgentTurnWorkflow, id, req)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		why := lastTaskFailure(t, id, run.GetRunID())
		_ = server.Client().TerminateWorkflow(context.Background(), id, run.GetRunID(), "test gave up")
		t.Fatalf("no result: %v%s", err, why)
	}
	require.Equal(t, contract.StatusFailed, res.Status, errorType(res))
	assert.Equal(t, fenixerr.TypePayloadTooLarge, res.Error.ErrorType, errorType(res))
	assert.Equal(t, "too_many_tool_calls", res.Error.Code)
	assert.Contains(t, res.Error.LastErrorSummary, "10000 tool calls")
	assert.Less(t, len(history(t, run)), 200, "no call of the answer ran")
}

// Input a client in another language may send: not JSON, or JSON nested
// deeper than encoding/json reads (100,000 levels in the arguments), or in
// an encoding no converter of the worker's reads (binary/protobuf, a
// client's encryption, no metadata). The SDK's converter refused to decode
// it before the workflow ran, and the run failed its first task on every
// attempt, with no result. Each workflow that takes an assignment now ends
// with a failed result and InvalidAssignmentError, naming the encoding
// where that is what is wrong; JSON sent as binary/plain bytes is read.
func TestUndecodableInputEndsWithAResult(t *testing.T) {
	w := startWorker(t)
	nested := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	calculator := `{"logical_work_id":"b1","attempt_no":1,"conversation_id":"c","turn_id":"t","context_messages":[{"role":"user","content":"x"}],` +
		`"agent_context":{"profile":"main","allowed_tool_names":["calculator"]},"tool_call":{"call_id":"c1","tool_name":"calculator","arguments":{"expression":"6*7"}}}`
	inputs := []struct {
		name, encoding, data string
		// summary is in the error; "" for a run that completes.
		summary string
	}{
		{"truncated", converter.MetadataEncodingJSON, `{"logical_work_id": "x", "tool_call": {"tool_name": `, "not valid JSON"},
		{"nested", converter.MetadataEncodingJSON, `{"logical_work_id":"n1","attempt_no":1,"conversation_id":"c","turn_id":"t","context_messages":[{"role":"user","content":"x"}],` +
			`"agent_context":{"profile":"main","allowed_tool_names":["calculator"]},"tool_call":{"call_id":"c1","tool_name":"calculator","arguments":{"expression":` + nested + `}}}`, "not valid JSON"},
		{"protobuf", converter.MetadataEncodingProto, "\x0a\x02b1", `"binary/protobuf"`},
		{"encrypted", "binary/encrypted", "\x01\x02\x03", "FENIX_CODEC_KEY"},
		{"no-encoding", "", calculator, "no encoding metadata"},
		{"bytes", converter.MetadataEncodingBinary, calculator, ""},
	}
	for _, in := range inputs {
		for _, wf := range []string{workflows.ExecuteAssignmentWorkflow, workflows.AgentTurnWorkflow, workflows.PrepareRoundWorkflow} {
			id := "bounds-undecodable-" + in.name + "-" + wf
			p := &commonpb.Payload{Metadata: map[string][]byte{}, Data: []byte(in.data)}
			if in.encoding != "" {
				p.Metadata[converter.MetadataEncoding] = []byte(in.encoding)
			}
			run, err := server.Client().ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
				ID: id, TaskQueue: w.queue, WorkflowExecutionTimeout: time.Minute}, wf, converter.NewRawValue(p))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var res struct {
				Status string            `json:"status"`
				Error  *contract.Failure `json:"error"`
			}
			err = run.Get(ctx, &res)
			cancel()
			require.NoError(t, err, "%s: no result", id)
			if in.summary == "" {
				if wf == workflows.AgentTurnWorkflow && res.Error != nil { // a turn without a model fails further on
					assert.NotEqual(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType, "%s: %s", id, res.Error.LastErrorSummary)
				} else {
					assert.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", id, res.Error)
				}
				continue
			}
			require.Equal(t, contract.StatusFailed, res.Status, id)
			require.NotNil(t, res.Error, id)
			assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType, "%s: %s", id, res.Error.LastErrorSummary)
			assert.Contains(t, res.Error.LastErrorSummary, in.summary, id)
		}
	}
}

// allowedToolNames pads names to about size bytes as a whole.
func allowedToolNames(size int, names ...string) []string {
	for i := 0; ; i++ {
		n := 0
		for _, s := range names {
			n += len(s) + 1
		}
		next := fmt.Sprintf("padding_tool_%0100d", i)
		if n+len(next)+1 > size {
			return names
		}
		names = append(names, next)
	}
}

// With regular stages every stage of every call carries the agent's
// allowed_tool_names, and the calls of a step start in one workflow task:
// 1.5 MB of names and three calls overflowed that task's 4 MB gRPC message
// (GrpcMessageTooLarge), and the task failed forever. A list over
// contract.MaxAllowedToolNamesBytes now ends the run with
// InvalidAssignmentError naming it, on every workflow that takes an
// assignment; a list at the bound with the most calls one answer may make
// (128) completes.
func TestOversizedAllowedToolNamesEndWithAResult(t *testing.T) {
	calls := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "1+1"}}
		}
		return out
	}
	raw, err := json.Marshal(map[string]any{"scripts": map[string]any{
		"three": map[string]any{"turns": []any{map[string]any{"tool_calls": calls(3)}, map[string]any{"content": "done"}}},
		"most":  map[string]any{"turns": []any{map[string]any{"tool_calls": calls(activities.MaxToolCallsPerAnswer)}, map[string]any{"content": "done"}}},
	}})
	require.NoError(t, err)
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, raw, 0o644))
	w := startWorker(t, withScripts(t, script))
	wait := func(run client.WorkflowRun, out any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		if err := run.Get(ctx, out); err != nil {
			why := lastTaskFailure(t, run.GetID(), "")
			_ = server.Client().TerminateWorkflow(context.Background(), run.GetID(), "", "test gave up")
			t.Fatalf("%s: no result: %v%s", run.GetID(), err, why)
		}
	}

	huge := allowedToolNames(1_500_000, "calculator")
	turn := agentTurnRequest(t, "three", map[string]any{
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": huge},
		"execution":     map[string]any{"stages": "regular"},
	})
	var res contract.Result
	wait(startWorkflow(t, w.queue, workflows.AgentTurnWorkflow, turn["logical_work_id"].(string), turn), &res)
	require.Equal(t, contract.StatusFailed, res.Status, errorType(res))
	assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType, errorType(res))
	assert.Contains(t, res.Error.LastErrorSummary, "agent_context.allowed_tool_names is ")

	a := assignment("bounds-names-assignment", map[string]any{"call_id": "c1", "tool_name": "calculator", "arguments": map[string]any{"expression": "1+1"}})
	a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": huge}
	res = runBounded(t, w.queue, "bounds-names-assignment", a)
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeInvalidAssignment, res.Error.ErrorType, errorType(res))

	delete(a, "tool_call")
	var round contract.PreparedRound
	wait(startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, "bounds-names-round", a), &round)
	require.Equal(t, contract.StatusFailed, round.Status)
	assert.Equal(t, fenixerr.TypeInvalidAssignment, round.Error.ErrorType)

	most := agentTurnRequest(t, "most", map[string]any{
		"agent_context": map[string]any{"profile": "main", "allowed_tool_names": allowedToolNames(contract.MaxAllowedToolNamesBytes, "calculator")},
		"execution":     map[string]any{"stages": "regular"},
	})
	wait(startWorkflow(t, w.queue, workflows.AgentTurnWorkflow, most["logical_work_id"].(string), most), &res)
	require.Equal(t, contract.StatusCompleted, res.Status, errorType(res))
	assert.Equal(t, "done", res.Output.Content)
}

// The calls of one agent step run in parallel, and their stages' results
// reach the server in one workflow task, whose gRPC message is limited to
// 4 MB: a model reading a 1 MiB file four times at once (each read within
// workspace_read's limit) failed that task with GrpcMessageTooLarge on
// every retry, and the turn never ended. The calls of a step now share
// activities.StepResultBudget: each read over its share fails with
// PayloadTooLargeError, which the model sees, and the turn goes on; reads
// within their shares succeed.
func TestParallelLargeResultsEndWithAResult(t *testing.T) {
	reads := func(n int, path string) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"tool_name": "workspace_read", "arguments": map[string]any{"path": path, "max_bytes": 1 << 20}}
		}
		return out
	}
	raw, err := json.Marshal(map[string]any{"scripts": map[string]any{
		"big":   map[string]any{"turns": []any{map[string]any{"tool_calls": reads(6, "big.txt")}, map[string]any{"content": "read big"}}},
		"share": map[string]any{"turns": []any{map[string]any{"tool_calls": reads(6, "quarter.txt")}, map[string]any{"content": "read quarters"}}},
	}})
	require.NoError(t, err)
	script := filepath.Join(t.TempDir(), "scripts.json")
	require.NoError(t, os.WriteFile(script, raw, 0o644))
	w := startWorker(t, withScripts(t, script))
	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "big.txt"), []byte(strings.Repeat("b", 1<<20)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "quarter.txt"), []byte(strings.Repeat("q", 256<<10)), 0o644))

	for _, c := range []struct {
		script, stages, answer string
		failures               int
	}{{"big", "fast", "read big", 6}, {"big", "regular", "read big", 6}, {"share", "fast", "read quarters", 0}} {
		req := agentTurnRequest(t, c.script, map[string]any{
			"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"workspace_read"}},
			"execution":     map[string]any{"stages": c.stages}})
		id := req["logical_work_id"].(string) + "-" + c.stages
		req["logical_work_id"] = id
		res := turnResult(t, w.queue, id, req, 40*time.Second)
		require.Equal(t, contract.StatusCompleted, res.Status, errorType(res))
		assert.Equal(t, c.answer, res.Output.Content)
		encoded, err := json.Marshal(res)
		require.NoError(t, err)
		assert.Equal(t, c.failures, strings.Count(string(encoded), "each call may return when the model makes several calls at once"), "%s %s", c.script, c.stages)
	}
}

// Hooks add context for the model to every call of a step, and the
// step's calls run in parallel: their stages' results reach the server in
// one workflow task, whose gRPC message is limited to 4 MB. A PreToolUse
// hook adding its 64 KiB of context to 32 parallel calls failed that task
// with GrpcMessageTooLarge on every retry and the turn never ended. The
// calls of a step now share activities.StepHookContextBudget: each call's
// hook context is cut to its share, with a marker the model sees.
func TestParallelHookContextEndsWithAResult(t *testing.T) {
	calls := make([]any, 32)
	for i := range calls {
		calls[i] = map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": fmt.Sprintf("%d + 1", i)}}
	}
	raw, err := json.Marshal(map[string]any{"scripts": map[string]any{
		"many": map[string]any{"turns": []any{map[string]any{"tool_calls": calls}, map[string]any{"content": "counted"}}},
	}})
	require.NoError(t, err)
	dir := t.TempDir()
	script := filepath.Join(dir, "scripts.json")
	require.NoError(t, os.WriteFile(script, raw, 0o644))
	// A user's hook that explains the project to the model before every
	// calculation, at length.
	hook := filepath.Join(dir, "explain.sh")
	require.NoError(t, os.WriteFile(hook, []byte(`#!/bin/sh
cat >/dev/null
context=$(head -c 65000 /dev/zero | tr '\0' 'x')
printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "%s"}}' "$context"
`), 0o755))
	settings := filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(settings, []byte(`{"hooks": {"PreToolUse": [{"matcher": "calculator", "hooks": [{"type": "command", "command": "`+hook+`"}]}]}}`), 0o644))
	w := startWorker(t, withScripts(t, script), withHooksFile(settings))

	for _, stages := range []string{"fast", "regular"} {
		req := agentTurnRequest(t, "many", map[string]any{
			"agent_context": map[string]any{"profile": "main", "allowed_tool_names": []string{"calculator"}},
			"execution":     map[string]any{"stages": stages}})
		id := req["logical_work_id"].(string) + "-hooks-" + stages
		req["logical_work_id"] = id
		res := turnResult(t, w.queue, id, req, 60*time.Second)
		require.Equal(t, contract.StatusCompleted, res.Status, errorType(res))
		assert.Equal(t, "counted", res.Output.Content, stages)
	}
}

// turnResult runs the AgentTurn req as id and waits up to limit for its
// result; a run that never ends fails the test naming why (its last
// workflow task failure) and is terminated.
func turnResult(t *testing.T, queue, id string, req map[string]any, limit time.Duration) contract.Result {
	t.Helper()
	run := startWorkflow(t, queue, workflows.AgentTurnWorkflow, id, req)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		why := lastTaskFailure(t, id, "")
		_ = server.Client().TerminateWorkflow(context.Background(), id, "", "test gave up")
		t.Fatalf("%s: no result: %v%s", id, err, why)
	}
	return res
}

// A command that takes more memory than there is ends with a result that
// says why, and the worker goes on serving: the kernel's out-of-memory
// killer takes the command (which starts with the highest oom_score_adj),
// not the worker. The test stands in for a host out of memory with a
// memory cgroup of 32 MiB, into which it moves the command's shell
// before the command asks for 256 MiB.
func TestACommandOutOfMemoryEndsWithAResult(t *testing.T) {
	cg := scarce.Memory(t, 32<<20)
	w := startWorker(t)
	run := commandRunner(w, w.workspace, "oom")
	done := make(chan contract.Result, 1)
	go func() {
		done <- run(t, "exec_command", "cat /proc/self/oom_score_adj; echo $$ > shell.pid; while [ ! -e go ]; do sleep 0.05; done; exec dd if=/dev/zero of=/dev/null bs=256M count=1")
	}()
	pidFile := filepath.Join(w.workspace, "shell.pid")
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(raw), "\n")
	}, 30*time.Second, 20*time.Millisecond, "the command started")
	pid, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(scarce.Procs(cg), pid, 0))
	require.NoError(t, os.WriteFile(filepath.Join(w.workspace, "go"), nil, 0o644))

	var res contract.Result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not end")
	}
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "1000", "the command's oom_score_adj")
	assert.Contains(t, res.Output.Content, "killed by the kernel because memory ran out")
	assert.Equal(t, "out_of_memory", res.Output.Data["reason"], "%v", res.Output.Data)

	after := run(t, "exec_command", "echo still serving")
	require.Equal(t, contract.StatusCompleted, after.Status, "%+v", after.Error)
	assert.Contains(t, after.Output.Content, "still serving")
}

// A command that fills the disk its workspace is on is stopped before the
// disk is full, and its call says why; the worker's next call runs. The
// test's workspace is a 64 MiB filesystem, of which the host keeps half
// (its reserve, 1 GiB, is more than the disk has).
func TestACommandFillingItsDiskEndsWithAResult(t *testing.T) {
	disk := scarce.Disk(t, "64m")
	w := startWorker(t, func(c *worker.Config) { c.DefaultWorkspaceRoot = disk })
	run := commandRunner(w, disk, "fill")
	res := run(t, "exec_command", `i=0; while [ $i -lt 60 ]; do head -c 1048576 /dev/zero >> fill || exit 3; i=$((i+1)); done; echo filled`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "disk_reserve", res.Output.Data["reason"], "%v", res.Output.Data)
	assert.Contains(t, res.Output.Content, "the disk it wrote to")
	assert.NotContains(t, res.Output.Content, "filled")

	after := run(t, "exec_command", "rm fill && echo still serving")
	require.Equal(t, contract.StatusCompleted, after.Status, "%+v", after.Error)
	assert.Contains(t, after.Output.Content, "still serving")
}

// An argument of 120,000 wrong elements (240 KB, under the argument
// bound) failed the schema once per element, and the ValidationError
// listed every failure: the workflow task recording it was larger than
// the server takes (GRPC_MESSAGE_TOO_LARGE), failed on every attempt,
// and the run never ended. It names the first failures and counts the
// rest, and the run ends at once.
func TestAnArgumentWithCountlessSchemaErrorsEndsWithAResult(t *testing.T) {
	type pathsArgs struct {
		Paths []string `json:"paths"`
	}
	paths := tools.Define(tools.Spec{Name: "test_read_many", Timeout: 10 * time.Second},
		func(_ context.Context, _ *tools.Env, a pathsArgs) (struct{}, error) { return struct{}{}, nil },
		func(pathsArgs, struct{}) tools.Projection { return tools.Projection{} })
	w := startWorker(t, withTools(paths))
	many := make([]any, 120000)
	for i := range many {
		many[i] = 1
	}
	started := time.Now()
	res, _ := runAssignment(t, w.queue, assignment("many-errors", map[string]any{"call_id": "many", "tool_name": "test_read_many",
		"arguments": map[string]any{"paths": many}}, "test_read_many"))
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeValidation, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, "at /paths/0: ")
	assert.Contains(t, res.Error.LastErrorSummary, "and 119980 more")
	assert.Less(t, len(res.Error.LastErrorSummary), 16<<10)
	assert.Less(t, time.Since(started), 30*time.Second)
}

// A run whose IDs hold characters outside printable ASCII (a kernel's
// conversation "conv-ü 🚀", a tab) ends with its result: the Go SDK puts
// the workflow ID in a gRPC header, which gRPC refuses for such bytes, so
// every workflow task of the run failed and it never ended; the worker's
// connection now leaves the header out where it cannot be sent.
func TestARunWithNonASCIIIDsEndsWithItsResult(t *testing.T) {
	w := startWorker(t, withScripts(t, filepath.Join(repoRoot, "examples", "agent_scripts.json")))
	req := agentTurnRequest(t, "main", map[string]any{"conversation_id": "conv-ü 🚀", "turn_id": "turn\t1"})
	req["logical_work_id"] = "agent-turn-conv-ü 🚀-turn\t1-" + w.queue
	res := runTurn(t, w.queue, req)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	a := assignment("work/ü 🚀", map[string]any{"call_id": "call-ü", "tool_name": "calculator", "arguments": map[string]any{"expression": "6 * 7"}})
	a["conversation_id"] = "conv-ü 🚀"
	out, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, out.Status, "%+v", out.Error)
	assert.Contains(t, out.Output.Content, "42")
}

// Tool arguments nested 9,000 objects deep (60 KB, under every size
// limit) end the run with a typed error: copying them into the failure
// payload encoded each level's subtree again, seconds of workflow code,
// so the workflow task failed as a deadlock, again and again, and the run
// never ended.
func TestDeeplyNestedArgumentsEndWithAResult(t *testing.T) {
	w := startWorker(t)
	var deep any = 1
	for range 9000 {
		deep = map[string]any{"a": deep}
	}
	a := assignment("deep-args", map[string]any{"call_id": "call-deep", "tool_name": "exec_command",
		"arguments": map[string]any{"command_line": "echo deep", "x": deep}}, "exec_command")
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, "bounds-deep-"+w.queue, a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		why := lastTaskFailure(t, run.GetID(), run.GetRunID())
		_ = server.Client().TerminateWorkflow(context.Background(), run.GetID(), run.GetRunID(), "test gave up")
		t.Fatalf("no result: %v%s", err, why)
	}
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeValidation, res.Error.ErrorType, "%+v", res.Error)
}
