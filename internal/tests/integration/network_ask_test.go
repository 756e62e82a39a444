package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// Claude Code's sandbox asks its user about a host outside
// sandbox.network.allowedDomains ("Network request outside of sandbox");
// Fenix refused it. Now the command's connection waits while its run
// parks a "network: host:port" permission beside the call, answered with
// decide_permission like any other: allowed, the command reaches the host
// (curl and python, through the HTTP proxy); denied, the proxy answers
// 403 naming the decider and the reason; a host a person allowed is
// not asked about again in the conversation; a question nobody answered
// before its command ended is withdrawn. A denied domain is never asked
// about. On the dev server, with a root worker (a network namespace per
// workspace).
func TestTheSandboxAsksAboutHostsOutsideItsDomains(t *testing.T) {
	const maxOpenAsks = 4
	if confine.ABIVersion() < 2 || os.Geteuid() != 0 {
		t.Skip("a network namespace per command needs Landlock and a root worker")
	}
	l, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s", r.Host) })}
	go server.Serve(l)
	defer server.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	askedHost := net.JoinHostPort("127.0.0.2", port)
	deniedHost := net.JoinHostPort("127.0.0.3", port)

	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	// A Notification hook, as users keep one for permission prompts.
	settings := fmt.Sprintf(`{"sandbox": {"enabled": true, "network": {"allowedDomains": ["registry.example"], "deniedDomains": [%q]}},
  "hooks": {"Notification": [{"hooks": [{"type": "command", "command": "cat >> \"$CLAUDE_PROJECT_DIR\"/notifications.jsonl; echo >> \"$CLAUDE_PROJECT_DIR\"/notifications.jsonl"}]}]}}`, deniedHost)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(settings), 0o644))
	w := startWorker(t, inProject(project))

	// Each call is a conversation of its own unless it names one: a host
	// a person allowed is remembered for the conversation.
	inConversation := func(conversation, name, command string) waitingCall {
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": "exec_command", "arguments": map[string]any{"command_line": command}}, "exec_command")
		a["workspace_root"] = project
		a["conversation_id"] = conversation
		return startWaitingCall(t, w.queue, name, a)
	}
	call := func(name, command string) waitingCall { return inConversation("conv-"+name, name, command) }
	const parks = "the command's connection parks a permission"

	// Allowed: curl waits, then reaches the host.
	c := inConversation("conv-allowed", "allowed", fmt.Sprintf("curl -sS --max-time 120 http://%s/ && echo; echo curl-done", askedHost))
	p := c.awaitOne(parks)
	assert.Equal(t, "call-allowed/network/"+askedHost, p.CallID)
	assert.Equal(t, "network: "+askedHost, p.Permission)
	assert.Equal(t, "sandbox.network", p.RequestedBy)
	assert.Equal(t, "exec_command", p.ToolName)
	c.decide(workflows.PermissionDecision{CallID: p.CallID, Decision: workflows.DecisionAllow, DecidedBy: "ana", Reason: "the docs mirror", ArgsHash: p.ArgsHash})
	res := c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "hello "+askedHost)
	e, decided := decisionEntry(res, p.CallID)
	require.True(t, decided, "the decision is in the trace: %+v", res.Trace)
	assert.Equal(t, "ana", e.Get("decider"), "%+v", e)
	assert.Equal(t, workflows.DecisionAllow, e.Get("decision"))

	// The conversation's next call reaches the host without a question:
	// its session remembers who allowed it.
	c = inConversation("conv-allowed", "remembered", fmt.Sprintf("curl -sS --max-time 20 http://%s/ && echo; echo curl-done", askedHost))
	res = c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "hello "+askedHost)
	assert.Empty(t, c.pending())
	e, remembered := decisionEntry(res, "call-remembered/network/"+askedHost)
	require.True(t, remembered, "the remembered allow is in the trace: %+v", res.Trace)
	assert.Equal(t, "conversation", e.Get("decided_by"))
	assert.Equal(t, "ana", e.Get("decider"), "%+v", e)

	notices, err := os.ReadFile(filepath.Join(project, "notifications.jsonl"))
	require.NoError(t, err, "the Notification hook heard of the question")
	assert.Contains(t, string(notices), `"notification_type":"permission_prompt"`)
	assert.Contains(t, string(notices), "network: "+askedHost)

	// Denied: python's urllib gets the proxy's 403 naming who said no.
	script := fmt.Sprintf(`python3 - <<'EOF'
import urllib.request, urllib.error
try:
    print(urllib.request.urlopen("http://%s/", timeout=120).read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
EOF`, askedHost)
	c = call("denied", script)
	p = c.awaitOne(parks)
	c.decide(workflows.PermissionDecision{CallID: p.CallID, Decision: workflows.DecisionDeny, DecidedBy: "ana", Reason: "not for this task", ArgsHash: p.ArgsHash})
	res = c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "403")
	assert.Contains(t, res.Output.Content, "ana: not for this task")

	// A command that connects to many hosts at once parks four questions;
	// the rest are refused at once, without filling the run's history.
	many := fmt.Sprintf(`for h in 4 5 6 7 8 9; do (curl -sS --max-time 120 http://127.0.0.$h:%s/; echo) & done; wait`, port)
	c = call("many", many)
	var open []workflows.PendingPermission
	require.Eventually(t, func() bool { open = c.pending(); return len(open) == maxOpenAsks }, 60*time.Second, 100*time.Millisecond)
	time.Sleep(time.Second)
	assert.Len(t, c.pending(), maxOpenAsks, "no more than four questions wait")
	for _, q := range open {
		c.decide(workflows.PermissionDecision{CallID: q.CallID, Decision: workflows.DecisionDeny, DecidedBy: "ana", Reason: "no scanning", ArgsHash: q.ArgsHash})
	}
	res = c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, 4, strings.Count(res.Output.Content, "ana: no scanning"), res.Output.Content)
	assert.Equal(t, 2, strings.Count(res.Output.Content, "still unanswered"), res.Output.Content)

	// A command that gives up before anyone answers (curl's own timeout):
	// its question is withdrawn when the call ends, and the run completes
	// instead of waiting for the question's ten-minute deadline.
	c = call("gave-up", fmt.Sprintf("curl -sS --max-time 3 http://%s/; echo curl-done", askedHost))
	p = c.awaitOne(parks)
	res = c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "curl-done")
	assert.Empty(t, c.pending(), "the withdrawn question left the inbox")
	e, withdrawn := decisionEntry(res, p.CallID)
	require.True(t, withdrawn, "the withdrawal is in the trace: %+v", res.Trace)
	assert.Equal(t, "command_ended", e.Get("decider"), "%+v", e)
	assert.Equal(t, workflows.DecisionDeny, e.Get("decision"))

	// A denied domain is refused without asking.
	c = call("denied-domain", fmt.Sprintf("curl -sS --max-time 20 http://%s/; echo curl-done", deniedHost))
	res = c.result()
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "on the denied domains")
	assert.False(t, strings.Contains(res.Output.Content, "hello"), res.Output.Content)
	assert.Empty(t, c.pending())
}
