package claudecode

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

var scriptSeq atomic.Int64

// scriptHook is a command hook running a shell script body.
func scriptHook(t *testing.T, dir, event string, body string, opts ...func(*cmdHook)) *ExternalHook {
	t.Helper()
	c := cmdHook{Event: event, Command: writeScript(t, dir, fmt.Sprintf("h%d.sh", scriptSeq.Add(1)), body)}
	for _, o := range opts {
		o(&c)
	}
	return newCommandHook(t, c)
}

func failClosed(c *cmdHook) { c.FailClosed = true }

func claude(c *cmdHook) { c.Dialect = DialectClaude }

func registryOf(hs ...hooks.AgentHook) *hooks.Registry {
	r := hooks.NewRegistry()
	for _, h := range hs {
		r.Add(h)
	}
	return r
}

// A hook that exits other than 0 and 2 is read as Claude Code reads it
// since v2.1.214: a valid JSON object alone decides, whatever the status
// (a deny, an ask, an allow with its updated input), and without one the
// failure is a non-blocking error.
func TestJSONIsReadOnEveryExitCode(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	deny := scriptHook(t, dir, "PreToolUse", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no network"}}'; exit 1`)
	res := registryOf(deny).RunPreToolUse(ctx, commandPreEvent(dir))
	if !res.Blocked() || res.Action.Reason != "no network" || res.Decisions[0].Error != "" {
		t.Errorf("JSON deny with exit 1: %+v, want blocked with the JSON's reason and no error", res)
	}
	rewrite := scriptHook(t, dir, "PreToolUse", `echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command_line":"ls -a"}}}'; exit 3`)
	res = registryOf(rewrite).RunPreToolUse(ctx, commandPreEvent(dir))
	if res.Blocked() || !res.ArgsMutated || res.FinalArgs["command_line"] != "ls -a" || res.Decisions[0].Kind != hooks.KindAllow || res.Decisions[0].Error != "" {
		t.Errorf("JSON allow with exit 3: %+v, want the allow and its updated input, and no error", res)
	}
	ask := scriptHook(t, dir, "PreToolUse", `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"confirm"}}'; exit 1`)
	res = registryOf(ask).RunPreToolUse(ctx, commandPreEvent(dir))
	if res.PermissionRequired == nil || res.Decisions[0].Error != "" {
		t.Errorf("JSON ask with exit 1: %+v, want ask", res.Decisions[0])
	}
	for _, body := range []string{`echo "lint config missing" >&2; exit 1`, `exit 1`, `echo 'not json'; exit 4`} {
		res = registryOf(scriptHook(t, dir, "PreToolUse", body)).RunPreToolUse(ctx, commandPreEvent(dir))
		if res.Blocked() || !strings.Contains(res.Decisions[0].Error, "exited with status") {
			t.Errorf("%s: %+v, want a non-blocking error", body, res)
		}
	}
}

func TestPlainTextOutputIsAccepted(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, body := range []string{`echo 'looks fine to me'`, `echo '{ this is not the end'`, `echo '["a","b"]'`, `echo '"quoted"'`} {
		res := registryOf(scriptHook(t, dir, "PreToolUse", body, failClosed)).RunPreToolUse(ctx, commandPreEvent(dir))
		if res.Blocked() || res.Decisions[0].Error != "" {
			t.Errorf("%s: %+v, want plain text accepted", body, res)
		}
	}
	// On SessionStart and UserPromptSubmit plain stdout is context.
	s := hooks.Session{SessionID: "s", WorkspaceRoot: dir}
	sum := registryOf(scriptHook(t, dir, "SessionStart", `echo "branch: main"`)).RunSessionStart(ctx, hooks.SessionStartEvent{Session: s, Source: hooks.SourceStartup})
	if sum.AdditionalContext != "branch: main" {
		t.Errorf("SessionStart context = %q", sum.AdditionalContext)
	}
	prompt := registryOf(scriptHook(t, dir, "UserPromptSubmit", `echo "today is Tuesday"`)).RunUserPromptSubmit(ctx, hooks.UserPromptSubmitEvent{Session: s, Prompt: "hi"})
	if prompt.Blocked || prompt.AdditionalContext != "today is Tuesday" {
		t.Errorf("UserPromptSubmit = %+v", prompt)
	}
	// Two JSON lines that set no hook field are plain text too; one that
	// does makes the whole output a parse failure.
	sum = registryOf(scriptHook(t, dir, "SessionStart", `echo '{"a":1}'; echo '{"b":2}'`)).RunSessionStart(ctx, hooks.SessionStartEvent{Session: s})
	if sum.AdditionalContext != "{\"a\":1}\n{\"b\":2}" || sum.Err() != nil {
		t.Errorf("two plain JSON lines: %+v", sum)
	}
	sum = registryOf(scriptHook(t, dir, "SessionStart", `echo '{"a":1}'; echo '{"continue":false}'`)).RunSessionStart(ctx, hooks.SessionStartEvent{Session: s})
	if sum.Err() == nil || sum.Halt != nil {
		t.Errorf("two JSON lines, one a hook output: %+v, want a parse error and no halt", sum)
	}
}

func TestExit2GivesTheReason(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body, want string
	}{
		{"stderr", `echo "rm is forbidden here" >&2; exit 2`, "rm is forbidden here"},
		// Since v2.1.214 Claude Code reads the JSON on exit 2 too: the
		// reason of its own block wins over stderr.
		{"JSON deny reason", `echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"policy 7"}}'; echo "see stderr" >&2; exit 2`, "policy 7"},
		{"JSON block reason", `echo '{"decision":"block","reason":"legacy no"}'; echo "see stderr" >&2; exit 2`, "legacy no"},
		{"JSON allow cannot override", `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'; echo "exit 2 wins" >&2; exit 2`, "exit 2 wins"},
		{"invalid JSON still blocks", `echo '{"oops":}'; echo "broken but blocked" >&2; exit 2`, "broken but blocked"},
	}
	for _, tc := range tests {
		res := registryOf(scriptHook(t, dir, "PreToolUse", tc.body)).RunPreToolUse(context.Background(), commandPreEvent(dir))
		if !res.Blocked() || res.Action.Reason != tc.want || res.Decisions[0].Error != "" || res.Halt != nil {
			t.Errorf("%s: %+v, want blocked with %q", tc.name, res, tc.want)
		}
	}
	// Its continue: false holds too, as on any other status.
	res := registryOf(scriptHook(t, dir, "PreToolUse", `echo '{"continue":false,"stopReason":"stop all"}'; echo "only this call" >&2; exit 2`)).RunPreToolUse(context.Background(), commandPreEvent(dir))
	if !res.Blocked() || res.Halt == nil {
		t.Errorf("JSON halt on exit 2: %+v, want blocked and halted", res)
	}
}

// Across hooks the precedence is deny > defer > ask > allow, whatever the
// order the hooks run in.
func TestDecisionPrecedenceAcrossHooks(t *testing.T) {
	dir := t.TempDir()
	decide := func(d string) *ExternalHook {
		return scriptHook(t, dir, "PreToolUse", fmt.Sprintf(`echo '{"hookSpecificOutput":{"permissionDecision":"%s","permissionDecisionReason":"%s said so"}}'`, d, d))
	}
	allow, ask, deferred, deny := decide("allow"), decide("ask"), decide("defer"), decide("deny")
	tests := []struct {
		hooks []hooks.AgentHook
		want  hooks.Kind
	}{
		{[]hooks.AgentHook{allow, ask, deferred, deny}, hooks.KindBlock},
		{[]hooks.AgentHook{deny, deferred, ask, allow}, hooks.KindBlock},
		{[]hooks.AgentHook{allow, ask, deferred}, hooks.KindDefer},
		{[]hooks.AgentHook{deferred, ask, allow}, hooks.KindDefer},
		{[]hooks.AgentHook{ask, deferred}, hooks.KindDefer},
		{[]hooks.AgentHook{allow, ask}, hooks.KindPermissionRequired},
		{[]hooks.AgentHook{ask, allow}, hooks.KindPermissionRequired},
		{[]hooks.AgentHook{allow, allow}, hooks.KindContinue},
	}
	for i, tc := range tests {
		res := registryOf(tc.hooks...).RunPreToolUse(context.Background(), commandPreEvent(dir))
		if res.Action.Kind != tc.want {
			t.Errorf("case %d: action %+v, want %s", i, res.Action, tc.want)
		}
		switch tc.want {
		case hooks.KindDefer:
			if !res.NeedsPermission() || !res.PermissionRequired.Deferred || res.PermissionRequired.Permission != "defer said so" {
				t.Errorf("case %d: a defer parks the call for an outside decision: %+v", i, res.PermissionRequired)
			}
		case hooks.KindPermissionRequired:
			if !res.NeedsPermission() || res.PermissionRequired.Deferred {
				t.Errorf("case %d: %+v", i, res.PermissionRequired)
			}
		}
	}
}

// "continue": false ends the turn, not just the call, and takes precedence
// over the event's own decision.
func TestContinueFalseHaltsTheTurn(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	halt := `echo '{"continue":false,"stopReason":"budget exhausted","hookSpecificOutput":{"permissionDecision":"allow"}}'`
	pre := registryOf(scriptHook(t, dir, "PreToolUse", halt)).RunPreToolUse(ctx, commandPreEvent(dir))
	if !pre.Blocked() || pre.Halt == nil || pre.Halt.Reason != "budget exhausted" || pre.Halt.Hook == "" {
		t.Errorf("PreToolUse: %+v, want the call blocked and the turn halted", pre)
	}
	post := registryOf(scriptHook(t, dir, "PostToolUse", halt)).RunPostToolUse(ctx, hooks.PostToolUseEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "calculator", Content: "4"})
	if post.Halt == nil || post.FinalContent != "4" {
		t.Errorf("PostToolUse: %+v, want a halt and the output kept", post)
	}
	perm := registryOf(scriptHook(t, dir, "PermissionRequest", halt)).RunPermissionRequest(ctx, hooks.PermissionRequestEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "exec_command"})
	if perm.Decision.Kind != hooks.KindDeny || perm.Halt == nil {
		t.Errorf("PermissionRequest: %+v, want a deny and a halt", perm)
	}
	start := registryOf(scriptHook(t, dir, "SessionStart", halt)).RunSessionStart(ctx, hooks.SessionStartEvent{Session: hooks.Session{WorkspaceRoot: dir}})
	if start.Halt == nil || start.Halt.Reason != "budget exhausted" {
		t.Errorf("SessionStart: %+v", start)
	}
	stop := registryOf(
		scriptHook(t, dir, "Stop", `echo '{"decision":"block","reason":"run the tests"}'`),
		scriptHook(t, dir, "Stop", `echo '{"continue":false,"stopReason":"done for today"}'`),
	).RunStop(ctx, hooks.StopEvent{Session: hooks.Session{WorkspaceRoot: dir}})
	if stop.Continue || stop.Halt == nil || stop.Halt.Reason != "done for today" {
		t.Errorf("Stop: %+v, want the halt to win over the block", stop)
	}
}

func TestInvalidHookJSONIsANonBlockingError(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{
		`echo '{"hookSpecificOutput":{"permissionDecision":"maybe"}}'`,
		`echo '{"decision":"approve-ish"}'`,
		`echo '{"continue":"no"}'`,
		`echo '{"hookSpecificOutput": {]}'`,
	} {
		open := registryOf(scriptHook(t, dir, "PreToolUse", body)).RunPreToolUse(context.Background(), commandPreEvent(dir))
		if open.Blocked() || open.Decisions[0].Error == "" {
			t.Errorf("%s: %+v, want a non-blocking error", body, open)
		}
		closed := registryOf(scriptHook(t, dir, "PreToolUse", body, failClosed)).RunPreToolUse(context.Background(), commandPreEvent(dir))
		if !closed.Blocked() || !strings.Contains(closed.Action.Reason, "failed closed") {
			t.Errorf("%s fail-closed: %+v, want a block", body, closed)
		}
	}
}

// onFailure: "block" blocks when the hook cannot start or exits with an
// unexpected code, not only when it times out.
func TestFailClosedCoversEveryFailure(t *testing.T) {
	dir := t.TempDir()
	missing := newCommandHook(t, cmdHook{Command: dir + "/no-such-guard.py", FailClosed: true})
	crash := scriptHook(t, dir, "PreToolUse", `echo "Traceback" >&2; exit 1`, failClosed)
	for _, h := range []*ExternalHook{missing, crash} {
		res := registryOf(h).RunPreToolUse(context.Background(), commandPreEvent(dir))
		if !res.Blocked() || !strings.Contains(res.Action.Reason, "failed closed") {
			t.Errorf("%s: %+v, want a fail-closed block", h.Name(), res)
		}
	}
	prompt := registryOf(scriptHook(t, dir, "UserPromptSubmit", `exit 1`, failClosed)).RunUserPromptSubmit(context.Background(), hooks.UserPromptSubmitEvent{Session: hooks.Session{WorkspaceRoot: dir}})
	if !prompt.Blocked {
		t.Errorf("UserPromptSubmit fail-closed: %+v", prompt)
	}
}

// PostToolUse cannot block (the tool ran): exit 2's stderr and a block's
// reason reach the model next to the result.
func TestPostToolUseFeedbackReachesTheModel(t *testing.T) {
	dir := t.TempDir()
	ev := hooks.PostToolUseEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "workspace_write", Content: "wrote a.go"}
	res := registryOf(
		scriptHook(t, dir, "PostToolUse", `echo "gofmt: a.go is not formatted" >&2; exit 2`),
		scriptHook(t, dir, "PostToolUse", `echo '{"decision":"block","reason":"lint failed"}'`),
		scriptHook(t, dir, "PostToolUse", `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run make test"}}'`),
	).RunPostToolUse(context.Background(), ev)
	want := "gofmt: a.go is not formatted\nlint failed\nrun make test"
	if res.AdditionalContext != want || res.FinalContent != "wrote a.go" {
		t.Errorf("result %+v, want context %q", res, want)
	}
	for _, d := range res.Decisions {
		if d.Error != "" {
			t.Errorf("feedback is not a failure: %+v", d)
		}
	}
	fail := registryOf(scriptHook(t, dir, "PostToolUseFailure", `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"is the file open elsewhere?"}}'`)).
		RunPostToolUseFailure(context.Background(), hooks.PostToolUseFailureEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "workspace_write", ErrorMessage: "denied"})
	if fail.AdditionalContext != "is the file open elsewhere?" {
		t.Errorf("PostToolUseFailure: %+v", fail)
	}
}

func TestAskAppliesUpdatedInput(t *testing.T) {
	dir := t.TempDir()
	res := registryOf(scriptHook(t, dir, "PreToolUse",
		`echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"confirm the cleanup","updatedInput":{"command":"rm -ri build"}}}'`, claude)).
		RunPreToolUse(context.Background(), commandPreEvent(dir))
	if !res.NeedsPermission() || !res.ArgsMutated || res.FinalArgs["command_line"] != "rm -ri build" {
		t.Errorf("%+v, want the modified input shown for approval", res)
	}
}

// Claude Code ignores exit 2 on PermissionRequest; a Fenix file's exit 2
// denies, as it always did.
func TestPermissionRequestExit2PerDialect(t *testing.T) {
	dir := t.TempDir()
	ev := hooks.PermissionRequestEvent{Session: hooks.Session{WorkspaceRoot: dir}, ToolName: "exec_command", Permission: "run"}
	body := `echo nope >&2; exit 2`
	if d, _ := scriptHook(t, dir, "PermissionRequest", body).PermissionRequest(context.Background(), ev); d.Kind != hooks.KindDeny {
		t.Errorf("fenix: %+v, want deny", d)
	}
	if d, _ := scriptHook(t, dir, "PermissionRequest", body, claude).PermissionRequest(context.Background(), ev); d.Kind != hooks.KindNoOpinion {
		t.Errorf("claude: %+v, want no opinion", d)
	}
	allow := `echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"npm run lint"}}}}'`
	d, err := scriptHook(t, dir, "PermissionRequest", allow, claude).PermissionRequest(context.Background(), ev)
	if err != nil || d.Kind != hooks.KindAllow || d.UpdatedArgs["command_line"] != "npm run lint" {
		t.Errorf("allow with updatedInput: %+v, %v", d, err)
	}
	interrupt := `echo '{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"never on prod","interrupt":true}}}'`
	res := registryOf(scriptHook(t, dir, "PermissionRequest", interrupt, claude)).RunPermissionRequest(context.Background(), ev)
	if res.Decision.Kind != hooks.KindDeny || res.Halt == nil {
		t.Errorf("deny with interrupt: %+v, want a deny that halts", res)
	}
}
