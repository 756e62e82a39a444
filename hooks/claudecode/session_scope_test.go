package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// logScript appends its stdin JSON, one line, to log.
func logScript(t *testing.T, dir, log string) string {
	t.Helper()
	return writeScript(t, dir, "log.sh", `cat >> '`+log+`'; echo >> '`+log+`'`)
}

func readLog(t *testing.T, log string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestSessionScopeSplitsDialects(t *testing.T) {
	dir := t.TempDir()
	claudeLog, fenixLog := filepath.Join(dir, "claude.jsonl"), filepath.Join(dir, "fenix.jsonl")
	claude := newCommandHook(t, cmdHook{Event: "SessionStart", Command: logScript(t, t.TempDir(), claudeLog), Dialect: DialectClaude, Name: "claude"})
	fenix := newCommandHook(t, cmdHook{Event: "SessionStart", Command: logScript(t, t.TempDir(), fenixLog), Dialect: DialectFenix, Name: "fenix"})
	r := hooks.NewRegistry()
	r.Add(claude)
	r.Add(fenix)
	s := hooks.Session{SessionID: "assignment-a-1", ConversationID: "conv-1", ConversationSessionID: "conv-1", WorkspaceRoot: dir}

	cases := []struct {
		scope             hooks.SessionScope
		wantClaude, wantF int
	}{
		{hooks.ScopeRun, 0, 1},
		{hooks.ScopeConversation, 1, 1},
		{hooks.ScopeAll, 2, 2},
	}
	for _, c := range cases {
		sum := r.RunSessionStart(context.Background(), hooks.SessionStartEvent{Session: s, Source: hooks.SourceStartup, Scope: c.scope})
		if got := len(readLog(t, claudeLog)); got != c.wantClaude {
			t.Errorf("after scope %q: claude hook ran %d times in all, want %d (decisions %+v)", c.scope, got, c.wantClaude, sum.Decisions)
		}
		if got := len(readLog(t, fenixLog)); got != c.wantF {
			t.Errorf("after scope %q: fenix hook ran %d times in all, want %d", c.scope, got, c.wantF)
		}
	}
	got := readLog(t, claudeLog)[0]
	if got["session_id"] != "conv-1" || got["source"] != "startup" {
		t.Errorf("claude SessionStart input = %v, want session_id conv-1 and source startup", got)
	}
}

func TestSessionEndReason(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "end.jsonl")
	h := newCommandHook(t, cmdHook{Event: "SessionEnd", Command: logScript(t, dir, log), Dialect: DialectClaude})
	r := hooks.NewRegistry()
	r.Add(h)
	s := hooks.Session{SessionID: "fenix-session-conv-1", ConversationSessionID: "conv-1", WorkspaceRoot: dir}
	r.RunSessionStop(context.Background(), hooks.SessionStopEvent{Session: s, StopReason: "completed", Scope: hooks.ScopeRun})
	r.RunSessionStop(context.Background(), hooks.SessionStopEvent{Session: s, StopReason: "completed", Reason: hooks.EndReasonPromptInputExit, Scope: hooks.ScopeConversation})
	got := readLog(t, log)
	if len(got) != 1 {
		t.Fatalf("SessionEnd ran %d times, want once (the run-scoped stop is not for Claude hooks)", len(got))
	}
	if got[0]["reason"] != "prompt_input_exit" || got[0]["session_id"] != "conv-1" {
		t.Errorf("SessionEnd input = %v, want reason prompt_input_exit and session_id conv-1", got[0])
	}
}

func TestSubagentEventsCarryParentSession(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "sub.jsonl")
	script := logScript(t, dir, log)
	stop := newCommandHook(t, cmdHook{Event: "SubagentStop", Command: script, Dialect: DialectClaude})
	pre := newCommandHook(t, cmdHook{Event: "PreToolUse", Command: script, Dialect: DialectClaude})
	prompt := newCommandHook(t, cmdHook{Event: "UserPromptSubmit", Command: script, Dialect: DialectClaude})
	r := hooks.NewRegistry()
	r.Add(stop)
	r.Add(pre)
	r.Add(prompt)
	child := hooks.Session{SessionID: "subagent-w-1-call-1", ConversationSessionID: "conv-1", IsSubagent: true, Profile: "researcher",
		TranscriptPath: "/t/child.jsonl", WorkspaceRoot: dir, Parent: &hooks.ParentSession{SessionID: "agent-turn-conv-1-t1", TranscriptPath: "/t/parent.jsonl"}}
	ctx := context.Background()
	r.RunUserPromptSubmit(ctx, hooks.UserPromptSubmitEvent{Session: child, Prompt: "task"})
	r.RunPreToolUse(ctx, hooks.PreToolUseEvent{Session: child, ToolName: "exec_command", CallID: "c1", ToolInput: map[string]any{"command": "true"}})
	r.RunStop(ctx, hooks.StopEvent{Session: child, LastAssistantMessage: "done"})
	got := readLog(t, log)
	if len(got) != 2 {
		t.Fatalf("hooks ran %d times, want 2 (PreToolUse, SubagentStop; no UserPromptSubmit in a subagent): %v", len(got), got)
	}
	for _, in := range got {
		if in["session_id"] != "conv-1" || in["transcript_path"] != "/t/parent.jsonl" || in["agent_id"] != "subagent-w-1-call-1" || in["agent_type"] != "researcher" {
			t.Errorf("%v: want the parent's session_id and transcript_path with the subagent's agent_id and agent_type", in)
		}
	}
	if stop := got[1]; stop["hook_event_name"] != "SubagentStop" || stop["agent_transcript_path"] != "/t/child.jsonl" {
		t.Errorf("SubagentStop input = %v, want agent_transcript_path /t/child.jsonl", stop)
	}
}

func TestNeedsConversationSession(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		event   string
		dialect Dialect
		want    bool
	}{
		{"claude SessionEnd", "SessionEnd", DialectClaude, true},
		{"claude SessionStart", "SessionStart", DialectClaude, true},
		{"claude PreToolUse", "PreToolUse", DialectClaude, false},
		{"fenix SessionEnd", "SessionEnd", DialectFenix, false},
	} {
		r := hooks.NewRegistry()
		r.Add(newCommandHook(t, cmdHook{Event: tc.event, Command: "true", Dialect: tc.dialect, Dir: dir}))
		if got := r.NeedsConversationSession(); got != tc.want {
			t.Errorf("%s: NeedsConversationSession = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A lean review (fenix-shape 6) keeps SessionStart for a project whose
// only session hook is a Claude SessionEnd (the run must claim the
// session), and leaves the run's SessionStop out for it.
func TestSubscribedInConversation(t *testing.T) {
	dir := t.TempDir()
	evs := []hooks.Event{hooks.EventSessionStart, hooks.EventPreToolUse, hooks.EventSessionStop}
	r := hooks.NewRegistry()
	r.Add(newCommandHook(t, cmdHook{Event: "SessionEnd", Command: "true", Dialect: DialectClaude, Dir: dir}))
	if got := r.Subscribed("", "exec_command", evs...); len(got) != 1 || got[0] != hooks.EventSessionStop {
		t.Errorf("Subscribed = %v, want [session_stop]", got)
	}
	if got := r.SubscribedInConversation("", "exec_command", evs...); len(got) != 1 || got[0] != hooks.EventSessionStart {
		t.Errorf("SubscribedInConversation = %v, want [session_start]", got)
	}
	r.Add(newCommandHook(t, cmdHook{Event: "SessionEnd", Command: "true", Dialect: DialectFenix, Dir: dir, Name: "fenix-end"}))
	r.Add(newCommandHook(t, cmdHook{Event: "PreToolUse", Command: "true", Dialect: DialectClaude, Dir: dir}))
	got := r.SubscribedInConversation("", "exec_command", evs...)
	if len(got) != 3 || got[0] != hooks.EventSessionStart || got[1] != hooks.EventPreToolUse || got[2] != hooks.EventSessionStop {
		t.Errorf("with a Fenix SessionEnd and a PreToolUse hook: %v, want all three in order", got)
	}
}

// A lean turn (fenix-shape 9) keeps StepComplete for a project whose only
// session hook is a Claude SessionStart: each step's stage keeps the
// conversation's session from idling out. Without such a hook it is idle.
func TestSubscribedInConversationKeepsStepCompleteToTouchTheSession(t *testing.T) {
	dir := t.TempDir()
	evs := []hooks.Event{hooks.EventUserPromptSubmit, hooks.EventStepComplete, hooks.EventStop, hooks.EventSessionStop}
	r := hooks.NewRegistry()
	r.Add(newCommandHook(t, cmdHook{Event: "Stop", Command: "true", Dialect: DialectClaude, Dir: dir}))
	if got := r.SubscribedInConversation("", "", evs...); len(got) != 1 || got[0] != hooks.EventStop {
		t.Errorf("with only a Stop hook: %v, want [stop]", got)
	}
	r.Add(newCommandHook(t, cmdHook{Event: "SessionStart", Command: "true", Dialect: DialectClaude, Dir: dir}))
	if got := r.SubscribedInConversation("", "", evs...); len(got) != 2 || got[0] != hooks.EventStepComplete || got[1] != hooks.EventStop {
		t.Errorf("with a Claude SessionStart hook: %v, want [step_complete stop]", got)
	}
	if got := r.Subscribed("", "", evs...); len(got) != 1 || got[0] != hooks.EventStop {
		t.Errorf("outside a conversation: %v, want [stop]", got)
	}
}
