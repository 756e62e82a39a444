package activities

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/tools"
)

// turnModel answers each model turn with the next of its answers, and
// keeps the requests.
type turnModel struct {
	answers  []contract.Message
	requests []llm.Request
}

func (m *turnModel) Name() string { return "turns" }

func (m *turnModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	m.requests = append(m.requests, req)
	if len(m.answers) == 0 {
		return llm.Response{Message: contract.Message{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{CallID: "again", ToolName: "workspace_list", Arguments: map[string]any{"path": "."}}}}}, nil
	}
	next := m.answers[0]
	m.answers = m.answers[1:]
	next.Role = contract.RoleAssistant
	return llm.Response{Message: next}, nil
}

func read(id, path string) contract.Message {
	return contract.Message{ToolCalls: []contract.ToolCall{{CallID: id, ToolName: "workspace_read", Arguments: map[string]any{"path": path}}}}
}

// An agent hook's model reads the workspace before it decides, through
// the same confinement and permission rules as the agent's own reads, and
// with nothing that writes.
func TestHookAgentReadsTheWorkspaceBeforeItDecides(t *testing.T) {
	root, registry := denyRulesWorkspace(t, map[string]string{"TEST_REPORT": "42 passed, 0 failed\n"}, ".env", "env-link")
	model := &turnModel{answers: []contract.Message{
		read("r1", "TEST_REPORT"),
		read("r2", ".env"),
		read("r3", "env-link"),
		read("r4", "../../etc/passwd"),
		{ToolCalls: []contract.ToolCall{{CallID: "w1", ToolName: "workspace_write", Arguments: map[string]any{"path": "x", "content": "y"}}}},
		{Content: `{"ok": true}`},
	}}
	agent := &HookAgent{Model: "judge"}
	agent.Bind(&Activities{Tools: tools.Builtin(), Model: model, Hooks: registry})
	answer, err := agent.EvaluateAgent(context.Background(), "haiku", "Did the tests pass? {}", root)
	if err != nil || answer != `{"ok": true}` {
		t.Fatalf("answer = %q, %v", answer, err)
	}
	first := model.requests[0]
	if first.Model != "judge" || first.Messages[0].Content != llm.HookAgentSystem || first.Messages[1].Content != "Did the tests pass? {}" {
		t.Errorf("first request = %+v", first)
	}
	var offered []string
	for _, s := range first.Tools {
		offered = append(offered, s.Name)
	}
	slices.Sort(offered)
	if strings.Join(offered, ",") != "workspace_list,workspace_read,workspace_search" {
		t.Errorf("tools offered = %v, want the three read-only workspace tools", offered)
	}
	results := map[string]string{}
	for _, m := range model.requests[len(model.requests)-1].Messages {
		if m.Role == contract.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	if !strings.Contains(results["r1"], "42 passed") {
		t.Errorf("TEST_REPORT read = %q", results["r1"])
	}
	for _, id := range []string{"r2", "r3", "r4"} {
		if !strings.HasPrefix(results[id], "error: ") || strings.Contains(results[id], "hunter2") {
			t.Errorf("%s = %q, want a refusal without the secret", id, results[id])
		}
	}
	if !strings.Contains(results["w1"], `tool "workspace_write" is not available to a hook`) {
		t.Errorf("write = %q, want it refused", results["w1"])
	}
}

func TestHookAgentStopsAfterItsTurns(t *testing.T) {
	model := &turnModel{}
	agent := &HookAgent{}
	agent.Bind(&Activities{Tools: tools.Builtin(), Model: model})
	_, err := agent.EvaluateAgent(context.Background(), "", "loop forever", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no decision after 20 model turns") || len(model.requests) != HookAgentMaxTurns {
		t.Fatalf("err = %v after %d requests, want a bounded failure", err, len(model.requests))
	}
	var unbound HookAgent
	if _, err := unbound.EvaluateAgent(context.Background(), "", "x", ""); err == nil {
		t.Error("a hook agent without a model must fail, not decide")
	}
}

// The agent writes what an agent hook's model reads, and can ask it, in
// that text, to read the worker's own files and quote them in its reason,
// which reaches the agent. The hook's reads keep out of the worker's
// private files (a workspace of the worker's home holds its data
// directory and Temporal configuration) as the agent's own do.
func TestHookAgentDoesNotReadTheWorkersPrivateFiles(t *testing.T) {
	root, registry := denyRulesWorkspace(t, map[string]string{".config/temporalio/temporal.toml": "api_key = \"tmprl-secret\"\n"}, ".env", "env-link")
	model := &turnModel{answers: []contract.Message{
		read("r1", ".config/temporalio/temporal.toml"),
		{Content: `{"ok": true}`},
	}}
	agent := &HookAgent{Model: "judge"}
	agent.Bind(&Activities{Tools: tools.Builtin(), Model: model, Hooks: registry, Private: []string{root + "/.config/temporalio/temporal.toml"}})
	if _, err := agent.EvaluateAgent(context.Background(), "haiku", "Review {}", root); err != nil {
		t.Fatal(err)
	}
	for _, m := range model.requests[len(model.requests)-1].Messages {
		if m.Role == contract.RoleTool && m.ToolCallID == "r1" && (!strings.Contains(m.Content, "private_path") && !strings.Contains(m.Content, "worker's own") || strings.Contains(m.Content, "tmprl")) {
			t.Errorf("the hook's model read the worker's key: %q", m.Content)
		}
	}
}
