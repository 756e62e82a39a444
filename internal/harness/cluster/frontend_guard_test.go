package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// TestAgentCannotApproveItselfThroughTheFrontend: an agent's command runs
// on the worker's host, on the network the frontend listens on. In the
// production shape (docker-compose.yml, which this cluster runs) the
// frontend requires a client certificate of the stack's CA, so a command
// that sends decide_permission for its own parked `git push` — plainly,
// over TLS without a certificate, with the worker's certificate whose key
// the worker hides from it, or through the HTTP API — is refused, and the
// call stays parked until the operator answers.
func TestAgentCannotApproveItselfThroughTheFrontend(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	const queue = "fenix-guarded"
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(settings, []byte(`{"permissions": {"allow": ["Bash"], "ask": ["Bash(git push:*)"]}}`), 0o644))
	// Without the worker's fence on the frontend (the next test), so what
	// is shown here is the frontend's own client authentication.
	host, err := cl.AddHost(ctx, HostConfig{Name: "g", HostID: "host-g", Args: []string{"-task-queue", queue, "-hooks-file", settings},
		Env: []string{"FENIX_COMMAND_UNREACHABLE=none"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = host.StopWorker(20 * time.Second) })

	startOn := func(id string, a map[string]any) {
		t.Helper()
		raw, err := jsonMarshal(a)
		require.NoError(t, err)
		_, err = workflows.StartWorkflowJSON(ctx, tc, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 10 * time.Minute},
			workflows.ExecuteAssignmentWorkflow, raw)
		require.NoError(t, err)
	}
	pending := func() []workflows.PendingPermission {
		v, err := tc.QueryWorkflow(ctx, "guarded-push", "", workflows.QueryPendingPermissions)
		if err != nil {
			return nil
		}
		var out []workflows.PendingPermission
		require.NoError(t, v.Get(&out))
		return out
	}
	startOn("guarded-push", assignment("guarded-push", execCall("call-push", "git push origin main", 30), "exec_command"))
	require.Eventually(t, func() bool { return len(pending()) == 1 }, time.Minute, 100*time.Millisecond, "the push parks for decide_permission")

	// What a worker's container holds (docker-compose.yml mounts
	// deploy/tls/worker at /etc/fenix/tls): the CA, the worker's
	// certificate and its key.
	tlsDir := filepath.Join(cl.TLSDir, "worker")
	decision := `{"call_id": "call-push", "decision": "allow", "reason": "approved by the agent itself"}`
	probe := fmt.Sprintf(`T=%s; A=%s; NS=%s; W=%s
try() { name=$1; shift; out=$("$@" 2>&1); rc=$?; echo "$name rc=$rc $(printf %%s "$out" | tr '\n' ' ' | cut -c1-400)"; }
update() { "$T" workflow update execute --address "$A" --namespace "$NS" --workflow-id guarded-push --name decide_permission --input '%s' --command-timeout 10s "$@"; }
try http-api curl -sSf --max-time 10 --cacert "$W/ca.pem" --resolve temporal:%d:%s -d '{"request": {"meta": {"updateId": "agent-1"}, "input": {"args": [%s]}}, "waitPolicy": {"lifecycleStage": "UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED"}}' https://temporal:%d/api/v1/namespaces/$NS/workflows/guarded-push/update/decide_permission
try plain update
try tls-without-certificate update --tls --tls-ca-path "$W/ca.pem" --tls-server-name temporal
try tls-with-the-workers-key update --tls --tls-ca-path "$W/ca.pem" --tls-server-name temporal --tls-cert-path "$W/cert.pem" --tls-key-path "$W/key.pem"
try read-the-workers-key cat "$W/key.pem"
`, cl.CLI, host.TemporalAddress(), cl.Namespace, tlsDir, decision, cl.FrontendHTTPPort, host.Link.Gateway, decision, cl.FrontendHTTPPort)
	require.NoError(t, os.WriteFile(filepath.Join(host.Workspace, "approve-myself.sh"), []byte(probe), 0o644))
	startOn("guarded-attack", assignment("guarded-attack", execCall("call-attack", "sh approve-myself.sh", 120), "exec_command"))
	res, err := tryResult("guarded-attack", 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	out := res.Output.Content
	t.Logf("the agent's attempts:\n%s", out)
	lines := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, rest, ok := strings.Cut(line, " rc="); ok {
			lines[name] = rest
		}
	}
	for _, attempt := range []string{"plain", "tls-without-certificate", "tls-with-the-workers-key", "read-the-workers-key", "http-api"} {
		rest, ok := lines[attempt]
		if assert.True(t, ok, "attempt %s did not report:\n%s", attempt, out) {
			assert.False(t, strings.HasPrefix(rest, "0 "), "attempt %s succeeded: %s", attempt, rest)
		}
	}
	// TLS 1.3 checks the client's certificate after the client finished
	// its handshake: the client reads the server's alert, or, under load,
	// finds the connection closed first.
	assert.Regexp(t, "certificate required|broken pipe|connection reset", lines["tls-without-certificate"], "the frontend asks for a client certificate")
	assert.Contains(t, lines["tls-with-the-workers-key"], "permission denied", "the worker's key is hidden from its commands")
	assert.Contains(t, lines["read-the-workers-key"], "Permission denied")

	require.Len(t, pending(), 1, "the push still waits for the operator")
	handle, err := tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "guarded-push", UpdateName: workflows.UpdateDecidePermission,
		Args:         []any{workflows.PermissionDecision{CallID: "call-push", Decision: workflows.DecisionDeny, Reason: "the operator says no"}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, handle.Get(ctx, nil))
	res, err = tryResult("guarded-push", time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, contract.StatusCompleted, res.Status)
	require.NotNil(t, res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, "the operator says no")
}

// TestTheFrontendIsFencedOffFromCommands: besides the frontend's client
// authentication, a worker host fences its commands off the frontend it
// uses (FENIX_COMMAND_UNREACHABLE's default): a connection from a command
// is refused before TLS is spoken, and the worker's start log says so.
func TestTheFrontendIsFencedOffFromCommands(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	const queue = "fenix-fenced"
	host, err := cl.AddHost(ctx, HostConfig{Name: "f", HostID: "host-f", Args: []string{"-task-queue", queue}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = host.StopWorker(20 * time.Second) })
	addr := host.TemporalAddress()
	hostName, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	probe := fmt.Sprintf(`getent hosts %[1]s | head -1; for a in $(getent ahostsv4 %[1]s | cut -d' ' -f1 | sort -u); do if out=$(bash -c "exec 3<>/dev/tcp/$a/%[2]s" 2>&1); then echo "reached $a"; else echo "refused $a: $out"; fi; done`, hostName, port)
	raw, err := jsonMarshal(assignment("fenced-probe", execCall("call-probe", probe, 30), "exec_command"))
	require.NoError(t, err)
	_, err = workflows.StartWorkflowJSON(ctx, tc, client.StartWorkflowOptions{ID: "fenced-probe", TaskQueue: queue, WorkflowExecutionTimeout: 5 * time.Minute},
		workflows.ExecuteAssignmentWorkflow, raw)
	require.NoError(t, err)
	res, err := tryResult("fenced-probe", 3*time.Minute)
	require.NoError(t, err)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	t.Logf("the command's connections to the frontend (%s):\n%s", addr, res.Output.Content)
	assert.Contains(t, res.Output.Content, "refused ")
	assert.Contains(t, res.Output.Content, "Operation not permitted", "refused by the fence, not by the network")
	assert.NotContains(t, res.Output.Content, "reached ")
	assert.Contains(t, host.Logs(), "connections refused to: ")
}
