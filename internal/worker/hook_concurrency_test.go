package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/hooks"
)

// TestHookConcurrencyReachesTheRegistry loads three PreToolUse command
// hooks that each note how many of them are running at once, and runs the
// event with the default and with FENIX_HOOK_CONCURRENCY=1: together, some
// hook sees the others running; in turn, none does.
func TestHookConcurrencyReachesTheRegistry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		wantOverlap bool
	}{{"default", 0, true}, {"in turn", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			running := filepath.Join(dir, "running")
			if err := os.Mkdir(running, 0o755); err != nil {
				t.Fatal(err)
			}
			var handlers []any
			for i := range 3 {
				// Each hook marks itself running, waits long enough for the
				// others to start if they run together, counts the marks
				// and leaves.
				script := filepath.Join(dir, fmt.Sprintf("hook%d.sh", i))
				body := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\ntouch %[1]s/%[2]d\nsleep 0.3\nls %[1]s | wc -l > %[3]s/seen%[2]d\nrm %[1]s/%[2]d\n", running, i, dir)
				if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
				handlers = append(handlers, map[string]any{"type": "command", "command": script})
			}
			settings, err := json.Marshal(map[string]any{"hooks": map[string]any{
				"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": handlers}}}})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "settings.json")
			if err := os.WriteFile(file, settings, 0o644); err != nil {
				t.Fatal(err)
			}
			store, err := audit.OpenSQLite(context.Background(), filepath.Join(dir, "audit.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			r, err := PolicyHooks(Config{HooksFile: file, HookConcurrency: tc.concurrency}, store)
			if err != nil {
				t.Fatal(err)
			}
			res := r.RunPreToolUse(context.Background(), hooks.PreToolUseEvent{ToolName: "exec_command",
				ToolInput: map[string]any{"command_line": "true"}, Session: hooks.Session{WorkspaceRoot: dir}})
			if res.Blocked() {
				t.Fatalf("blocked: %+v", res.Action)
			}
			most := 0
			for i := range 3 {
				raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("seen%d", i)))
				if err != nil {
					t.Fatalf("hook %d did not run: %v", i, err)
				}
				var n int
				if _, err := fmt.Sscan(strings.TrimSpace(string(raw)), &n); err != nil {
					t.Fatal(err)
				}
				most = max(most, n)
			}
			if overlap := most > 1; overlap != tc.wantOverlap {
				t.Errorf("HookConcurrency %d: at most %d hooks running at once, want overlap %v", tc.concurrency, most, tc.wantOverlap)
			}
		})
	}
}
