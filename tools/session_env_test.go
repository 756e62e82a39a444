package tools

import (
	"strings"
	"testing"
	"time"
)

// The lines a SessionStart hook wrote to $CLAUDE_ENV_FILE run in every
// command's own shell before the command: exports, a PATH built on the
// command's own, shell functions. The call's env still wins, and the
// recorded command line is the call's.
func TestCommandsRunTheSessionEnvironment(t *testing.T) {
	r := newRig(t)
	r.env.SessionEnv = "export NODE_ENV=production\nexport PATH=\"$PATH:/opt/session/bin\"\ngreet() { echo \"hello from $1\"; }\nexport QUOTED='it'\\''s'"
	_, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": `echo "$NODE_ENV|$QUOTED"; echo "$PATH"; greet fn; echo "args:$#"`})
	res := decode[ExecCommandResult](t, raw)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 4 || lines[0] != "production|it's" || !strings.HasSuffix(lines[1], ":/opt/session/bin") ||
		lines[2] != "hello from fn" || lines[3] != "args:0" {
		t.Fatalf("stdout = %q (stderr %q)", res.Stdout, res.Stderr)
	}
	if res.CommandLine != `echo "$NODE_ENV|$QUOTED"; echo "$PATH"; greet fn; echo "args:$#"` {
		t.Fatalf("recorded command line = %q", res.CommandLine)
	}

	_, raw = r.mustCall(t, "exec_command", map[string]any{"command_line": `echo "$NODE_ENV"`, "env": map[string]any{"NODE_ENV": "test's"}})
	if got := strings.TrimSpace(decode[ExecCommandResult](t, raw).Stdout); got != "test's" {
		t.Fatalf("with the call's env NODE_ENV = %q, want the call's", got)
	}

	r.env.SessionEnv = ""
	_, raw = r.mustCall(t, "exec_command", map[string]any{"command_line": `echo "[$NODE_ENV]"`})
	if got := strings.TrimSpace(decode[ExecCommandResult](t, raw).Stdout); got != "[]" {
		t.Fatalf("without a session environment NODE_ENV = %q", got)
	}
}

func TestServicesRunTheSessionEnvironment(t *testing.T) {
	r := newRig(t)
	r.env.SessionEnv = "export NODE_ENV=production"
	_, raw := r.mustCall(t, "process_exec", map[string]any{"command_line": `echo "service:$NODE_ENV"; sleep 30`})
	res := decode[ProcessExecResult](t, raw)
	defer r.call(t, "process_stop", map[string]any{"process_run_id": res.ProcessRunID})
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _ := r.mustCall(t, "process_list", map[string]any{"process_run_id": res.ProcessRunID, "include_output": true})
		if strings.Contains(p.Content, "service:production") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service's output never showed the session's NODE_ENV: %s", p.Content)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
