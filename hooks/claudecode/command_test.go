package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/hooks"
)

// writeScript writes an executable shell script into dir and returns its
// path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// cmdHook is the test shorthand for a command hook's configuration.
type cmdHook struct {
	Event, Matcher, If, Command, Name, Dir string
	Timeout                                time.Duration
	FailClosed                             bool
	Dialect                                Dialect
}

func newCommandHook(t *testing.T, c cmdHook) *ExternalHook {
	t.Helper()
	if c.Event == "" {
		c.Event = "PreToolUse"
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	h, err := NewCommandHook(CommandHookConfig{Command: c.Command, ExternalHookConfig: ExternalHookConfig{
		Event: c.Event, Matcher: c.Matcher, If: c.If, Timeout: c.Timeout, FailClosed: c.FailClosed,
		Name: c.Name, Dialect: c.Dialect, Paths: HookPaths{Dir: c.Dir}}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func commandPreEvent(workspace string) hooks.PreToolUseEvent {
	return hooks.PreToolUseEvent{
		Session:   hooks.Session{SessionID: "wf-1", RunID: "run-1", WorkspaceRoot: workspace},
		ToolName:  "exec_command",
		CallID:    "call-1",
		ToolInput: map[string]any{"command": "ls"},
	}
}

func TestCommandHookAllow(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "allow.sh", `cat > "$PWD/stdin.json"
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"fine"}}'`)
	h := newCommandHook(t, cmdHook{Command: script})

	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	if err != nil || action.Kind != hooks.KindAllow || action.Reason != "fine" {
		t.Fatalf("action = %+v, err = %v, want an explicit allow with its reason", action, err)
	}
	// The event arrives on stdin in Claude Code's field names, and the
	// command runs in the workspace.
	raw, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatalf("the hook did not run in the workspace: %v", err)
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatalf("stdin %s: %v", raw, err)
	}
	want := map[string]any{
		"session_id": "wf-1", "hook_event_name": "PreToolUse", "tool_name": "exec_command",
		"tool_use_id": "call-1", "cwd": dir, "run_id": "run-1",
	}
	for k, v := range want {
		if in[k] != v {
			t.Errorf("stdin %s = %v, want %v", k, in[k], v)
		}
	}
	if ti, _ := in["tool_input"].(map[string]any); ti["command"] != "ls" {
		t.Errorf("stdin tool_input = %v", in["tool_input"])
	}
}

func TestCommandHookEmptyAndPlainOutputContinue(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty.sh": "exit 0",
		"plain.sh": "echo 'looks fine to me'",
	} {
		h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, name, body), FailClosed: true})
		action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
		if err != nil || action.Kind != hooks.KindContinue {
			t.Errorf("%s: action = %+v, err = %v, want continue", name, action, err)
		}
	}
}

func TestCommandHookBlockViaExit2(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "guard.sh", `echo "rm is forbidden here" >&2; exit 2`)})
	r := hooks.NewRegistry()
	r.Add(h)
	res := r.RunPreToolUse(context.Background(), commandPreEvent(dir))
	if !res.Blocked() || res.Action.Reason != "rm is forbidden here" {
		t.Fatalf("result = %+v, want a block with stderr as the reason", res)
	}
	if res.Decisions[0].Error != "" {
		t.Errorf("exit 2 is a decision, not a failure: %+v", res.Decisions[0])
	}
}

func TestCommandHookDenyViaJSON(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "deny.sh",
		`echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"writes outside src/"}}'`)})
	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	if err != nil || action.Kind != hooks.KindBlock || action.Reason != "writes outside src/" {
		t.Fatalf("action = %+v, err = %v", action, err)
	}
}

func TestCommandHookTopLevelDecisionBlock(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "legacy.sh", `echo '{"decision":"block","reason":"legacy says no"}'`)})
	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	if err != nil || action.Kind != hooks.KindBlock || action.Reason != "legacy says no" {
		t.Fatalf("action = %+v, err = %v", action, err)
	}
}

func TestCommandHookAskRequiresPermission(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "ask.sh",
		`echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"network access"}}'`)})
	r := hooks.NewRegistry()
	r.Add(h)
	res := r.RunPreToolUse(context.Background(), commandPreEvent(dir))
	if !res.NeedsPermission() || res.PermissionRequired.Permission != "network access" || res.PermissionRequired.ToolName != "exec_command" {
		t.Fatalf("result = %+v, want permission_required", res)
	}
}

func TestCommandHookUpdatedInputAndContext(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "rewrite.sh",
		`echo '{"additionalContext":"top","hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls -la","timeout":5},"additionalContext":"repo uses make"}}'`)})
	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	if err != nil {
		t.Fatal(err)
	}
	if action.Kind != hooks.KindAllow || action.UpdatedArgs["command"] != "ls -la" || action.UpdatedArgs["timeout"] != float64(5) {
		t.Errorf("action = %+v, want the updated input", action)
	}
	if action.AdditionalContext != "top\nrepo uses make" {
		t.Errorf("additional context = %q", action.AdditionalContext)
	}
}

func TestCommandHookAdditionalContextOnly(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "ctx.sh",
		`echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"tests live in ./t"}}'`)})
	r := hooks.NewRegistry()
	r.Add(h)
	res := r.RunPreToolUse(context.Background(), commandPreEvent(dir))
	if res.AdditionalContext != "tests live in ./t" || res.ArgsMutated || res.FinalArgs["command"] != "ls" {
		t.Errorf("result = %+v, want context added and args untouched", res)
	}
}

func TestCommandHookUpdatedToolOutput(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "redact.sh", `cat > "$PWD/post.json"
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":"[redacted]"}}'`)
	h := newCommandHook(t, cmdHook{Event: "PostToolUse", Command: script})
	r := hooks.NewRegistry()
	r.Add(h)
	res := r.RunPostToolUse(context.Background(), hooks.PostToolUseEvent{
		Session:  hooks.Session{SessionID: "wf", WorkspaceRoot: dir},
		ToolName: "exec_command", CallID: "c", Content: "password=hunter2",
		RawResult: json.RawMessage(`{"stdout":"password=hunter2","exit_code":0}`), DurationMS: 12,
	})
	if !res.Mutated || res.FinalContent != "[redacted]" {
		t.Fatalf("result = %+v, want the output replaced", res)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "post.json"))
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	if resp, _ := in["tool_response"].(map[string]any); resp["exit_code"] != float64(0) {
		t.Errorf("tool_response = %v, want the raw result", in["tool_response"])
	}
	if in["tool_output"] != "password=hunter2" || in["duration_ms"] != float64(12) {
		t.Errorf("stdin = %s", raw)
	}
}

// updatedMCPToolOutput replaces an MCP tool's output only, as Claude
// Code reads it; given as content blocks or as a result, the model reads
// the blocks' text, not their JSON. updatedToolOutput replaces any tool's.
func TestCommandHookStructuredUpdatedToolOutput(t *testing.T) {
	dir := t.TempDir()
	post := func(output, tool string) hooks.PostToolUseAction {
		t.Helper()
		h := newCommandHook(t, cmdHook{Event: "PostToolUse", Command: writeScript(t, dir, "json.sh", `echo '{"hookSpecificOutput":`+output+`}'`)})
		action, err := h.PostToolUse(context.Background(), hooks.PostToolUseEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: tool, Content: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return action
	}
	for _, tc := range []struct{ output, tool, want string }{
		{`{"updatedMCPToolOutput":{"ok": true}}`, "mcp__notes__get_note", `{"ok":true}`},
		{`{"updatedMCPToolOutput":[{"type":"text","text":"REDACTED"},{"type":"text","text":"by the DLP hook"}]}`, "mcp__notes__get_note", "REDACTED\nby the DLP hook"},
		{`{"updatedMCPToolOutput":{"content":[{"type":"text","text":"REDACTED"}],"isError":false}}`, "mcp__notes__get_note", "REDACTED"},
		{`{"updatedToolOutput":"replaced"}`, "workspace_write", "replaced"},
	} {
		if action := post(tc.output, tc.tool); action.Kind != hooks.KindMutateOutput || action.UpdatedContent != tc.want {
			t.Errorf("%s on %s: action = %+v, want %q", tc.output, tc.tool, action, tc.want)
		}
	}
	if action := post(`{"updatedMCPToolOutput":"replaced"}`, "workspace_write"); action.Kind == hooks.KindMutateOutput {
		t.Errorf("updatedMCPToolOutput replaced a built-in tool's output: %+v", action)
	}
}

func TestCommandHookNonZeroExitIsNonBlocking(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "crash.sh", `echo "lint config missing" >&2; exit 1`)})
	r := hooks.NewRegistry()
	r.Add(h)
	res := r.RunPreToolUse(context.Background(), commandPreEvent(dir))
	if res.Blocked() {
		t.Fatalf("exit 1 blocked the call: %+v", res)
	}
	if e := res.Decisions[0].Error; !strings.Contains(e, "status 1") || !strings.Contains(e, "lint config missing") {
		t.Errorf("decision error = %q, want the status and stderr", e)
	}
}

func TestCommandHookFailClosedCrashBlocks(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "crash.sh", `exit 3`), FailClosed: true, Name: "guard"})
	r := hooks.NewRegistry()
	r.Add(h)
	res := r.RunPreToolUse(context.Background(), commandPreEvent(dir))
	if !res.Blocked() || !strings.Contains(res.Action.Reason, `"guard" failed closed`) || res.Decisions[0].Error == "" {
		t.Fatalf("result = %+v, want a fail-closed block naming the guard", res)
	}
}

func TestCommandHookInvalidJSON(t *testing.T) {
	dir := t.TempDir()
	// Starts with "{" and ends with "}": read as JSON, and it is not.
	script := writeScript(t, dir, "broken.sh", `echo '{"hookSpecificOutput": {]}'`)
	open := newCommandHook(t, cmdHook{Command: script})
	if action, err := open.PreToolUse(context.Background(), commandPreEvent(dir)); err == nil || action.Kind != hooks.KindContinue {
		t.Errorf("fail-open: action = %+v, err = %v, want continue with an error", action, err)
	}
	closed := newCommandHook(t, cmdHook{Command: script, FailClosed: true})
	action, err := closed.PreToolUse(context.Background(), commandPreEvent(dir))
	if err == nil || action.Kind != hooks.KindBlock || !strings.Contains(action.Reason, "invalid hook JSON") {
		t.Errorf("fail-closed: action = %+v, err = %v, want a block", action, err)
	}
	wrongValue := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "bad.sh",
		`echo '{"hookSpecificOutput":{"permissionDecision":"maybe"}}'`), FailClosed: true})
	if action, _ := wrongValue.PreToolUse(context.Background(), commandPreEvent(dir)); action.Kind != hooks.KindBlock {
		t.Errorf("unknown permissionDecision: action = %+v, want a fail-closed block", action)
	}
}

// timeoutScript starts a grandchild and records both PIDs, so the test can
// check the whole process group died.
const timeoutScript = `sleep 5 &
echo "$$ $!" > "$PWD/pids"
wait`

func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	// A killed process may linger as a zombie until its parent reaps it.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the script did not record its PIDs: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func assertProcessesGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of the hook's group is still running", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestCommandHookTimeoutFailOpen(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "slow.sh", timeoutScript), Timeout: 200 * time.Millisecond})
	start := time.Now()
	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	elapsed := time.Since(start)
	if elapsed > 3*time.Second {
		t.Errorf("hook took %s with a 200ms timeout", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") || action.Kind != hooks.KindContinue {
		t.Fatalf("action = %+v, err = %v, want continue with a timeout error", action, err)
	}
	assertProcessesGone(t, readPIDs(t, filepath.Join(dir, "pids")))
}

func TestCommandHookTimeoutFailClosed(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "slow.sh", timeoutScript), Timeout: 200 * time.Millisecond, FailClosed: true})
	action, err := h.PreToolUse(context.Background(), commandPreEvent(dir))
	if err == nil || action.Kind != hooks.KindBlock || !strings.Contains(action.Reason, "timed out") {
		t.Fatalf("action = %+v, err = %v, want a fail-closed block", action, err)
	}
	assertProcessesGone(t, readPIDs(t, filepath.Join(dir, "pids")))
}

func TestCommandHookContextCancelKillsGroup(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Command: writeScript(t, dir, "slow.sh", timeoutScript)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.PreToolUse(ctx, commandPreEvent(dir))
		done <- err
	}()
	pidFile := filepath.Join(dir, "pids")
	deadline := time.Now().Add(3 * time.Second)
	for {
		if raw, err := os.ReadFile(pidFile); err == nil && len(strings.Fields(string(raw))) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the script never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("err = %v, want a cancellation error", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the hook did not return after its context was cancelled")
	}
	assertProcessesGone(t, readPIDs(t, pidFile))
}

func TestCommandHookMatcher(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "block.sh", `echo matched >&2; exit 2`)
	tests := []struct {
		matcher string
		tool    string
		want    bool
	}{
		{"", "anything", true},
		{"*", "anything", true},
		{"exec_command", "exec_command", true},
		{"exec_command", "exec_command_v2", false},
		{"exec", "exec_command", false},
		{"calculator|exec_command", "exec_command", true},
		{"calculator|exec_command", "workspace_read", false},
		{"workspace_.*", "workspace_write", true},
		// A regex matcher is unanchored, as in Claude Code.
		{"workspace_.*", "my_workspace_write", true},
		{"^workspace_.*", "my_workspace_write", false},
		{"exec_command|workspace_.*", "workspace_read", true},
	}
	for _, tc := range tests {
		h := newCommandHook(t, cmdHook{Command: script, Matcher: tc.matcher})
		ev := commandPreEvent(dir)
		ev.ToolName = tc.tool
		action, err := h.PreToolUse(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := action.Kind == hooks.KindBlock; got != tc.want {
			t.Errorf("matcher %q on tool %q: ran = %v, want %v", tc.matcher, tc.tool, got, tc.want)
		}
	}
}

func TestCommandHookPermissionRequest(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body string
		want       hooks.Kind
	}{
		{"allow via permissionDecision", `echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"read-only"}}'`, hooks.KindAllow},
		{"allow via decision.behavior", `echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'`, hooks.KindAllow},
		{"deny via decision.behavior", `echo '{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"no"}}}'`, hooks.KindDeny},
		{"deny via exit 2", `echo nope >&2; exit 2`, hooks.KindDeny},
		{"ask means no opinion", `echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'`, hooks.KindNoOpinion},
		{"silence means no opinion", `true`, hooks.KindNoOpinion},
	}
	for i, tc := range tests {
		h := newCommandHook(t, cmdHook{Event: "PermissionRequest", Command: writeScript(t, dir, fmt.Sprintf("p%d.sh", i), tc.body)})
		d, err := h.PermissionRequest(context.Background(), hooks.PermissionRequestEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "exec_command", Permission: "exec"})
		if err != nil || d.Kind != tc.want {
			t.Errorf("%s: decision = %+v, err = %v, want %s", tc.name, d, err, tc.want)
		}
	}
}

func TestCommandHookNotificationEvents(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "log.sh", `cat >> "$PWD/events.jsonl"; echo >> "$PWD/events.jsonl"`)
	r := hooks.NewRegistry()
	for _, ev := range []string{"SessionStart", "PostToolUseFailure", "StepComplete", "SessionEnd", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact", "Error"} {
		r.Add(newCommandHook(t, cmdHook{Event: ev, Command: script}))
	}
	s := hooks.Session{SessionID: "wf", WorkspaceRoot: dir}
	ctx := context.Background()
	var errs []error
	for _, sum := range []hooks.Summary{
		r.RunSessionStart(ctx, hooks.SessionStartEvent{Session: s, Source: hooks.SourceStartup}),
		r.RunPostToolUseFailure(ctx, hooks.PostToolUseFailureEvent{Session: s, ToolName: "exec_command", CallID: "c", ErrorMessage: "boom"}),
		r.RunStepComplete(ctx, hooks.StepCompleteEvent{Session: s, Step: 1}),
		r.RunSubagentStart(ctx, hooks.SubagentStartEvent{Session: s, SubagentID: "sub"}),
		r.RunSubagentStop(ctx, hooks.SubagentStopEvent{Session: s, SubagentID: "sub", StopReason: hooks.StopCompleted}),
		r.RunPreCompact(ctx, hooks.PreCompactEvent{Session: s, Trigger: hooks.CompactAuto}),
		r.RunPostCompact(ctx, hooks.PostCompactEvent{Session: s, Trigger: hooks.CompactAuto}),
		r.RunError(ctx, hooks.ErrorEvent{Session: s, Stage: "execute_tool", ErrorType: "RuntimeError"}),
		r.RunSessionStop(ctx, hooks.SessionStopEvent{Session: s, StopReason: hooks.StopCompleted}),
	} {
		if len(sum.Decisions) != 1 {
			t.Errorf("%s: decisions = %+v, want exactly the one hook for that event", sum.Event, sum.Decisions)
		}
		if err := sum.Err(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		names = append(names, m["hook_event_name"].(string))
	}
	want := "SessionStart PostToolUseFailure StepComplete SubagentStart SubagentStop PreCompact PostCompact Error SessionEnd"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
}

func TestCommandHookExit2OnNotificationIsRecorded(t *testing.T) {
	dir := t.TempDir()
	h := newCommandHook(t, cmdHook{Event: "SessionEnd", Command: writeScript(t, dir, "stop.sh", `echo "not done yet" >&2; exit 2`)})
	err := h.OnSessionStop(context.Background(), hooks.SessionStopEvent{Session: hooks.Session{WorkspaceRoot: dir}, StopReason: hooks.StopCompleted})
	if err == nil || !strings.Contains(err.Error(), "not done yet") || !strings.Contains(err.Error(), "cannot be blocked") {
		t.Errorf("err = %v, want the unblockable request recorded", err)
	}
}

func TestCommandHookRunsInSettingsDirWithoutWorkspace(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "local.sh", `pwd > "$FENIX_HOOKS_DIR/where"`)
	h := newCommandHook(t, cmdHook{Command: "./local.sh", Dir: dir})
	if _, err := h.PreToolUse(context.Background(), commandPreEvent("")); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "where"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := filepath.EvalSymlinks(strings.TrimSpace(string(raw)))
	want, _ := filepath.EvalSymlinks(dir)
	if got != want {
		t.Errorf("ran in %s, want the settings directory %s", got, want)
	}
}

func TestCommandHookMissingWorkspaceFails(t *testing.T) {
	h := newCommandHook(t, cmdHook{Command: "true", FailClosed: true})
	action, err := h.PreToolUse(context.Background(), commandPreEvent(filepath.Join(t.TempDir(), "missing")))
	if err == nil || action.Kind != hooks.KindBlock {
		t.Errorf("action = %+v, err = %v, want a fail-closed block for a missing directory", action, err)
	}
}

// is_replay reaches the hook only for re-evaluations (starter policy-diff),
// so a logging hook can skip them; live events do not carry the field.
func TestCommandHookIsReplayOnlyWhenSet(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "record.sh", `cat > "$PWD/stdin-$FENIX_SESSION_ID.json"`)
	h := newCommandHook(t, cmdHook{Command: script})
	for _, replay := range []bool{false, true} {
		ev := commandPreEvent(dir)
		ev.SessionID = fmt.Sprintf("replay-%t", replay)
		ev.IsReplay = replay
		if _, err := h.PreToolUse(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "stdin-"+ev.SessionID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var in map[string]any
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatalf("stdin %s: %v", raw, err)
		}
		got, present := in["is_replay"]
		if replay && got != true {
			t.Errorf("replayed event: stdin is_replay = %v, want true", got)
		}
		if !replay && present {
			t.Errorf("live event: stdin has is_replay = %v, want no such field", got)
		}
	}
}

// A JSON answer over what the worker reads of a hook's output fails
// closed: its decision is unread, and it was read as the text of a hook
// that allowed. An updatedInput of large arguments, escaped, fits; a long
// output that is not JSON is text, as before.
func TestCommandHookAnswerOverTheLimitFailsClosed(t *testing.T) {
	dir := t.TempDir()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	run := func(name, program string) (hooks.PreToolUseAction, error) {
		t.Helper()
		path := filepath.Join(dir, name+".py")
		if err := os.WriteFile(path, []byte(program), 0o644); err != nil {
			t.Fatal(err)
		}
		h := newCommandHook(t, cmdHook{Command: python + " " + path})
		return h.PreToolUse(context.Background(), commandPreEvent(dir))
	}
	deny := `import json, sys
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
  "permissionDecisionReason": "secret key", "padding": "é" * %d}}))`
	action, err := run("over", fmt.Sprintf(deny, (maxCommandAnswer/6)+1000))
	if err == nil || !strings.Contains(err.Error(), "over the") || action.Kind != hooks.KindBlock {
		t.Fatalf("a deny over the limit: action %+v, err %v; want a closed failure", action, err)
	}
	action, err = run("under", fmt.Sprintf(deny, 200_000))
	if err != nil || action.Kind != hooks.KindBlock || action.Reason != "secret key" {
		t.Fatalf("a deny of 1.2 MB: action %+v, err %v; want it read", action, err)
	}
	action, err = run("text", fmt.Sprintf(`print("log line " * %d)`, maxCommandAnswer/9+1000))
	if err != nil || action.Kind != hooks.KindContinue {
		t.Fatalf("long text: action %+v, err %v; want continue", action, err)
	}
}

// An inline command written in bash, as Claude Code runs a command
// hook's shell form in bash: under /bin/sh (dash on Debian) its [[ … ]]
// was a command not found, the guard's if false, and the call went on.
func TestAClaudeSettingsInlineCommandRunsInBash(t *testing.T) {
	if !bashAvailable() {
		t.Skip("no bash here")
	}
	project := t.TempDir()
	path := writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
  {"type": "command", "command": "input=$(cat); if [[ \"$input\" == *INLINEBLOCK* ]]; then echo 'inline guard: blocked' >&2; exit 2; fi; exit 0"}]}]}}`)
	src := loadSource(t, path)
	if len(src.Hooks) != 1 {
		t.Fatalf("hooks = %v, warnings = %v", src.Hooks, src.Warnings)
	}
	ev := commandPreEvent(project)
	ev.ToolInput = map[string]any{"command_line": "echo INLINEBLOCK"}
	action, err := src.Hooks[0].(*ExternalHook).PreToolUse(context.Background(), ev)
	if err != nil || action.Kind != hooks.KindBlock || !strings.Contains(action.Reason, "inline guard: blocked") {
		t.Fatalf("action = %+v, err = %v, want the bash guard's block", action, err)
	}
}
