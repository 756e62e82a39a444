package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/worker"
)

// guardScript is a python guard as projects write them: it reads the event
// from stdin, looks at the command and lets it through.
const guardScript = `import json, sys
event = json.load(sys.stdin)
command = (event.get("tool_input") or {}).get("command", "")
if "rm -rf /" in command:
    print("refusing a recursive delete of /", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
`

// hookProject writes a .claude/settings.json whose events each run the
// given number of python guards.
func hookProject(t *testing.T, events map[string]int, command string) string {
	t.Helper()
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "hooks", "guard.py"), []byte(guardScript), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "README.md"), []byte("# demo\n"), 0o644))
	settings := map[string]any{}
	for ev, n := range events {
		var handlers []map[string]any
		for i := range n {
			// Distinct arguments, so identical-handler deduplication keeps all n.
			handlers = append(handlers, map[string]any{"type": "command",
				"command": fmt.Sprintf(command, i)})
		}
		group := map[string]any{"hooks": handlers}
		if ev == "PreToolUse" || ev == "PostToolUse" {
			group["matcher"] = "Bash"
		}
		settings[ev] = []any{group}
	}
	raw, err := json.MarshalIndent(map[string]any{"hooks": settings}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), raw, 0o644))
	return project
}

// TestExecCommandLatencyWithHooks measures `exec_command true` end to end
// (workflow start to result) on the dev server, with no hooks and with
// python hook projects, and logs the medians (go test -v). It checks only
// that every run completes; the numbers are for the report. Runs:
// FENIX_HOOK_LATENCY_N (default 15) per configuration.
func TestExecCommandLatencyWithHooks(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; the hook projects are python3 scripts")
	}
	n := 15
	if v, err := strconv.Atoi(os.Getenv("FENIX_HOOK_LATENCY_N")); err == nil && v > 0 {
		n = v
	}
	const python = `python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.py %d`
	// A hook that waits on something (a lint server, a network check)
	// rather than on the CPU.
	const waiting = `bash -c 'cat >/dev/null; sleep 0.1' guard-%d`
	configs := []struct {
		name, command string
		events        map[string]int
	}{
		{"no hooks", "", nil},
		{"4 python PreToolUse hooks", python, map[string]int{"PreToolUse": 4}},
		{"python SessionStart+PreToolUse+PostToolUse+SessionEnd", python, map[string]int{"SessionStart": 1, "PreToolUse": 1, "PostToolUse": 1, "SessionEnd": 1}},
		{"4 bash PreToolUse hooks waiting 100 ms", waiting, map[string]int{"PreToolUse": 4}},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			project := hookProject(t, cfg.events, cfg.command)
			w := startWorker(t, func(c *worker.Config) {
				if cfg.events != nil {
					c.HookSources = []string{project}
				}
				c.DefaultWorkspaceRoot = project
			})
			var took []time.Duration
			for i := range n + 1 {
				a := assignment(fmt.Sprintf("lat-%d", i), map[string]any{"call_id": "c", "tool_name": "exec_command",
					"arguments": map[string]any{"command_line": "true"}}, "exec_command")
				a["workspace_root"] = project
				start := time.Now()
				res, _ := runAssignment(t, w.queue, a)
				d := time.Since(start)
				require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
				if i > 0 { // the first run warms the worker's caches
					took = append(took, d)
				}
			}
			slices.Sort(took)
			t.Logf("exec_command true, %s: median %v, p90 %v over %d runs", cfg.name,
				took[len(took)/2].Round(time.Millisecond), took[len(took)*9/10].Round(time.Millisecond), len(took))
		})
	}
}
