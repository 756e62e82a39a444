package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/tools"
)

// A fleet's settings file (outside every workspace) whose guard is each
// workspace's own script has that script's directory pinned in each
// workspace. It used to be pinned at the hook's first run there: a tool
// call the guard does not match came first and changed what would be
// pinned — here workspace_write empties the blocklist beside the guard
// (only the guard itself is protected) before the first exec_command, and
// the guard then pinned and ran with the empty list. The first tool call
// in a workspace pins every such hook's scripts before the tool runs.
func TestFleetGuardIsPinnedBeforeTheFirstToolInAWorkspaceRuns(t *testing.T) {
	fleet := filepath.Join(t.TempDir(), "fleet", "settings.json")
	if err := os.MkdirAll(filepath.Dir(fleet), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fleet, []byte(`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/policy/guard.sh", "onFailure": "block"}]}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "workspace")
	for rel, body := range map[string]string{
		"policy/guard.sh":      "#!/bin/sh\ninput=$(cat)\nwhile read -r word; do case \"$input\" in *\"$word\"*) echo \"policy: $word is blocked\" >&2; exit 2;; esac; done < \"$(dirname \"$0\")/blocklist.txt\"\nexit 0\n",
		"policy/blocklist.txt": "rm -rf\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	store, err := claudecode.OpenScriptStore(filepath.Join(t.TempDir(), "hook-scripts"))
	if err != nil {
		t.Fatal(err)
	}
	sources, err := claudecode.LoadSources([]string{fleet}, claudecode.LoadOptions{Scripts: store})
	if err != nil {
		t.Fatal(err)
	}
	registry := hooks.NewRegistry()
	for _, s := range sources {
		registry.AddSource(s.Registered())
	}
	a := &Activities{Tools: tools.Builtin(), Hooks: registry, DefaultWorkspaceRoot: ws}

	// The agent's first call: one the Bash guard does not look at.
	_, err = a.ExecuteTool(context.Background(), ExecuteToolInput{WorkspaceRoot: ws, ToolCall: contract.ToolCall{CallID: "c1",
		ToolName: "workspace_write", Arguments: map[string]any{"path": "policy/blocklist.txt", "content": "nothing\n"}}})
	if err != nil {
		t.Fatalf("workspace_write of the blocklist: %v", err)
	}
	res := registry.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{Session: hooks.Session{SessionID: "s", WorkspaceRoot: ws},
		ToolName: "exec_command", CallID: "c2", ToolInput: map[string]any{"command_line": "rm -rf ./src"}})
	if !res.Blocked() || !strings.Contains(res.Action.Reason, "policy: rm -rf is blocked") {
		t.Fatalf("rm -rf after the agent emptied the guard's blocklist: %+v, want the guard's block", res)
	}
}
