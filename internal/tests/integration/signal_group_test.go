package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/worker"
)

// An agent used to Claude Code starts a dev server in one call and, in a
// later one, reloads or stops it the way it always does: `kill -HUP
// $(cat app.pid)`. With signals scoped to each command that was refused
// ("Operation not permitted"). A conversation's commands and services now
// share a domain in their workspace, so its own service is reached, while
// another conversation's commands still cannot touch it — nor the
// project's guard, which keeps blocking.
func TestAConversationReachesItsOwnService(t *testing.T) {
	if confine.ABIVersion() < 6 {
		t.Skip("the kernel's Landlock does not scope signals (ABI 6)")
	}
	project := policyGuardProject(t)
	w := startWorker(t, inProject(project))
	dev := conversationRunner(w, project, "signal-dev", "conv-dev")
	other := conversationRunner(w, project, "signal-other", "conv-other")

	// The service counts the reloads it gets and ends on TERM.
	res := dev(t, "process_exec", `echo $$ > app.pid; trap 'echo reload >> reloads.log' HUP; trap 'echo stopped > stopped.log; exit 0' TERM; while :; do sleep 0.1; done`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "app.pid"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the service runs")

	res = other(t, "exec_command", `kill -HUP $(cat app.pid) 2>&1; echo "rc=$?"`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "Operation not permitted", "another conversation cannot signal it")

	res = dev(t, "exec_command", `kill -HUP $(cat app.pid) && echo reloaded`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "reloaded")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(project, "reloads.log"))
		return strings.Count(string(b), "reload") == 1
	}, 10*time.Second, 50*time.Millisecond, "the service got exactly its own conversation's reload")

	// The guard is still out of the conversation's reach.
	res = dev(t, "exec_command", `pkill -9 -f 'policy-gua''rd' 2>&1; rm -rf ./scratch`)
	require.Equal(t, contract.StatusFailed, res.Status, "rm -rf ran: %+v", res.Output)
	assert.Contains(t, res.Error.LastErrorSummary, "rm -rf is not allowed")

	res = dev(t, "exec_command", `kill $(cat app.pid) && echo stop-sent`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "stop-sent")
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "stopped.log"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the service stopped on its own conversation's TERM")
}

// A hook runs the agent's code: a PostToolUse hook that runs the
// project's checks after every command runs whatever the agent wrote into
// them. That code used to signal every process of the worker's user: it
// could stop the worker (whose host-pinned calls then hang until their
// timeouts), an MCP server, or the guard. Each hook now signals only what
// it started; FENIX_HOOK_SIGNALS=any gives the reach back, for a hook that
// stops the agent's dev server.
func TestCodeAHookRunsCannotSignalTheWorkersProcesses(t *testing.T) {
	if confine.ABIVersion() < 6 {
		t.Skip("the kernel's Landlock does not scope signals (ABI 6)")
	}
	// Stands in for an MCP server or another hook: a process of the
	// worker's user that the worker started outside every domain.
	victim := exec.Command("sleep", "300")
	require.NoError(t, victim.Start())
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })

	checks := `kill -STOP $(cat victim.pid) 2>>signals.log && echo stopped-victim >> signals.log
kill -0 $(cat worker.pid) 2>>signals.log && echo reached-worker >> signals.log
echo checked >> signals.log
`
	for _, anywhere := range []bool{false, true} {
		project := writeClaudeProject(t, "", nil, `{"hooks": {"PostToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "cd \"$CLAUDE_PROJECT_DIR\" && if [ -f package.json ]; then npm test --silent; fi"}]}
]}}`)
		require.NoError(t, os.WriteFile(filepath.Join(project, "victim.pid"), []byte(strconv.Itoa(victim.Process.Pid)), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(project, "worker.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644))
		w := startWorker(t, inProject(project), func(c *worker.Config) { c.HostConfig.HookSignalsAnywhere = anywhere })
		run := commandRunner(w, project, "hook-signals")
		command := "mkdir -p scripts && cat > scripts/check.sh <<'EOF'\n" + checks + "EOF\n" +
			`echo '{"name": "app", "private": true, "scripts": {"test": "sh scripts/check.sh"}}' > package.json`
		if anywhere {
			// Only looks: a stopped victim would hold the rest of the test.
			command = strings.ReplaceAll(command, "-STOP", "-0")
		}
		res := run(t, "exec_command", command)
		require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
		log, err := os.ReadFile(filepath.Join(project, "signals.log"))
		require.NoError(t, err, "the PostToolUse hook ran the agent's checks")
		require.Contains(t, string(log), "checked")
		if anywhere {
			assert.Contains(t, string(log), "stopped-victim", "FENIX_HOOK_SIGNALS=any reaches the user's processes")
			assert.Contains(t, string(log), "reached-worker")
			continue
		}
		assert.NotContains(t, string(log), "stopped-victim")
		assert.NotContains(t, string(log), "reached-worker")
		assert.Equal(t, 2, strings.Count(string(log), "Operation not permitted"), "%s", log)
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", victim.Process.Pid))
		require.NoError(t, err)
		assert.NotContains(t, string(stat), ") T ", "the victim was stopped")
	}
}
