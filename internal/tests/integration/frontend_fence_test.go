package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/tools/browser"
	"github.com/fenixrt/fenix/workflows"
)

// TestAgentCannotApproveItselfThroughTheDevServer: the dev server (what
// `starter demo` and most first tries run) has no client authentication,
// and it listens on the worker's loopback. An agent whose `git push`
// waits for decide_permission sends the update itself — with the
// Temporal CLI, with a raw connection, through another loopback address
// or the unspecified one (0.0.0.0, ::, which Linux routes to the host),
// or a POST to the HTTP API on every port that listens on loopback (the
// dev server picks that one at random) — from a command, and from code a
// hook runs; each connection to the dev server is refused by the fence
// on the command's and the hook's cgroup, the push still waits, and the
// operator's answer (from the worker's side of the fence) ends it.
func TestAgentCannotApproveItselfThroughTheDevServer(t *testing.T) {
	_, port, err := net.SplitHostPort(server.HostPort)
	require.NoError(t, err)
	project := t.TempDir()
	probeLog := filepath.Join(project, "hook-probe.log")
	for path, content := range map[string]string{
		".claude/settings.json": `{"permissions": {"allow": ["Bash"], "ask": ["Bash(git push:*)"]},
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "bash \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/probe.sh"}]}]}}`,
		// A hook that runs what the agent can change (here directly: the
		// connection a git fsmonitor would open).
		".claude/hooks/probe.sh": fmt.Sprintf("#!/bin/bash\ncat >/dev/null\n"+
			"for a in 127.0.0.1 0.0.0.0; do if (exec 3<>/dev/tcp/$a/%s) 2>>%q; then echo hook-connected $a >>%q; else echo hook-refused $a >>%q; fi; done\nexit 0\n", port, probeLog, probeLog, probeLog),
	} {
		full := filepath.Join(project, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o755))
	}
	w := startWorker(t, inProject(project))

	push := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, fmt.Sprintf("fence-push-%d", time.Now().UnixNano()),
		assignment("fence-push", map[string]any{"call_id": "call-push", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "git push origin main"}}, "exec_command"))
	pending := awaitPermission(t, push)

	decision := fmt.Sprintf(`{"call_id": %q, "decision": "allow", "reason": "approved by the agent itself"}`, pending.CallID)
	probe := fmt.Sprintf(`T=%q; A=%q; P=%s
try() { name=$1; shift; out=$("$@" 2>&1); rc=$?; echo "$name rc=$rc $(printf %%s "$out" | tr '\n' ' ' | cut -c1-300)"; }
try cli-update "$T" workflow update execute --address "$A" --namespace %s --workflow-id %s --name decide_permission --input '%s' --command-timeout 5s
try raw-connect bash -c "exec 3<>/dev/tcp/127.0.0.1/$P"
try other-loopback bash -c "exec 3<>/dev/tcp/127.0.0.2/$P"
try ipv6-loopback bash -c "exec 3<>/dev/tcp/::1/$P"
# Linux takes a connect to the unspecified address as one to the host.
try unspecified bash -c "exec 3<>/dev/tcp/0.0.0.0/$P"
try unspecified-v6 bash -c "exec 3<>/dev/tcp/::/$P"
try cli-unspecified "$T" workflow update execute --address "0.0.0.0:$P" --namespace %s --workflow-id %s --name decide_permission --input '%s' --command-timeout 5s
# The dev server's HTTP API listens on a port of its own choosing: try
# every listening port on loopback.
for hex in $(awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 | sort -u); do
  p=$((16#$hex))
  try http-$p curl -sS --max-time 5 -X POST -d '{"request": {"meta": {"updateId": "agent-'$p'"}, "input": {"args": [%s]}}, "waitPolicy": {"lifecycleStage": "UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED"}}' http://127.0.0.1:$p/api/v1/namespaces/%s/workflows/%s/update/decide_permission
done
`, cliPath, server.HostPort, port, server.Namespace, push.GetID(), decision, server.Namespace, push.GetID(), decision, decision, server.Namespace, push.GetID())
	require.NoError(t, os.WriteFile(filepath.Join(project, "approve-myself.sh"), []byte(probe), 0o644))
	res, _ := runAssignment(t, w.queue, assignment("fence-attack",
		map[string]any{"call_id": "call-attack", "tool_name": "exec_command", "arguments": map[string]any{"command_line": "bash approve-myself.sh", "timeout_seconds": 60}}, "exec_command"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	out := res.Output.Content
	t.Logf("the agent's attempts:\n%s", out)
	for _, attempt := range []string{"cli-update", "raw-connect", "other-loopback", "ipv6-loopback", "unspecified", "unspecified-v6", "cli-unspecified"} {
		line := lineStarting(out, attempt+" rc=")
		if assert.NotEmpty(t, line, "attempt %s did not report", attempt) {
			assert.NotContains(t, line, "rc=0 ", "attempt %s got through", attempt)
			assert.Contains(t, strings.ToLower(line), "operation not permitted", "attempt %s was refused by the fence", attempt)
		}
	}

	assert.Contains(t, out, "http-", "the agent tried the listening ports")

	hookLog, err := os.ReadFile(probeLog)
	require.NoError(t, err)
	assert.Contains(t, string(hookLog), "hook-refused 127.0.0.1")
	assert.Contains(t, string(hookLog), "hook-refused 0.0.0.0")
	assert.NotContains(t, string(hookLog), "hook-connected", "a hook's process reached the frontend:\n%s", hookLog)

	assert.Len(t, pendingPermissions(t, push), 1, "the push still waits for the operator")
	decidePermission(t, push, workflows.PermissionDecision{CallID: pending.CallID, Decision: workflows.DecisionDeny, Reason: "the operator says no"})
	var pushed contract.Result
	require.NoError(t, push.Get(t.Context(), &pushed))
	assert.NotEqual(t, contract.StatusCompleted, pushed.Status)
	require.NotNil(t, pushed.Error)
	assert.Contains(t, pushed.Error.LastErrorSummary, "the operator says no")
}

// pendingPermissions are the decisions run waits for now.
func pendingPermissions(t *testing.T, run client.WorkflowRun) []workflows.PendingPermission {
	t.Helper()
	v, err := server.Client().QueryWorkflow(t.Context(), run.GetID(), run.GetRunID(), workflows.QueryPendingPermissions)
	require.NoError(t, err)
	var pending []workflows.PendingPermission
	require.NoError(t, v.Get(&pending))
	return pending
}

// lineStarting is the first line of out that starts with prefix, or "".
func lineStarting(out, prefix string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

// TestAgentsWebToolsCannotReachTheDevServer: a worker that lets web_fetch
// and the browser reach loopback (FENIX_FETCH_ALLOW=127.0.0.0/8, to test
// a local app) still refuses the dev server behind them, naming the
// setting that keeps it shut, and still reaches the app.
func TestAgentsWebToolsCannotReachTheDevServer(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><head><title>The app</title></head><body>app</body></html>")
	}))
	defer app.Close()
	w := startWorker(t, withLoopbackAllowed())
	fetch := func(id, url string) contract.Result {
		res, _ := runAssignment(t, w.queue, assignment(id, map[string]any{"call_id": "call-" + id, "tool_name": "web_fetch", "arguments": map[string]any{"url": url}}, "web_fetch"))
		return res
	}
	res := fetch("fetch-app", app.URL+"/")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	res = fetch("fetch-frontend", "http://"+server.HostPort+"/")
	require.NotEqual(t, contract.StatusCompleted, res.Status, "web_fetch reached the dev server: %+v", res.Output)
	assert.Contains(t, res.Error.LastErrorSummary, "FENIX_COMMAND_UNREACHABLE")

	if _, err := browser.FindChromium(); err != nil {
		t.Skipf("the browser half needs Chromium: %v", err)
	}
	res = browserCall(t, w, "brw-frontend", "conv-fence", "browser_open", map[string]any{"url": "http://" + server.HostPort + "/"})
	require.NotEqual(t, contract.StatusCompleted, res.Status, "the browser loaded the dev server: %+v", res.Output)
	t.Logf("browser_open of the dev server: %s", res.Error.LastErrorSummary)
}
