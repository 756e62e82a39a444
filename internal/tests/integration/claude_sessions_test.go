package integration

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/worker"
)

// sessionProject copies the session-project fixture: a .claude/settings.json
// whose SessionStart, SessionEnd, UserPromptSubmit, SubagentStart,
// SubagentStop and PreToolUse hooks (our own python3 and bash scripts)
// append their stdin JSON to .claude/hook-events.jsonl.
func sessionProject(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"python3", "flock"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; the session fixtures need it", tool)
		}
	}
	project := filepath.Join(t.TempDir(), "session-project")
	require.NoError(t, os.CopyFS(project, os.DirFS(filepath.Join(repoRoot, "hooks", "claudecode", "testdata", "session-project"))))
	require.NoError(t, os.WriteFile(filepath.Join(project, "README.md"), []byte("# sessions\n"), 0o644))
	return project
}

// hookEvents reads the project's hook log.
func hookEvents(t *testing.T, project string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(project, ".claude", "hook-events.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		out = append(out, ev)
	}
	return out
}

func eventsNamed(events []map[string]any, name string) []map[string]any {
	var out []map[string]any
	for _, ev := range events {
		if ev["hook_event_name"] == name {
			out = append(out, ev)
		}
	}
	return out
}

func sessionWorker(t *testing.T, project string, opts ...workerOption) *testWorker {
	return startWorker(t, append([]workerOption{func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	}}, opts...)...)
}

func runInConversation(t *testing.T, w *testWorker, project, workID, conversation string) contract.Result {
	t.Helper()
	a := assignment(workID, map[string]any{"call_id": "call-" + workID, "tool_name": "exec_command", "arguments": map[string]any{"command_line": "true"}},
		"exec_command")
	a["conversation_id"], a["workspace_root"] = conversation, project
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	return res
}

// Issue 17 point 3: two ExecuteAssignments of one conversation fire the
// project's SessionStart once (startup), another conversation its own,
// neither fires SessionEnd at the end of a call; the kernel's end (the
// starter) fires SessionEnd once with prompt_input_exit.
func TestClaudeSessionStartOncePerConversation(t *testing.T) {
	project := sessionProject(t)
	w := sessionWorker(t, project)

	runInConversation(t, w, project, "a1", "it-sess-a")
	res := runInConversation(t, w, project, "a2", "it-sess-a")
	start, _ := traceEntry(res, "session_start")
	assert.Equal(t, true, start.Get("session_cached"), "the second call of the conversation needs no round trip: %v", start.Fields)
	runInConversation(t, w, project, "b1", "it-sess-b")

	events := hookEvents(t, project)
	starts := eventsNamed(events, "SessionStart")
	require.Len(t, starts, 2, "one SessionStart per conversation: %v", starts)
	assert.Equal(t, "it-sess-a", starts[0]["session_id"])
	assert.Equal(t, "startup", starts[0]["source"])
	assert.Equal(t, "it-sess-b", starts[1]["session_id"])
	assert.Equal(t, "startup", starts[1]["source"])
	assert.Empty(t, eventsNamed(events, "SessionEnd"), "a call's end is not the session's")
	pre := eventsNamed(events, "PreToolUse")
	require.Len(t, pre, 3)
	assert.Equal(t, "it-sess-a", pre[1]["session_id"], "tool events carry the conversation as session_id")

	out, code := runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "session", "end", "-conversation", "it-sess-a")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Ended the session of conversation it-sess-a")
	ends := eventsNamed(hookEvents(t, project), "SessionEnd")
	require.Len(t, ends, 1, "SessionEnd once, when the kernel ends the session")
	assert.Equal(t, "it-sess-a", ends[0]["session_id"])
	assert.Equal(t, "prompt_input_exit", ends[0]["reason"])

	out, code = runBinary(t, "starter", []string{"FENIX_TASK_QUEUE=" + w.queue}, "session", "end", "-conversation", "it-sess-a")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Nothing to end")
	assert.Len(t, eventsNamed(hookEvents(t, project), "SessionEnd"), 1)
}

// A conversation left idle past the session idle timeout fires SessionEnd
// (reason other); going on with it fires SessionStart "resume".
func TestClaudeSessionIdleExpiry(t *testing.T) {
	project := sessionProject(t)
	w := sessionWorker(t, project, func(c *worker.Config) { c.SessionIdleTimeout = 2 * time.Second },
		withScripts(t, filepath.Join(repoRoot, "examples", "agent_scripts.json")))

	res := runTurn(t, w.queue, agentTurnRequest(t, "main", map[string]any{"conversation_id": "it-sess-idle", "workspace_root": project}))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Eventually(t, func() bool { return len(eventsNamed(hookEvents(t, project), "SessionEnd")) > 0 }, 30*time.Second, 200*time.Millisecond,
		"SessionEnd after the idle timeout")
	ends := eventsNamed(hookEvents(t, project), "SessionEnd")
	require.Len(t, ends, 1)
	assert.Equal(t, "other", ends[0]["reason"])
	assert.Equal(t, "it-sess-idle", ends[0]["session_id"])
	// The session's transcript, as Claude Code's SessionEnd gets it (it
	// was an empty file of the session's own), its lines naming the
	// conversation as their sessionId.
	path, _ := ends[0]["transcript_path"].(string)
	transcript, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(transcript), `"sessionId":"it-sess-idle"`)
	assert.Contains(t, string(transcript), `"type":"assistant"`)

	runInConversation(t, w, project, "i2", "it-sess-idle")
	starts := eventsNamed(hookEvents(t, project), "SessionStart")
	require.Len(t, starts, 2)
	assert.Equal(t, "startup", starts[0]["source"])
	assert.Equal(t, "resume", starts[1]["source"])
}

// Issue 17 point 4: an AgentTurn with a subagent under the project's hooks.
// The parent fires SessionStart and UserPromptSubmit; the subagent fires
// neither (nor SessionEnd); SubagentStart and SubagentStop carry the
// parent's session_id and transcript_path with the subagent's agent_id,
// agent_type and (SubagentStop) agent_transcript_path; the subagent's
// PreToolUse carries the parent's session_id and its agent_id.
func TestClaudeSessionSubagent(t *testing.T) {
	project := sessionProject(t)
	w := sessionWorker(t, project, withScripts(t, filepath.Join(repoRoot, "examples", "agent_scripts.json")))
	res := runTurn(t, w.queue, agentTurnRequest(t, "delegating", map[string]any{
		"conversation_id": "it-sess-sub", "workspace_root": project,
	}))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	childID, _ := findTraceEntry(res.Trace, "subagent").Get("workflow_id").(string)
	require.NotEmpty(t, childID)

	events := hookEvents(t, project)
	starts := eventsNamed(events, "SessionStart")
	require.Len(t, starts, 1, "no SessionStart from the subagent: %v", starts)
	assert.Equal(t, "it-sess-sub", starts[0]["session_id"])
	parentTranscript, _ := starts[0]["transcript_path"].(string)
	require.NotEmpty(t, parentTranscript)
	assert.Len(t, eventsNamed(events, "UserPromptSubmit"), 1, "the subagent's task is not a user prompt")
	assert.Empty(t, eventsNamed(events, "SessionEnd"))

	subStarts := eventsNamed(events, "SubagentStart")
	require.Len(t, subStarts, 1)
	assert.Equal(t, "it-sess-sub", subStarts[0]["session_id"])
	assert.Equal(t, parentTranscript, subStarts[0]["transcript_path"])
	assert.Equal(t, childID, subStarts[0]["agent_id"])
	assert.Equal(t, "researcher", subStarts[0]["agent_type"])

	subStops := eventsNamed(events, "SubagentStop")
	require.Len(t, subStops, 1)
	stop := subStops[0]
	assert.Equal(t, "it-sess-sub", stop["session_id"])
	assert.Equal(t, parentTranscript, stop["transcript_path"])
	assert.Equal(t, childID, stop["agent_id"])
	assert.Equal(t, "researcher", stop["agent_type"])
	childTranscript, _ := stop["agent_transcript_path"].(string)
	require.NotEmpty(t, childTranscript)
	assert.NotEqual(t, parentTranscript, childTranscript)
	raw, err := os.ReadFile(childTranscript)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "2 ** 10", "the subagent's transcript holds its task")

	var childPre map[string]any
	for _, ev := range eventsNamed(events, "PreToolUse") {
		assert.Equal(t, "it-sess-sub", ev["session_id"], "%v", ev)
		if ev["agent_id"] == childID {
			childPre = ev
		}
	}
	require.NotNil(t, childPre, "the subagent's PreToolUse carries its agent_id")
	assert.Equal(t, "researcher", childPre["agent_type"])
	assert.Equal(t, parentTranscript, childPre["transcript_path"])
}

// The session lives in Temporal, not in a worker: a worker restarted on
// the same task queue (its cache empty) asks the session, which has
// started, and fires no second SessionStart (see README, Sessions).
func TestClaudeSessionSurvivesWorkerRestart(t *testing.T) {
	project := sessionProject(t)
	queue := newTaskQueue(t)
	start := func() *testWorker {
		w, err := worker.New(server.Client(), worker.Config{TaskQueue: queue, DataDir: t.TempDir(), DefaultWorkspaceRoot: project,
			HookSources: []string{project}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		require.NoError(t, err)
		require.NoError(t, w.Start())
		return &testWorker{Worker: w, queue: queue, workspace: project}
	}
	first := start()
	runInConversation(t, first, project, "r1", "it-sess-restart")
	first.Stop()

	second := start()
	defer second.Stop()
	res := runInConversation(t, second, project, "r2", "it-sess-restart")
	claim, _ := traceEntry(res, "session_start")
	assert.Equal(t, false, claim.Get("session_cached"), "the new worker asked the session: %v", claim.Fields)
	starts := eventsNamed(hookEvents(t, project), "SessionStart")
	require.Len(t, starts, 1, "no SessionStart after a worker restart: %v", starts)
	assert.Equal(t, "startup", starts[0]["source"])
	verifyQueue(t, queue)
}
