package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/tools"
)

// The permission rules judge a call's path at review, through the
// symlinks as they are then. A process the agent left running can
// repoint a link before ExecuteTool opens it; the open is judged again on
// where the link leads at that moment, and the denied file is neither
// read nor written.
func TestOpensAreJudgedWhereTheirLinksLeadAtTheOpen(t *testing.T) {
	ws := t.TempDir()
	for rel, body := range map[string]string{".env": "API_KEY=hunter2\n", "notes.txt": "notes\n", "secrets/key.pem": "KEY\n", "out.txt": "out\n",
		".claude/settings.json": `{"permissions": {"deny": ["Read(./.env)", "Edit(./secrets)"]}}`} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"notes": "notes.txt", "out": "out.txt"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	sources, err := claudecode.LoadSources([]string{ws}, claudecode.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	policy := claudecode.NewPermissions(sources)
	registry := hooks.NewRegistry()
	registry.SetPermissionPolicy(policy)
	a := &Activities{Tools: tools.Builtin(), Hooks: registry, DefaultWorkspaceRoot: ws}
	denied := func(err error) bool {
		return err != nil && fenixerr.FromTemporal(err).Type == fenixerr.TypePermissionDenied
	}
	run := func(tool string, args map[string]any) (string, error) {
		res, err := a.ExecuteTool(context.Background(), ExecuteToolInput{WorkspaceRoot: ws, ToolCall: contract.ToolCall{CallID: "c1", ToolName: tool, Arguments: args}})
		return string(res.Raw), err
	}
	review := func(tool, path string) hooks.Kind {
		ev := hooks.PreToolUseEvent{ToolName: tool, ToolInput: map[string]any{"path": path}}
		ev.WorkspaceRoot = ws
		return policy.Evaluate(ev, false).Decision
	}
	repoint := func(link, target string) {
		t.Helper()
		if err := os.Remove(filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}

	// At review, notes and out lead to harmless files.
	if d := review("workspace_read", "notes"); d == hooks.KindDeny {
		t.Fatalf("review of reading notes: %s, want it not denied", d)
	}
	if d := review("workspace_write", "out"); d == hooks.KindDeny {
		t.Fatalf("review of writing out: %s, want it not denied", d)
	}
	repoint("notes", ".env")
	repoint("out", "secrets/key.pem")

	raw, err := run("workspace_read", map[string]any{"path": "notes"})
	if !denied(err) || !strings.Contains(err.Error(), `"notes"`) || !strings.Contains(err.Error(), `".env"`) || strings.Contains(raw, "hunter2") {
		t.Errorf("read notes (now -> .env) = %s, %v: want a permission denial naming both paths", raw, err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"workspace_write", map[string]any{"path": "out", "content": "pwned\n"}},
		{"workspace_edit", map[string]any{"path": "out", "old_string": "KEY", "new_string": "pwned"}},
	} {
		if _, err := run(c.tool, c.args); !denied(err) {
			t.Errorf("%s out (now -> secrets/key.pem): %v, want a permission denial", c.tool, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "secrets/key.pem")); string(b) != "KEY\n" {
		t.Errorf("secrets/key.pem = %q, want it unchanged", b)
	}
	// PreToolUse recorded where out led; a write through it, repointed at
	// a file no rule covers, is refused all the same.
	repoint("out", "out.txt")
	reached := a.reachedPath(ws, "workspace_write", map[string]any{"path": "out"})
	if reached != "out.txt" {
		t.Fatalf("reachedPath(out) = %q, want out.txt", reached)
	}
	repoint("out", "notes.txt")
	res, err := a.ExecuteTool(context.Background(), ExecuteToolInput{WorkspaceRoot: ws, ReachedPath: reached,
		ToolCall: contract.ToolCall{CallID: "c2", ToolName: "workspace_write", Arguments: map[string]any{"path": "./out", "content": "pwned\n"}}})
	if fe := fenixerr.FromTemporal(err); err == nil || fe.Code != "path_changed" {
		t.Errorf("write out (judged -> out.txt, now -> notes.txt) = %s, %v: want path_changed", res.Raw, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "notes\n" {
		t.Errorf("notes.txt = %q, want it unchanged", b)
	}

	// What the rules allow still goes through links.
	repoint("notes", "notes.txt")
	if raw, err := run("workspace_read", map[string]any{"path": "notes"}); err != nil || !strings.Contains(raw, "notes") {
		t.Errorf("read notes (-> notes.txt) = %s, %v", raw, err)
	}
	if _, err := run("workspace_write", map[string]any{"path": "notes", "content": "new\n"}); err != nil {
		t.Errorf("write notes (-> notes.txt): %v", err)
	}
}
