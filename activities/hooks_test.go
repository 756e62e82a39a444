package activities

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
)

// hookActivities has one command hook per event that copies its stdin and
// the transcript it was given into the workspace.
func hookActivities(t *testing.T, settings string) (*Activities, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := claudecode.LoadSource(path, claudecode.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := hooks.NewRegistry()
	r.AddSource(src.Registered())
	store, err := contextstore.NewFS(filepath.Join(dir, "contexts"))
	if err != nil {
		t.Fatal(err)
	}
	transcripts, err := claudecode.NewTranscriptWriter(filepath.Join(dir, "transcripts"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	return &Activities{Hooks: r, Contexts: store, Transcripts: transcripts, DefaultWorkspaceRoot: ws}, ws
}

const copyStdin = `tee "$PWD/stdin.json" | python3 -c 'import json, shutil, sys; shutil.copy(json.load(sys.stdin)["transcript_path"], "transcript.jsonl")'`

// oneHook is a Claude Code settings file with one command hook.
func oneHook(event, command string) string {
	raw, _ := json.Marshal(map[string]any{"fenixDialect": "claude", "hooks": map[string]any{
		event: []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command}}}}}})
	return string(raw)
}

// The worker writes the transcript a hook reads through transcript_path,
// from a context-store reference or inline messages, before the hook runs.
func TestHookStagesMaterializeTheTranscript(t *testing.T) {
	a, ws := hookActivities(t, oneHook("Stop", copyStdin))
	ctx := context.Background()
	msgs := []contract.Message{{Role: contract.RoleUser, Content: "What is 6 * 7?"}, {Role: contract.RoleAssistant, Content: "42"}}
	ref, err := contextstore.Put(ctx, a.Contexts, msgs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.RunStopHooks(ctx, hooks.StopEvent{Session: hooks.Session{SessionID: "agent-turn-1", Transcript: &ref}, LastAssistantMessage: "42"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Continue || len(res.Result.Decisions) != 1 || res.Result.Decisions[0].Error != "" {
		t.Fatalf("result %+v", res.Result)
	}
	var stdin map[string]any
	raw, err := os.ReadFile(filepath.Join(ws, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &stdin); err != nil {
		t.Fatal(err)
	}
	if stdin["permission_mode"] != "default" || stdin["cwd"] != ws || stdin["last_assistant_message"] != "42" || stdin["stop_hook_active"] != false {
		t.Errorf("stdin = %s", raw)
	}
	if _, leaked := stdin["transcript"]; leaked {
		t.Error("the message set reached the hook")
	}
	transcript, err := os.ReadFile(filepath.Join(ws, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(transcript)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "What is 6 * 7?") || !strings.Contains(lines[1], `"type":"assistant"`) {
		t.Errorf("transcript = %s", transcript)
	}
	path, _ := stdin["transcript_path"].(string)
	if !strings.HasPrefix(path, a.Transcripts.Dir) {
		t.Errorf("transcript_path %q is not under the worker's data directory", path)
	}
}

// Without a transcript the file still exists, empty, so transcript-reading
// scripts do not crash; stages whose hooks do not read it skip the write.
func TestHookStagesWithoutTranscript(t *testing.T) {
	a, ws := hookActivities(t, oneHook("PreToolUse", copyStdin))
	res, err := a.RunPreToolUseHooks(context.Background(), hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "assignment-1"}, ToolName: "calculator", CallID: "c"})
	if err != nil || res.Result.Decisions[0].Error != "" {
		t.Fatalf("%+v, %v", res, err)
	}
	if info, err := os.Stat(filepath.Join(ws, "transcript.jsonl")); err != nil || info.Size() != 0 {
		t.Errorf("transcript copy: %v, %v", info, err)
	}
	if a.hookRegistry().WantsTranscript(hooks.EventSessionStart) {
		t.Error("no hook reads the transcript on SessionStart")
	}
}

func TestNewHookStagesReportContextAndHalt(t *testing.T) {
	a, _ := hookActivities(t, `{"fenixDialect": "claude", "hooks": {
	  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'the repo uses make'"}]}],
	  "PostToolBatch": [{"hooks": [{"type": "command", "command": "echo '{\"continue\": false, \"stopReason\": \"enough for today\"}'"}]}],
	  "PermissionDenied": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionDenied\", \"retry\": true}}'"}]}],
	  "Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command", "command": "cat > \"$PWD/notified.json\""}]}]
	}}`)
	ctx := context.Background()
	prompt, err := a.RunUserPromptSubmitHooks(ctx, hooks.UserPromptSubmitEvent{Session: hooks.Session{SessionID: "s"}, Prompt: "build it"})
	if err != nil || prompt.Result.AdditionalContext != "the repo uses make" || prompt.Trace.Get("additional_context") != "the repo uses make" {
		t.Errorf("UserPromptSubmit: %+v, %v", prompt, err)
	}
	batch, err := a.RunPostToolBatchHooks(ctx, hooks.PostToolBatchEvent{Session: hooks.Session{SessionID: "s"}, Calls: []hooks.BatchCall{{ToolName: "calculator", CallID: "c", Content: "4"}}})
	if err != nil || batch.Result.Halt == nil || batch.Trace.Get("halt") != "enough for today" {
		t.Errorf("PostToolBatch: %+v, %v", batch, err)
	}
	denied, err := a.RunPermissionDeniedHooks(ctx, hooks.PermissionDeniedEvent{Session: hooks.Session{SessionID: "s"}, ToolName: "exec_command", Reason: "no"})
	if err != nil || !denied.Result.Retry {
		t.Errorf("PermissionDenied: %+v, %v", denied, err)
	}
	note := hooks.NotificationEvent{Session: hooks.Session{SessionID: "s"}, NotificationType: hooks.NotificationPermissionPrompt, Message: "approve?"}
	sum, err := a.RunLifecycleHooks(ctx, LifecycleHooksInput{Notification: &note})
	if err != nil || len(sum.Summary.Decisions) != 1 || sum.Summary.Event != hooks.EventNotification {
		t.Errorf("Notification: %+v, %v", sum, err)
	}
}

// The scripts loaded hooks run are protected in every workspace a tool
// opens, beside .claude/.
func TestOpenWorkspaceProtectsHookScripts(t *testing.T) {
	a, ws := hookActivities(t, `{"fenixDialect": "claude", "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "python3 scripts/guard.py"}]}]}}`)
	w, err := a.openWorkspace(ws, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"scripts/guard.py", ".claude/settings.json"} {
		if _, err := w.WriteFile(p, []byte("import sys; sys.exit(0)"), 0); !errors.Is(err, fenixerr.ErrWorkspaceEscape) {
			t.Errorf("WriteFile(%q) = %v, want it refused", p, err)
		}
	}
	if _, err := w.WriteFile("scripts/other.py", []byte("x"), 0); err != nil {
		t.Errorf("an unreferenced script: %v", err)
	}
}

// The worker's further protected paths (its MCP configurations) are
// protected in every workspace a tool opens: inside it by path, outside
// it through a hard link.
func TestOpenWorkspaceProtectsConfiguredPaths(t *testing.T) {
	a, ws := hookActivities(t, `{"hooks": {}}`)
	outside := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(outside, []byte(`{"mcpServers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(ws, "servers.json")); err != nil {
		t.Fatal(err)
	}
	a.Protected = []string{filepath.Join(ws, "conf", "mcp.json"), outside}
	w, err := a.openWorkspace(ws, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"conf/mcp.json", "servers.json", ".mcp.json"} {
		if _, err := w.WriteFile(p, []byte(`{"mcpServers":{"x":{"command":"sh"}}}`), 0); !errors.Is(err, fenixerr.ErrWorkspaceEscape) || fenixerr.As(err).Code != "protected_path" {
			t.Errorf("WriteFile(%q) = %v, want protected_path", p, err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != `{"mcpServers":{}}` {
		t.Errorf("the outside configuration changed to %q", b)
	}
}

// countingStore counts the context-store reads and writes.
type countingStore struct {
	contextstore.Store
	gets, puts int
}

func (s *countingStore) Put(ctx context.Context, data []byte) (string, error) {
	s.puts++
	return s.Store.Put(ctx, data)
}

func (s *countingStore) Get(ctx context.Context, ref string) ([]byte, error) {
	s.gets++
	return s.Store.Get(ctx, ref)
}

// Every hook event of a step carries the same transcript reference; the
// file written for the first is already right for the rest, so the
// transcript is read (and rendered and redacted) once, not once per event.
// A new reference, or a file that went away, is written again.
func TestHookStagesWriteAnUnchangedTranscriptOnce(t *testing.T) {
	a, _ := hookActivities(t, oneHook("PreToolUse", "cat >/dev/null"))
	store := &countingStore{Store: a.Contexts}
	a.Contexts = store
	ctx := context.Background()
	put := func(msgs ...contract.Message) contract.MessageSet {
		set, err := contextstore.Put(ctx, store, msgs)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	first := put(contract.Message{Role: contract.RoleUser, Content: "list the files"})
	run := func(set contract.MessageSet) string {
		t.Helper()
		res, err := a.RunPreToolUseHooks(ctx, hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "turn-1", Transcript: &set}, ToolName: "calculator", CallID: "c"})
		if err != nil || len(res.Result.Decisions) != 1 || res.Result.Decisions[0].Error != "" {
			t.Fatalf("%+v, %v", res, err)
		}
		return a.Transcripts.PathFor("turn-1")
	}
	run(first)
	path := run(first)
	if store.gets != 1 {
		t.Errorf("two events with the same transcript read it %d times, want 1", store.gets)
	}
	second := put(contract.Message{Role: contract.RoleUser, Content: "list the files"}, contract.Message{Role: contract.RoleAssistant, Content: "README.md"})
	run(second)
	if store.gets != 2 {
		t.Errorf("a new transcript: %d reads, want 2", store.gets)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "README.md") {
		t.Errorf("the file does not hold the new transcript: %s, %v", data, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	run(second)
	if _, err := os.Stat(path); err != nil || store.gets != 3 {
		t.Errorf("a removed file is written again: %v, %d reads, want 3", err, store.gets)
	}
	run(first)
	if data, err := os.ReadFile(path); err != nil || strings.Contains(string(data), "README.md") || store.gets != 4 {
		t.Errorf("back to the first transcript: %d reads, want 4; file %s, %v", store.gets, data, err)
	}
}
