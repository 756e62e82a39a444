package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

// inboxHookSettings asks for permission on every calculator call and
// writes each Notification hook's input to notified.jsonl.
func inboxHookSettings(t *testing.T) (settings, notified string) {
	dir := t.TempDir()
	notified = filepath.Join(dir, "notified.jsonl")
	ask := filepath.Join(dir, "ask.sh")
	require.NoError(t, os.WriteFile(ask, []byte(`#!/bin/sh
cat >/dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"calculator needs a human"}}'
`), 0o755))
	notify := filepath.Join(dir, "notify.sh")
	require.NoError(t, os.WriteFile(notify, []byte("#!/bin/sh\ncat >> "+notified+"\necho >> "+notified+"\n"), 0o755))
	raw, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"PreToolUse":   []any{map[string]any{"matcher": "calculator", "hooks": []any{map[string]any{"type": "command", "command": ask, "timeout": 5}}}},
		"Notification": []any{map[string]any{"matcher": "permission_prompt", "hooks": []any{map[string]any{"type": "command", "command": notify, "timeout": 5}}}},
	}})
	settings = filepath.Join(dir, "settings.json")
	require.NoError(t, os.WriteFile(settings, raw, 0o644))
	return settings, notified
}

// waitingRuns counts the given runs visibility lists as waiting.
func waitingRuns(t *testing.T, ids ...string) int {
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = fmt.Sprintf("%q", id)
	}
	resp, err := server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf(`%s = %q AND WorkflowId IN (%s)`, workflows.SearchAttrAwaitingDecision.GetName(), workflows.AwaitingDecisionValue, strings.Join(quoted, ", ")),
	})
	require.NoError(t, err)
	return len(resp.GetExecutions())
}

func cliDecider() string {
	u, _ := user.Current()
	host, _ := os.Hostname()
	return "cli:" + u.Username + "@" + host
}

// TestInboxAcrossRunsSurvivesAWorkerRestart: calls of several runs wait
// (days, by configuration) while the worker binary that started them
// stops; another worker build (this test process) takes over; the
// operator lists them with `starter pending`, approves one and denies one
// by short reference, and a third expires on its short clock. The
// AwaitingDecision attribute is set while each run waits and cleared when
// its call is decided or expires; every decision is in the trace and the
// audit log with who, when, the arguments hash and the policy fingerprint.
func TestInboxAcrossRunsSurvivesAWorkerRestart(t *testing.T) {
	settings, notified := inboxHookSettings(t)
	queue := newTaskQueue(t)
	port, err := devserver.FreePort()
	require.NoError(t, err)
	opsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	firstData := t.TempDir()
	first := exec.Command(filepath.Join(binDir, "worker"), "-task-queue", queue, "-data-dir", firstData, "-hooks-file", settings,
		"-http-addr", opsAddr, "-log-format", "text")
	first.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
	var logs lockedBuffer
	first.Stdout, first.Stderr = &logs, &logs
	require.NoError(t, first.Start())
	stopped := false
	defer func() {
		if !stopped {
			_ = first.Process.Signal(syscall.SIGTERM)
			_ = first.Wait()
		}
	}()

	tag := fmt.Sprintf("inbox-%d", os.Getpid())
	start := func(name, expr string, timeoutSeconds int) (string, string) {
		a := assignment(tag+"-"+name, map[string]any{"call_id": "call-" + name, "tool_name": "calculator", "arguments": map[string]any{"expression": expr}})
		a["conversation_id"] = "conv-" + tag + "-" + name
		a["approval"] = map[string]any{"timeout_seconds": timeoutSeconds}
		id := "it-" + tag + "-" + name
		run := startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, id, a)
		return id, run.GetRunID()
	}
	threeDays := 3 * 24 * 3600
	approveID, _ := start("approve", "20 + 22", threeDays)
	// The deny call must start waiting after the approve call for "newest
	// first" to put it first: a call's wait begins at its workflow task's
	// time, which under load need not follow the start order.
	require.Eventually(t, func() bool { return waitingRuns(t, approveID) == 1 }, 30*time.Second, 100*time.Millisecond,
		"the approve run waits; worker logs:\n%s", logs.String())
	denyID, _ := start("deny", "6 * 7", threeDays)
	require.Eventually(t, func() bool { return waitingRuns(t, approveID, denyID) == 2 }, 30*time.Second, 100*time.Millisecond,
		"both runs are listed as waiting; worker logs:\n%s", logs.String())
	expireID, _ := start("expire", "1 + 1", 2)
	require.Eventually(t, func() bool { return waitingRuns(t, expireID) == 1 }, 30*time.Second, 100*time.Millisecond)

	// The notification for the first call links to the worker's inbox.
	raw, err := os.ReadFile(notified)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "decide at http://"+opsAddr+"/inbox/?call=call-approve\\u0026workflow="+approveID)

	// The worker binary goes away; this process's worker takes the queue.
	require.NoError(t, first.Process.Signal(syscall.SIGTERM))
	require.NoError(t, first.Wait())
	stopped = true
	audits := filepath.Join(t.TempDir(), "audit.db")
	second, err := worker.New(server.Client(), worker.Config{TaskQueue: queue, DataDir: t.TempDir(), HooksFile: settings, AuditDSN: audits,
		DefaultWorkspaceRoot: t.TempDir(), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	require.NoError(t, second.Start())
	t.Cleanup(second.Stop)

	// The short clock ends the third wait, on the new worker.
	var expired contract.Result
	require.NoError(t, server.Client().GetWorkflow(context.Background(), expireID, "").Get(context.Background(), &expired))
	require.Equal(t, contract.StatusFailed, expired.Status)
	assert.Contains(t, expired.Error.LastErrorSummary, "no decision within 2s")

	query := fmt.Sprintf(`ConversationId IN ("conv-%s-approve", "conv-%s-deny", "conv-%s-expire")`, tag, tag, tag)
	out, code := runBinary(t, "starter", nil, "pending", "-json", "-query", query)
	require.Equal(t, 0, code, out)
	var listing approvals.Listing
	require.NoError(t, json.Unmarshal([]byte(out), &listing), out)
	require.Len(t, listing.Calls, 2, "the expired call is gone: %s", out)
	byCall := map[string]approvals.Call{}
	for _, c := range listing.Calls {
		byCall[c.CallID] = c
	}
	approve, deny := byCall["call-approve"], byCall["call-deny"]
	assert.Equal(t, "call-deny", listing.Calls[0].CallID, "newest first")
	assert.Equal(t, `expression="20 + 22"`, approve.Summary)
	assert.Equal(t, "calculator needs a human", approve.Permission)
	assert.Equal(t, "conv-"+tag+"-approve", approve.ConversationID)
	assert.NotEmpty(t, approve.PolicyFingerprint)
	assert.Greater(t, approve.ExpiresInSeconds, int64(threeDays-300))
	assert.Equal(t, server.UIURL+"/namespaces/default/workflows/"+approveID+"/"+approve.RunID+"/history", approve.WebUIURL)

	text, code := runBinary(t, "starter", nil, "pending", "-query", query)
	require.Equal(t, 0, code, text)
	for _, want := range []string{"REF", "EXPIRES IN", approve.Ref, deny.Ref, `expression="6 * 7"`, "calculator needs a human"} {
		assert.Contains(t, text, want)
	}

	out, code = runBinary(t, "starter", nil, "approve", "deadbeef")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `no call waiting for a decision matches reference "deadbeef"`)

	// A decision on arguments other than the waiting call's is refused by
	// the run, which keeps waiting.
	out, code = runBinary(t, "starter", nil, "approve", "-args-hash", "sha256:"+strings.Repeat("0", 64), approveID, "call-approve")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "was made on arguments sha256:0000")
	assert.Contains(t, out, "but the waiting call's arguments are "+approve.ArgsHash)

	out, code = runBinary(t, "starter", nil, "approve", "-reason", "checked the sum", approve.Ref)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Allowed: call call-approve")
	out, code = runBinary(t, "starter", nil, "deny", "-reason", "not this one", deny.Ref)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Denied: call call-deny")

	var approved, denied contract.Result
	require.NoError(t, server.Client().GetWorkflow(context.Background(), approveID, "").Get(context.Background(), &approved))
	require.NoError(t, server.Client().GetWorkflow(context.Background(), denyID, "").Get(context.Background(), &denied))
	require.Equal(t, contract.StatusCompleted, approved.Status, "%+v", approved.Error)
	assert.Equal(t, "The calculator returned 42.", approved.Output.Content)
	require.Equal(t, contract.StatusFailed, denied.Status)
	assert.Equal(t, fenixerr.TypePermissionDenied, denied.Error.ErrorType)
	assert.Contains(t, denied.Error.LastErrorSummary, "not this one")
	require.Eventually(t, func() bool { return waitingRuns(t, approveID, denyID, expireID) == 0 }, 30*time.Second, 100*time.Millisecond,
		"no run is listed as waiting once its call is decided or expired")

	trace := findTraceEntry(approved.Trace, "permission_decision")
	assert.Equal(t, cliDecider(), trace.Get("decider"))
	assert.Equal(t, approve.ArgsHash, trace.Get("args_hash"))
	assert.Equal(t, approve.PolicyFingerprint, trace.Get("policy_fingerprint"))

	// The expiry may have been decided before the first worker stopped:
	// read both workers' audit logs.
	firstAudit, err := audit.Open(context.Background(), filepath.Join(firstData, "audit.db"))
	require.NoError(t, err)
	defer firstAudit.Close()
	decisions := map[string]audit.Decision{}
	for _, id := range []string{approveID, denyID, expireID} {
		var rows []audit.Row
		for _, store := range []audit.Store{firstAudit, second.Audit()} {
			r, err := store.Query(context.Background(), audit.Filter{SessionID: id, Event: audit.EventPermissionDecision})
			require.NoError(t, err)
			rows = append(rows, r...)
		}
		require.Len(t, rows, 1, id)
		d, err := audit.ParseDecision(rows[0])
		require.NoError(t, err)
		decisions[id] = d
	}
	assert.Equal(t, audit.Decision{Decision: "allow", Decider: cliDecider(), Source: "decide_permission", At: decisions[approveID].At,
		ArgsHash: approve.ArgsHash, PolicyFingerprint: approve.PolicyFingerprint, Reason: "checked the sum"}, decisions[approveID])
	assert.Equal(t, "deny", decisions[denyID].Decision)
	assert.Equal(t, deny.ArgsHash, decisions[denyID].ArgsHash)
	assert.Equal(t, "timeout", decisions[expireID].Decider)
	assert.WithinDuration(t, time.Now(), decisions[approveID].At, time.Minute)
}

// TestWorkerInboxNeedsATokenBeyondLoopback: the worker serves /inbox/ on
// its loopback HTTP address, and without a token refuses to serve it on
// every interface while /healthz keeps working.
func TestWorkerInboxNeedsATokenBeyondLoopback(t *testing.T) {
	port, err := devserver.FreePort()
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(binDir, "worker"), "-task-queue", newTaskQueue(t), "-data-dir", t.TempDir(),
		"-http-addr", fmt.Sprintf("0.0.0.0:%d", port), "-log-format", "text")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "worker ready; logs:\n%s", logs.String())
	resp, err := http.Get(base + "/inbox/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, logs.String(), "approvals inbox not served")
	assert.Contains(t, logs.String(), "FENIX_INBOX_TOKENS")
}

// TestAgentCommandCannotApproveThroughTheLoopbackInbox: an agent's
// command runs on the worker's host, so it is a loopback client of the
// worker's inbox. It must not be able to read the page's CSRF token and
// approve a parked call (its own, or another run's) with the worker's
// Temporal credentials: the loopback inbox needs the token the worker
// logs, and the operator opening the logged link still decides.
func TestAgentCommandCannotApproveThroughTheLoopbackInbox(t *testing.T) {
	settings, _ := inboxHookSettings(t)
	queue := newTaskQueue(t)
	port, err := devserver.FreePort()
	require.NoError(t, err)
	opsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	dataDir := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "worker"), "-task-queue", queue, "-data-dir", dataDir, "-hooks-file", settings,
		"-workspace-root", t.TempDir(), "-http-addr", opsAddr, "-log-format", "text")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+server.HostPort)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()

	tag := fmt.Sprintf("selfapprove-%d", os.Getpid())
	args := map[string]any{"expression": "6 * 7"}
	victim := assignment(tag+"-victim", map[string]any{"call_id": "call-victim", "tool_name": "calculator", "arguments": args})
	victimID := "it-" + tag + "-victim"
	victimRun := startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, victimID, victim)
	require.Eventually(t, func() bool { return waitingRuns(t, victimID) == 1 }, 30*time.Second, 100*time.Millisecond,
		"the calculator call waits for a person; worker logs:\n%s", logs.String())

	// What any local process can do: read the page's CSRF token, post
	// an allow with the arguments it knows.
	base := "http://" + opsAddr + "/inbox"
	// Nor can it read the link the worker wrote for the operator.
	script := fmt.Sprintf(`csrf=$(curl -s %[1]s/ | sed -n 's/.*const csrf = "\([0-9a-f]*\)".*/\1/p')
curl -s -X POST %[1]s/api/decide --data-urlencode "csrf=$csrf" --data-urlencode workflow_id=%[2]s \
  --data-urlencode call_id=call-victim --data-urlencode args_hash=%[3]s --data-urlencode decision=allow \
  --data-urlencode reason=self-approved
cat %[4]s/inbox-link 2>/dev/null && echo READ-THE-LINK`, base, victimID, contract.ArgumentsHash(args), dataDir)
	attacker := assignment(tag+"-attacker", map[string]any{"call_id": "call-attacker", "tool_name": "exec_command",
		"arguments": map[string]any{"command_line": script}}, "exec_command")
	attackerRun := startWorkflow(t, queue, workflows.ExecuteAssignmentWorkflow, "it-"+tag+"-attacker", attacker)
	var attacked contract.Result
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, attackerRun.Get(ctx, &attacked))
	require.Equal(t, contract.StatusCompleted, attacked.Status, "%+v", attacked.Error)
	assert.NotContains(t, attacked.Output.Content, `"ok":true`, "the command's decision was accepted")
	assert.NotContains(t, attacked.Output.Content, "READ-THE-LINK", "the command read the operator's link")
	assert.Equal(t, 1, waitingRuns(t, victimID), "the parked call still waits for a person")

	// The operator opens the link the worker wrote and denies it. Its log
	// is no terminal, so the link is in the data directory, not the log,
	// which a command of the worker's user might read.
	assert.NotContains(t, logs.String(), "?token=", "the token stays out of a kept log")
	written, err := os.ReadFile(filepath.Join(dataDir, "inbox-link"))
	require.NoError(t, err, "the worker writes the inbox link to its data directory; logs:\n%s", logs.String())
	link := regexp.MustCompile(`http://` + regexp.QuoteMeta(opsAddr) + `/inbox/\?token=[0-9a-f]+`).FindString(string(written))
	require.NotEmpty(t, link, "inbox-link holds %q", written)
	token := strings.TrimPrefix(link[strings.Index(link, "?token="):], "?token=")
	req, err := http.NewRequest(http.MethodGet, base+"/api/pending", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out, code := runBinary(t, "starter", nil, "deny", "-reason", "not self-approved", victimID, "call-victim")
	require.Equal(t, 0, code, out)
	var victimRes contract.Result
	require.NoError(t, victimRun.Get(ctx, &victimRes))
	assert.Equal(t, fenixerr.TypePermissionDenied, victimRes.Error.ErrorType)
}
