package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/redact"
)

// Secrets in the conversation are redacted before PrepareTurn records the
// messages (in history or the context store); the assignment itself is
// left as the kernel sent it.
func TestPrepareTurnRedactsContextMessages(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Xy7_", 10)
	as := contract.Assignment{
		AgentContext: contract.AgentContext{Profile: "main"},
		ContextMessages: []contract.Message{
			{Role: contract.RoleUser, Content: "use " + key + " and AKIAIOSFODNN7EXAMPLE; PWD=/home/me"},
			{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{CallID: "c1", ToolName: "exec_command",
				Arguments: map[string]any{"command_line": "psql postgres://app:Sup3rS3cret@db/app", "argv": []any{"x"}}}}},
		},
	}
	a := &Activities{Redactor: redact.Default(), InlineLimit: 1 << 20}
	res, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: as})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, m := range res.Messages.Messages {
		all.WriteString(m.Content)
		for _, c := range m.ToolCalls {
			all.WriteString(c.Arguments["command_line"].(string))
		}
	}
	got := all.String()
	for _, secret := range []string{key, "AKIAIOSFODNN7EXAMPLE", "Sup3rS3cret"} {
		if strings.Contains(got, secret) {
			t.Errorf("PrepareTurn's messages hold %q: %s", secret, got)
		}
	}
	if !strings.Contains(got, "PWD=/home/me") {
		t.Errorf("PWD was redacted: %s", got)
	}
	if res.Trace.Get("context_redactions") != 3 {
		t.Errorf("trace context_redactions = %v, want 3", res.Trace.Get("context_redactions"))
	}
	if !strings.Contains(as.ContextMessages[0].Content, key) || !strings.Contains(as.ContextMessages[1].ToolCalls[0].Arguments["command_line"].(string), "Sup3rS3cret") {
		t.Error("the assignment's own messages were modified")
	}
}
