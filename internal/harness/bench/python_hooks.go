package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// Python hook scenarios: exec_command `true` in a project whose
// .claude/settings.json runs four python hooks, as a real project's do (a
// guard, a secret scan and a command log on PreToolUse for Bash, an
// output check on PostToolUse), served by a worker that runs an event's
// hooks in turn (FENIX_HOOK_CONCURRENCY=1: what Fenix did before hooks of
// one event ran together) and by one with the default, together.
const (
	ScenarioPythonHooksInTurn   = "fenix exec_command true, 4 python hooks in turn (fast)"
	ScenarioPythonHooksTogether = "fenix exec_command true, 4 python hooks together (fast)"
	pythonHooksInTurnQueue      = "bench-python-hooks-in-turn"
	pythonHooksTogetherQueue    = "bench-python-hooks-together"
	// pythonPreHooks and pythonPostHooks are how many of the project's
	// hooks each run must show in its trace.
	pythonPreHooks, pythonPostHooks = 3, 1
	commandLogFile                  = "commands.jsonl"
)

func pythonHookScenarios() []scenario {
	return []scenario{
		{name: ScenarioPythonHooksInTurn, floor: ScenarioBare1, run: pythonHooksAssignment(pythonHooksInTurnQueue)},
		{name: ScenarioPythonHooksTogether, floor: ScenarioBare1, run: pythonHooksAssignment(pythonHooksTogetherQueue)},
	}
}

// pythonHooksAssignment runs exec_command `true` on queue and checks that
// every hook of the project ran: three PreToolUse hooks and one
// PostToolUse hook in the run's trace, none of them failing.
func pythonHooksAssignment(queue string) func(context.Context, client.Client) (client.WorkflowRun, error) {
	return func(ctx context.Context, c client.Client) (client.WorkflowRun, error) {
		id := nextID("bench-python-hooks")
		a := baseAssignment(id, "exec_command")
		a["tool_call"] = execCall()
		a["execution"] = map[string]any{"stages": stagesFast}
		run, res, err := runFenixOn(ctx, c, queue, workflows.ExecuteAssignmentWorkflow, id, a)
		if err != nil {
			return run, err
		}
		for stage, want := range map[string]int{"pre_tool_use": pythonPreHooks, "post_tool_use": pythonPostHooks} {
			if got := commandHooksRan(res.Trace, stage); got != want {
				return run, fmt.Errorf("%s: %d python hooks ran on %s, want %d (trace %+v)", id, got, stage, want, res.Trace)
			}
		}
		return run, nil
	}
}

// commandHooksRan counts the settings file's hooks in a stage's trace
// entry that answered without an error.
func commandHooksRan(trace []contract.TraceEntry, stage string) int {
	n := 0
	for _, e := range trace {
		if e.Hook != stage {
			continue
		}
		raw, err := json.Marshal(e.Fields["hooks"])
		if err != nil {
			return -1
		}
		var ran []struct {
			Hook, Kind, Error string
		}
		if json.Unmarshal(raw, &ran) != nil {
			return -1
		}
		for _, h := range ran {
			if strings.Contains(h.Hook, ".py") && h.Error == "" && h.Kind != "error" {
				n++
			}
		}
	}
	return n
}

// PythonHooksProject writes a project directory whose .claude/settings.json
// runs four python hooks with python, and returns it. The scripts are
// written as users write them: json.load from stdin, exit 2 with a reason
// on stderr to block, JSON on stdout for a decision or context.
func PythonHooksProject(dir, python string) (string, error) {
	project := filepath.Join(dir, "python-hooks-project")
	hooksDir := filepath.Join(project, ".claude", "hooks")
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		return "", err
	}
	for name, body := range pythonHookScripts {
		if err := os.WriteFile(filepath.Join(hooksDir, name), []byte(body), 0o755); err != nil {
			return "", err
		}
	}
	command := func(script string) map[string]any {
		return map[string]any{"type": "command", "command": python + ` "$CLAUDE_PROJECT_DIR"/.claude/hooks/` + script, "timeout": 10}
	}
	settings := map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{
			map[string]any{"matcher": "Bash", "hooks": []any{command("guard_bash.py"), command("log_commands.py")}},
			map[string]any{"matcher": "Bash|Write|Edit", "hooks": []any{command("scan_secrets.py")}},
		},
		"PostToolUse": []any{
			map[string]any{"matcher": "Bash", "hooks": []any{command("check_output.py")}},
		},
	}}
	raw, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return "", err
	}
	return project, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), raw, 0o644)
}

// CommandsLogged counts the lines the project's log_commands.py hook
// wrote: one per governed command, whichever worker ran it.
func CommandsLogged(project string) (int, error) {
	f, err := os.Open(filepath.Join(project, ".claude", "logs", commandLogFile))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
	}
	return n, nil
}

// Python finds the interpreter python hooks run with: Debian's
// /usr/bin/python3 when present (a pyenv shim on PATH is a bash script
// that costs about 0.3 s before python starts), else python3 on PATH;
// ok is false without one.
func Python() (path string, ok bool) {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3", true
	}
	path, err := exec.LookPath("python3")
	return path, err == nil
}

// PythonStartup is the p50 of n runs of `python -c 'import json, re, sys'`:
// what each hook pays before its first line.
func PythonStartup(ctx context.Context, python string, n int) (time.Duration, error) {
	var took []time.Duration
	for range n {
		start := time.Now()
		if out, err := exec.CommandContext(ctx, python, "-c", "import json, re, sys").CombinedOutput(); err != nil {
			return 0, fmt.Errorf("%s: %v: %s", python, err, out)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2], nil
}

var pythonHookScripts = map[string]string{
	"guard_bash.py": `#!/usr/bin/env python3
"""Blocks destructive shell commands before they run."""
import json
import re
import sys

DANGEROUS = [
    (r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*\s+(/|~|\$HOME)(\s|$)", "recursive delete of / or the home directory"),
    (r"\bcurl\b[^|]*\|\s*(ba)?sh\b", "a download piped into a shell"),
    (r"\bgit\s+push\b.*\s--force\b", "a force push"),
    (r"\bchmod\s+-R\s+777\b", "a world-writable tree"),
]


def main():
    data = json.load(sys.stdin)
    command = data.get("tool_input", {}).get("command", "")
    for pattern, why in DANGEROUS:
        if re.search(pattern, command):
            print(f"Blocked {why}: {command}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
`,
	"log_commands.py": `#!/usr/bin/env python3
"""Appends every shell command the agent runs to .claude/logs/` + commandLogFile + `."""
import datetime
import json
import os
import sys

data = json.load(sys.stdin)
log_dir = os.path.join(os.environ.get("CLAUDE_PROJECT_DIR", "."), ".claude", "logs")
os.makedirs(log_dir, exist_ok=True)
entry = {
    "at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    "session": data.get("session_id"),
    "cwd": data.get("cwd"),
    "command": data.get("tool_input", {}).get("command"),
}
with open(os.path.join(log_dir, "` + commandLogFile + `"), "a") as log:
    log.write(json.dumps(entry) + "\n")
`,
	"scan_secrets.py": `#!/usr/bin/env python3
"""Denies tool calls whose input carries a credential."""
import json
import re
import sys

PATTERNS = {
    "an AWS access key": r"AKIA[0-9A-Z]{16}",
    "a GitHub token": r"gh[pousr]_[A-Za-z0-9]{36}",
    "a private key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
}

data = json.load(sys.stdin)
text = json.dumps(data.get("tool_input", {}))
for name, pattern in PATTERNS.items():
    if re.search(pattern, text):
        json.dump({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"The input holds {name}; use the secret store instead.",
        }}, sys.stdout)
        break
`,
	"check_output.py": `#!/usr/bin/env python3
"""Tells the model when a command failed or wrote to stderr."""
import json
import sys

data = json.load(sys.stdin)
response = data.get("tool_response") or {}
if not isinstance(response, dict):
    sys.exit(0)
stderr = (response.get("stderr") or "").strip()
if response.get("interrupted") or stderr:
    json.dump({"hookSpecificOutput": {
        "hookEventName": "PostToolUse",
        "additionalContext": "The command wrote to stderr: " + stderr[:500],
    }}, sys.stdout)
`,
}
