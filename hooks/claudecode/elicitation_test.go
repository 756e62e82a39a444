package claudecode

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// The scripts below are written the way a Claude Code user would write
// elicitation hooks: bash with jq, or python3, reading the event on stdin.

func requireJQ(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed; the elicitation fixture scripts use it")
	}
}

// fillCRM answers the CRM server's account question for unattended runs
// and keeps every event it was sent.
const fillCRM = `#!/usr/bin/env bash
set -euo pipefail
event=$(cat)
printf '%s\n' "$event" >> "$CLAUDE_PROJECT_DIR/elicitations.jsonl"
if [ "$(jq -r .mode <<<"$event")" = form ] && jq -e '.requested_schema.properties | has("account")' <<<"$event" >/dev/null; then
  jq -n '{hookSpecificOutput: {hookEventName: "Elicitation", action: "accept", content: {account: "acme"}}}'
fi
`

// elicitationProject writes a project whose .claude/settings.json is
// settings and whose .claude/hooks holds scripts, and loads it.
func elicitationProject(t *testing.T, settings string, scripts map[string]string) (*hooks.Registry, string) {
	t.Helper()
	project := filepath.Join(t.TempDir(), "project")
	for name, body := range scripts {
		path := writeFileAt(t, filepath.Join(project, ".claude", "hooks", name), body)
		if err := os.Chmod(path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src, err := LoadSource(writeFileAt(t, filepath.Join(project, ".claude", "settings.json"), settings), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range src.Warnings {
		if strings.Contains(w, "is not fired by Fenix") || strings.Contains(w, "unknown event") {
			t.Errorf("the elicitation events were skipped: %s", w)
		}
	}
	r := hooks.NewRegistry()
	r.AddSource(src.Registered())
	return r, project
}

func elicitationSession(project string) hooks.Session {
	return hooks.Session{SessionID: "assignment-7", ConversationSessionID: "conv-7", WorkspaceRoot: project,
		TranscriptPath: filepath.Join(project, "transcript.jsonl"), PermissionMode: hooks.PermissionModeDefault}
}

func accountQuestion(s hooks.Session, server string) hooks.ElicitationEvent {
	return hooks.ElicitationEvent{Session: s, CallID: "call-3", ToolName: "mcp__" + server + "__create_invoice", ServerName: server,
		Message: "Which account should the invoice go to?", Mode: hooks.ElicitModeForm,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"account": map[string]any{"type": "string"}},
			"required": []any{"account"}}}
}

func TestElicitationHookAnswersForItsServerOnly(t *testing.T) {
	requireJQ(t)
	r, project := elicitationProject(t, `{"hooks": {"Elicitation": [{"matcher": "crm", "hooks": [
		{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fill-crm.sh"}]}]}}`,
		map[string]string{"fill-crm.sh": fillCRM})
	s := elicitationSession(project)
	log := filepath.Join(project, "elicitations.jsonl")

	sum := r.RunElicitation(context.Background(), accountQuestion(s, "crm"))
	if sum.Answer == nil || sum.Answer.Action != hooks.ElicitAccept || !reflect.DeepEqual(sum.Answer.Content, map[string]any{"account": "acme"}) {
		t.Fatalf("crm answer = %+v (decisions %+v), want accept with account acme", sum.Answer, sum.Decisions)
	}
	if len(sum.Decisions) != 1 || sum.Decisions[0].Error != "" || sum.DecidedBy != sum.Decisions[0].Hook {
		t.Errorf("decisions = %+v, decided by %q: want the one hook, without error", sum.Decisions, sum.DecidedBy)
	}
	events := readLog(t, log)
	if len(events) != 1 {
		t.Fatalf("the hook saw %d events, want 1", len(events))
	}
	got := events[0]
	want := map[string]any{
		"session_id":       "conv-7",
		"transcript_path":  s.TranscriptPath,
		"cwd":              project,
		"permission_mode":  "default",
		"hook_event_name":  "Elicitation",
		"mcp_server_name":  "crm",
		"message":          "Which account should the invoice go to?",
		"mode":             "form",
		"requested_schema": map[string]any{"type": "object", "properties": map[string]any{"account": map[string]any{"type": "string"}}, "required": []any{"account"}},
		"tool_name":        "mcp__crm__create_invoice",
		"tool_use_id":      "call-3",
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("stdin %s = %#v, want %#v", k, got[k], v)
		}
	}
	for _, k := range []string{"url", "elicitation_id"} {
		if _, ok := got[k]; ok {
			t.Errorf("form-mode stdin has %s = %v; it is sent only when set", k, got[k])
		}
	}

	sum = r.RunElicitation(context.Background(), accountQuestion(s, "docs"))
	if sum.Answer != nil || len(sum.Decisions) != 0 {
		t.Errorf("docs: answer %+v, decisions %+v: the crm hook must not run", sum.Answer, sum.Decisions)
	}
	if n := len(readLog(t, log)); n != 1 {
		t.Errorf("after the docs question the hook had seen %d events, want still 1", n)
	}

	// URL mode: the server sends the user to a page; the hook has no
	// opinion (exit 0, no output), so a person is asked.
	login := hooks.ElicitationEvent{Session: s, ServerName: "crm", Message: "Sign in to the CRM", Mode: hooks.ElicitModeURL,
		URL: "https://crm.example.com/oauth/start", ElicitationID: "el-42"}
	sum = r.RunElicitation(context.Background(), login)
	if sum.Answer != nil || len(sum.Decisions) != 1 || sum.Decisions[0].Error != "" {
		t.Errorf("url mode: answer %+v, decisions %+v: want the hook run, no opinion, no error", sum.Answer, sum.Decisions)
	}
	events = readLog(t, log)
	if len(events) != 2 {
		t.Fatalf("the hook saw %d events, want 2", len(events))
	}
	got = events[1]
	if got["mode"] != "url" || got["url"] != login.URL || got["elicitation_id"] != "el-42" || got["message"] != login.Message {
		t.Errorf("url-mode stdin = %v", got)
	}
	if _, ok := got["requested_schema"]; ok {
		t.Errorf("url-mode stdin has requested_schema %v", got["requested_schema"])
	}
}

// A settings file with elicitation hooks subscribes the run to those
// events, whatever the call; one without does not.
func TestElicitationSubscription(t *testing.T) {
	evs := []hooks.Event{hooks.EventElicitation, hooks.EventElicitationResult}
	both, _ := elicitationProject(t, `{"hooks": {
		"Elicitation": [{"matcher": "crm", "hooks": [{"type": "command", "command": "true"}]}],
		"ElicitationResult": [{"hooks": [{"type": "command", "command": "true"}]}]}}`, nil)
	if got := both.Subscribed("", "mcp__crm__create_invoice", evs...); !slices.Equal(got, evs) {
		t.Errorf("with both events: Subscribed = %v, want %v", got, evs)
	}
	onlyResult, _ := elicitationProject(t, `{"hooks": {"ElicitationResult": [{"hooks": [{"type": "command", "command": "true"}]}]}}`, nil)
	if got := onlyResult.Subscribed("", "mcp__crm__create_invoice", evs...); !slices.Equal(got, []hooks.Event{hooks.EventElicitationResult}) {
		t.Errorf("with ElicitationResult only: Subscribed = %v", got)
	}
	none, _ := elicitationProject(t, `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
		"Notification": [{"hooks": [{"type": "command", "command": "true"}]}]}}`, nil)
	if got := none.Subscribed("", "mcp__crm__create_invoice", evs...); len(got) != 0 {
		t.Errorf("without elicitation hooks: Subscribed = %v, want none", got)
	}

	h := newCommandHook(t, cmdHook{Event: "ElicitationResult", Command: "true", Dialect: DialectClaude})
	if !h.HandlesEvent(hooks.EventElicitationResult) || h.HandlesEvent(hooks.EventElicitation) || h.HandlesEvent(hooks.EventNotification) {
		t.Errorf("an ElicitationResult hook handles the wrong events")
	}
}

func TestElicitationExit2Declines(t *testing.T) {
	requirePython(t)
	// A guard that keeps a production server from being answered at all;
	// the JSON it prints before exiting 2 is ignored, as in Claude Code.
	guard := `#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
if event["mcp_server_name"].startswith("prod-"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": event["hook_event_name"], "action": "accept", "content": {}}}))
    print(f"{event['mcp_server_name']} must be answered by a person at the console", file=sys.stderr)
    sys.exit(2)
`
	r, project := elicitationProject(t, `{"hooks": {
		"Elicitation": [{"hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py"}]}],
		"ElicitationResult": [{"hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py"}]}]}}`,
		map[string]string{"guard.py": guard})
	s := elicitationSession(project)
	const reason = "prod-db must be answered by a person at the console"

	sum := r.RunElicitation(context.Background(), accountQuestion(s, "prod-db"))
	if sum.Answer == nil || sum.Answer.Action != hooks.ElicitDecline || sum.Answer.Reason != reason || sum.Answer.Content != nil {
		t.Errorf("Elicitation: answer %+v (decisions %+v), want a decline with the stderr reason", sum.Answer, sum.Decisions)
	}
	res := r.RunElicitationResult(context.Background(), hooks.ElicitationResultEvent{Session: s, ServerName: "prod-db", Mode: hooks.ElicitModeForm,
		Action: hooks.ElicitAccept, Content: map[string]any{"account": "acme"}})
	if res.Answer == nil || res.Answer.Action != hooks.ElicitDecline || res.Answer.Reason != reason {
		t.Errorf("ElicitationResult: answer %+v (decisions %+v), want the accept turned into a decline", res.Answer, res.Decisions)
	}
	if sum := r.RunElicitation(context.Background(), accountQuestion(s, "crm")); sum.Answer != nil || len(sum.Decisions) != 1 {
		t.Errorf("crm: answer %+v, decisions %+v: want the guard run with no opinion", sum.Answer, sum.Decisions)
	}
}

func TestElicitationResultRewritesTheAcceptedContent(t *testing.T) {
	requirePython(t)
	// Normalizes what a person typed before the CRM gets it.
	tidy := `#!/usr/bin/env python3
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "results.jsonl"), "a") as log:
    log.write(json.dumps(event) + "\n")
if event["action"] != "accept":
    sys.exit(0)
content = {k: v.strip().lower() if isinstance(v, str) else v for k, v in event["content"].items()}
print(json.dumps({"hookSpecificOutput": {"hookEventName": "ElicitationResult", "action": "accept", "content": content}}))
`
	r, project := elicitationProject(t, `{"hooks": {"ElicitationResult": [{"matcher": "crm", "hooks": [
		{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/tidy.py"}]}]}}`,
		map[string]string{"tidy.py": tidy})
	s := elicitationSession(project)
	answer := hooks.ElicitationResultEvent{Session: s, CallID: "call-3", ToolName: "mcp__crm__create_invoice", ServerName: "crm",
		Mode: hooks.ElicitModeForm, ElicitationID: "el-9", Action: hooks.ElicitAccept, Content: map[string]any{"account": "  ACME ", "seats": float64(3)}}

	res := r.RunElicitationResult(context.Background(), answer)
	want := map[string]any{"account": "acme", "seats": float64(3)}
	if res.Answer == nil || res.Answer.Action != hooks.ElicitAccept || !reflect.DeepEqual(res.Answer.Content, want) {
		t.Fatalf("answer = %+v (decisions %+v), want accept with %v", res.Answer, res.Decisions, want)
	}
	if answer.Content["account"] != "  ACME " {
		t.Errorf("the event's own content was changed: %v", answer.Content)
	}

	answer.Action, answer.Content = hooks.ElicitDecline, nil
	if res := r.RunElicitationResult(context.Background(), answer); res.Answer != nil || len(res.Decisions) != 1 {
		t.Errorf("decline: answer %+v, decisions %+v: want the hook run and the answer left as is", res.Answer, res.Decisions)
	}
	answer.ServerName = "docs"
	if res := r.RunElicitationResult(context.Background(), answer); len(res.Decisions) != 0 {
		t.Errorf("docs: decisions %+v, the crm hook must not run", res.Decisions)
	}

	events := readLog(t, filepath.Join(project, "results.jsonl"))
	if len(events) != 2 {
		t.Fatalf("the hook saw %d events, want 2", len(events))
	}
	accepted, declined := events[0], events[1]
	for k, v := range map[string]any{"hook_event_name": "ElicitationResult", "mcp_server_name": "crm", "mode": "form", "elicitation_id": "el-9",
		"action": "accept", "content": map[string]any{"account": "  ACME ", "seats": float64(3)}, "session_id": "conv-7", "cwd": project} {
		if !reflect.DeepEqual(accepted[k], v) {
			t.Errorf("accepted stdin %s = %#v, want %#v", k, accepted[k], v)
		}
	}
	if _, ok := accepted["message"]; ok {
		t.Errorf("ElicitationResult stdin has a message: %v", accepted)
	}
	if declined["action"] != "decline" {
		t.Errorf("declined stdin action = %v", declined["action"])
	}
	if _, ok := declined["content"]; ok {
		t.Errorf("declined stdin has content %v; Claude Code leaves the key out", declined["content"])
	}
}

// What each kind of output means on an Elicitation hook.
func TestElicitationHookOutputs(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		failClosed   bool
		wantAction   string
		wantReason   string
		wantContent  map[string]any
		wantErr      string
	}{
		{name: "garbage JSON", script: `echo '{"hookSpecificOutput": {"action": accept}}'`, wantErr: "invalid hook JSON"},
		{name: "crash", script: `echo "crm token expired" >&2; exit 1`, wantErr: "exited with status 1: crm token expired"},
		{name: "unknown action", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "approve"}}'`,
			wantErr: `action "approve" is not accept, decline or cancel`},
		{name: "content that is not an object", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": "acme"}}'`,
			wantErr: "hookSpecificOutput.content"},
		{name: "plain text", script: `echo "looked at it"`},
		{name: "other events' output", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "additionalContext": "fyi"}}'`},
		{name: "cancel", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "cancel"}}'`, wantAction: hooks.ElicitCancel},
		{name: "decline drops content", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline", "content": {"account": "x"}}}'`,
			wantAction: hooks.ElicitDecline},
		{name: "accept without content", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept"}}'`,
			wantAction: hooks.ElicitAccept},
		{name: "hookEventName not checked", script: `echo '{"hookSpecificOutput": {"hookEventName": "ElicitationResult", "action": "accept", "content": {"account": "acme"}}}'`,
			wantAction: hooks.ElicitAccept, wantContent: map[string]any{"account": "acme"}},
		{name: "decision block", script: `echo '{"decision": "block", "reason": "no answers on Fridays"}'`,
			wantAction: hooks.ElicitDecline, wantReason: "no answers on Fridays"},
		{name: "continue false", script: `echo '{"continue": false, "stopReason": "operator stopped the run"}'`,
			wantAction: hooks.ElicitDecline, wantReason: "operator stopped the run", wantErr: "the turn is not ended"},
		{name: "decline then exit 1", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}}'; exit 1`,
			wantAction: hooks.ElicitDecline},
		// The JSON alone decides on a status other than 0 and 2.
		{name: "accept then exit 1", script: `echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"account": "acme"}}}'; exit 1`,
			wantAction: hooks.ElicitAccept, wantContent: map[string]any{"account": "acme"}},
		{name: "crash failing closed", script: `exit 1`, failClosed: true, wantAction: hooks.ElicitDecline, wantReason: "failed closed", wantErr: "exited with status 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newCommandHook(t, cmdHook{Event: "Elicitation", Command: writeScript(t, dir, "hook.sh", tc.script), Dialect: DialectClaude, FailClosed: tc.failClosed})
			got, err := h.Elicitation(context.Background(), accountQuestion(hooks.Session{SessionID: "s", WorkspaceRoot: dir}, "crm"))
			if got.Action != tc.wantAction || !strings.Contains(got.Reason, tc.wantReason) || !reflect.DeepEqual(got.Content, tc.wantContent) {
				t.Errorf("answer = %+v, want action %q, reason containing %q, content %v", got, tc.wantAction, tc.wantReason, tc.wantContent)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// A hook's error is recorded in its decision and leaves the question to a
// person.
func TestElicitationHookErrorIsRecordedWithoutOpinion(t *testing.T) {
	dir := t.TempDir()
	r := hooks.NewRegistry()
	r.Add(newCommandHook(t, cmdHook{Event: "Elicitation", Command: writeScript(t, dir, "broken.sh", `echo '{oops'; echo 'not json either}'`), Dialect: DialectClaude}))
	sum := r.RunElicitation(context.Background(), accountQuestion(hooks.Session{SessionID: "s", WorkspaceRoot: dir}, "crm"))
	if sum.Answer != nil {
		t.Errorf("answer = %+v, want none", sum.Answer)
	}
	if len(sum.Decisions) != 1 || !strings.Contains(sum.Decisions[0].Error, "hook JSON") {
		t.Errorf("decisions = %+v, want the hook's error recorded", sum.Decisions)
	}
}

func TestElicitationHTTPHook(t *testing.T) {
	srv := newPolicyServer(t, func(w http.ResponseWriter, body map[string]any) {
		if body["mcp_server_name"] == "crm" {
			_, _ = io.WriteString(w, `{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"account": "acme"}}}`)
			return
		}
		http.Error(w, "unknown server", http.StatusNotFound)
	})
	h := httpHook(t, srv.URL, loopbackPolicy(), func(c *HTTPHookConfig) { c.Event = "Elicitation" })
	dir := t.TempDir()
	s := hooks.Session{SessionID: "s", WorkspaceRoot: dir}

	got, err := h.Elicitation(context.Background(), accountQuestion(s, "crm"))
	if err != nil || got.Action != hooks.ElicitAccept || !reflect.DeepEqual(got.Content, map[string]any{"account": "acme"}) {
		t.Errorf("crm: answer %+v, err %v, want accept with account acme", got, err)
	}
	got, err = h.Elicitation(context.Background(), accountQuestion(s, "docs"))
	if err == nil || !strings.Contains(err.Error(), "404") || got.Action != "" {
		t.Errorf("docs: answer %+v, err %v, want a non-blocking error without opinion", got, err)
	}

	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.bodies) != 2 {
		t.Fatalf("the endpoint got %d requests, want 2", len(srv.bodies))
	}
	body := srv.bodies[0]
	raw, _ := json.Marshal(body["requested_schema"])
	if body["hook_event_name"] != "Elicitation" || body["mode"] != "form" || body["message"] != "Which account should the invoice go to?" ||
		!strings.Contains(string(raw), `"account"`) {
		t.Errorf("request body = %v", body)
	}
}
