package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// The official "everything" server's trigger-elicitation-request tool
// asks its client's user to fill a form in the middle of the call (it
// offers the tool only to clients that support elicitation). Through
// Fenix: the project's Elicitation hook (a user's script) has no opinion
// the first time, so the question waits in the run's inbox; a person
// answers the form, the server gets the answer with the schema's
// defaults filled in and the ElicitationResult and Notification hooks
// heard of it. The second time the hook answers in the user's place.
func TestMCPServersQuestionsReachTheRunsInbox(t *testing.T) {
	servers := mcpservers.Require(t)
	project := t.TempDir()
	mcpJSON := `{"mcpServers": {"everything": {"command": "node", "args": [` + quote(servers.Entry("server-everything")) + `, "stdio"]}}}`
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(mcpJSON), 0o644))
	hooksDir := filepath.Join(project, ".claude", "hooks")
	require.NoError(t, os.MkdirAll(hooksDir, 0o755))
	// A team's policy: forms from "everything" are filled from a file the
	// team keeps, when it has one; otherwise a person answers.
	require.NoError(t, os.WriteFile(filepath.Join(hooksDir, "fill-form.sh"), []byte(`#!/bin/sh
input=$(cat)
printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/elicitations.jsonl"
if [ -f "$CLAUDE_PROJECT_DIR/.claude/form-answers.json" ]; then
  printf '{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept","content":%s}}' "$(cat "$CLAUDE_PROJECT_DIR/.claude/form-answers.json")"
fi
exit 0
`), 0o755))
	settings := `{"permissions": {"allow": ["mcp__everything"]}, "hooks": {
  "Elicitation": [{"matcher": "everything", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/fill-form.sh"}]}],
  "ElicitationResult": [{"hooks": [{"type": "command", "command": "cat >> \"$CLAUDE_PROJECT_DIR\"/results.jsonl; echo >> \"$CLAUDE_PROJECT_DIR\"/results.jsonl"}]}],
  "Notification": [{"matcher": "elicitation_dialog", "hooks": [{"type": "command", "command": "cat >> \"$CLAUDE_PROJECT_DIR\"/notifications.jsonl"}]}]}}`
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(settings), 0o644))
	w := startWorker(t, func(c *worker.Config) {
		c.HookSources = []string{project}
		c.DefaultWorkspaceRoot = project
	})
	require.NotNil(t, w.MCP())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.MCP().WaitReady(ctx))
	const tool = "mcp__everything__trigger-elicitation-request"
	require.Contains(t, mcpStatus(w, "everything").Tools, tool, "the server offers the tool to a client that supports elicitation")

	call := func(name string) waitingCall {
		a := mcpCall(name, tool, map[string]any{}, "mcp__everything")
		a["workspace_root"] = project
		return startWaitingCall(t, w.queue, name, a)
	}

	// A person answers.
	c := call("person")
	q := c.awaitOne("the server's question waits in the inbox")
	assert.Equal(t, "call-person/elicitation/1", q.CallID)
	assert.Equal(t, "elicitation: everything", q.Permission)
	assert.Equal(t, "Please provide inputs for the following fields:", q.Arguments["message"])
	assert.Contains(t, q.Arguments["requested_schema"], "properties")
	// An answer that breaks the form is refused, and can be given again.
	err := tryDecide(c.run, workflows.PermissionDecision{CallID: q.CallID, Decision: workflows.DecisionAllow, DecidedBy: "ana",
		Content: map[string]any{"integer": 1000}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not match the form")
	c.decide(workflows.PermissionDecision{CallID: q.CallID, Decision: workflows.DecisionAllow, DecidedBy: "ana",
		Content: map[string]any{"name": "Ada Lovelace", "check": true}})
	res := c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "User provided the requested information")
	assert.Contains(t, res.Output.Content, "- Name: Ada Lovelace")
	assert.Contains(t, res.Output.Content, "- Favorite Integer: 42", "the schema's defaults fill what the person left out")
	e, decided := decisionEntry(res, q.CallID)
	require.True(t, decided, "the answer is in the trace: %+v", res.Trace)
	assert.Equal(t, "ana", e.Get("decider"))
	asked := readFile(t, filepath.Join(project, "elicitations.jsonl"))
	assert.Contains(t, asked, `"hook_event_name":"Elicitation"`)
	assert.Contains(t, asked, `"mcp_server_name":"everything"`)
	assert.Contains(t, asked, `"requested_schema"`)
	results := readFile(t, filepath.Join(project, "results.jsonl"))
	assert.Contains(t, results, `"action":"accept"`)
	assert.Contains(t, results, `Ada Lovelace`)
	assert.Contains(t, readFile(t, filepath.Join(project, "notifications.jsonl")), `"notification_type":"elicitation_dialog"`)

	// The hook answers in the user's place: nobody is asked.
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "form-answers.json"), []byte(`{"name": "CI bot", "check": false}`), 0o644))
	c = call("hook")
	res = c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "- Name: CI bot")
	assert.Empty(t, c.pending())
	var byHook bool
	for _, e := range res.Trace {
		if e.Hook == activities.StageElicitation && e.Get("action") == "accept" {
			byHook = true
		}
	}
	assert.True(t, byHook, "the hook's answer is in the trace: %+v", res.Trace)
}

func quote(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}
