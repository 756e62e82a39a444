package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/hooks"
)

// A hook that answers a server's form in the user's place with what the
// form does not take is not taken: the question goes on to a person,
// and the hook's decision says why; an answer that fits is taken.
func TestAHooksAnswerMustFitTheServersForm(t *testing.T) {
	a, ws := hookActivities(t, `{"hooks": {"Elicitation": [{"matcher": "crm", "hooks": [{"type": "command",
  "command": "cat >/dev/null; printf '{\"hookSpecificOutput\":{\"hookEventName\":\"Elicitation\",\"action\":\"accept\",\"content\":{\"limit\":%s}}}' \"$(cat \"$CLAUDE_PROJECT_DIR\"/limit)\""}]}]}}`)
	schema := map[string]any{"type": "object", "properties": map[string]any{"limit": map[string]any{"type": "integer", "minimum": 1}}}
	ask := func(limit string) ElicitationHooksResult {
		if err := os.WriteFile(filepath.Join(ws, "limit"), []byte(limit), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := a.RunElicitationHooks(context.Background(), ElicitationHooksInput{Elicitation: &hooks.ElicitationEvent{
			CallID: "call-1", ToolName: "mcp__crm__lookup", ServerName: "crm", Message: "How many?", Mode: hooks.ElicitModeForm, RequestedSchema: schema}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := ask("5"); res.Summary.Answer == nil || res.Summary.Answer.Action != "accept" {
		t.Fatalf("a fitting answer was not taken: %+v", res.Summary)
	}
	res := ask("0")
	if res.Summary.Answer != nil {
		t.Fatalf("an answer under the form's minimum was taken: %+v", res.Summary.Answer)
	}
	if len(res.Summary.Decisions) != 1 || !strings.Contains(res.Summary.Decisions[0].Error, `does not match the form of MCP server "crm"`) {
		t.Fatalf("decisions = %+v", res.Summary.Decisions)
	}
}
