package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/browser"
	"github.com/fenixrt/fenix/workflows"
)

var browserTools = []string{"browser_open", "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_screenshot", "browser_close", "browser_list"}

const loginPage = `<!doctype html><title>Sign in</title>
<h1>Welcome</h1>
<form action="/login" method="post">
<label for="user">User name</label> <input id="user" name="user">
<label>Password <input type="password" name="pass"></label>
<button type="submit">Sign in</button>
</form>`

// loginSite serves a login form on loopback; /hang never answers and
// reports each request on hung.
func loginSite(t *testing.T) (srv *httptest.Server, hung chan struct{}) {
	t.Helper()
	hung = make(chan struct{}, 4)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, loginPage) })
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		fmt.Fprintf(w, "<title>Signed in</title><p>Hello %s, your password has %d characters.</p>", r.FormValue("user"), len(r.FormValue("pass")))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		hung <- struct{}{}
		<-r.Context().Done()
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, hung
}

func needChromium(t *testing.T) {
	t.Helper()
	if _, err := browser.FindChromium(); err != nil {
		t.Skipf("browser tests need Chromium: %v", err)
	}
}

// withLoopbackAllowed opens the outbound guard for the test's loopback
// servers, as FENIX_FETCH_ALLOW=127.0.0.0/8 would.
func withLoopbackAllowed() workerOption {
	return func(c *worker.Config) {
		c.HostConfig.Fetch = netguard.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	}
}

// browserCall runs one browser tool call as an assignment of conversation
// conv and returns its result.
func browserCall(t *testing.T, w *testWorker, workID, conv, tool string, args map[string]any) contract.Result {
	t.Helper()
	a := assignment(workID, map[string]any{"call_id": "call-" + workID, "tool_name": tool, "arguments": args}, browserTools...)
	a["conversation_id"] = conv
	start := time.Now()
	res, _ := runAssignment(t, w.queue, a)
	t.Logf("%s: %s in %s", tool, res.Status, time.Since(start).Round(time.Millisecond))
	return res
}

func TestBrowserFormFlowOnDevServer(t *testing.T) {
	needChromium(t)
	srv, _ := loginSite(t)
	w := startWorker(t, withLoopbackAllowed())
	const conv = "conv-browser"

	res := browserCall(t, w, "brw-open", conv, "browser_open", map[string]any{"url": srv.URL + "/"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	id, _ := res.Output.Data["browser_session_id"].(string)
	require.True(t, strings.HasPrefix(id, "brw_"+w.Host.ID+"_"), "session ID %q names its host", id)
	assert.Contains(t, res.Output.Content, fmt.Sprintf("Opened %s/ — \"Sign in\" in browser session %s", srv.URL, id))

	res = browserCall(t, w, "brw-snap", conv, "browser_snapshot", map[string]any{"browser_session_id": id})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, `[1] textbox "User name"`)
	assert.Contains(t, res.Output.Content, `[3] button "Sign in"`)
	assert.Equal(t, tools.HostQueue(w.Host.ID), findTraceEntry(res.Trace, "review_tool_call").Get("task_queue"), "routed to the owning host")

	res = browserCall(t, w, "brw-type-user", conv, "browser_type", map[string]any{"browser_session_id": id, "ref": 1, "text": "ada"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, `Typed 3 characters into [1] "User name"; page is still`)
	res = browserCall(t, w, "brw-type-pass", conv, "browser_type", map[string]any{"browser_session_id": id, "selector": "input[name=pass]", "text": "secret!"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)

	res = browserCall(t, w, "brw-click", conv, "browser_click", map[string]any{"browser_session_id": id, "ref": 3})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, fmt.Sprintf(`Clicked [3] "Sign in"; page is now %s/login — "Signed in".`, srv.URL), res.Output.Content)

	res = browserCall(t, w, "brw-snap2", conv, "browser_snapshot", map[string]any{"browser_session_id": id})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "Hello ada, your password has 7 characters.")

	res = browserCall(t, w, "brw-shot", conv, "browser_screenshot", map[string]any{"browser_session_id": id})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	ref, _ := res.Output.Data["ref"].(string)
	require.NotEmpty(t, ref, "%+v", res.Output)
	store, err := contextstore.Open(context.Background(), "", contextstore.Options{DataDir: w.dataDir})
	require.NoError(t, err)
	png, err := store.Get(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]), "the screenshot in the context store is a PNG")
	assert.NotContains(t, res.Output.Content, "\x89PNG")

	// The operator snapshot of the conversation lists the session.
	round := startWorkflow(t, w.queue, workflows.PrepareRoundWorkflow, "it-browser-round", map[string]any{
		"logical_work_id": "brw-round", "attempt_no": 1, "conversation_id": conv, "turn_id": "turn-2",
		"context_messages": []map[string]any{{"role": "user", "content": "where is the browser?"}},
		"agent_context":    map[string]any{"profile": "main", "allowed_tool_names": browserTools},
		"model_context":    map[string]any{"likely_model": "gpt-test"},
	})
	var prepared contract.PreparedRound
	require.NoError(t, round.Get(context.Background(), &prepared))
	require.Equal(t, contract.StatusCompleted, prepared.Status, "%+v", prepared.Error)
	var operatorState string
	for _, m := range prepared.Messages {
		if strings.Contains(m.Content, "browser_sessions") {
			operatorState = m.Content
		}
	}
	require.NotEmpty(t, operatorState, "no message carries the operator state's browser_sessions: %+v", prepared.Messages)
	assert.Contains(t, operatorState, id)
	assert.Contains(t, operatorState, "Signed in")
	assert.Contains(t, operatorState, srv.URL+"/login")

	res = browserCall(t, w, "brw-close", conv, "browser_close", map[string]any{"browser_session_id": id})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "Closed browser session "+id)
	assert.Empty(t, browser.ProcessesUsingProfile(filepath.Join(w.dataDir, "browser", "profiles")+"/"), "no Chromium left after browser_close")

	res = browserCall(t, w, "brw-after-close", conv, "browser_navigate", map[string]any{"browser_session_id": id, "url": srv.URL + "/"})
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, "browser_session_closed", res.Error.Code, "%+v", res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, id)
}

func TestBrowserNavigationToLoopbackIsRefusedWithoutAllowance(t *testing.T) {
	needChromium(t)
	srv, _ := loginSite(t)
	w := startWorker(t)
	res := browserCall(t, w, "brw-guard", "conv-guard", "browser_open", map[string]any{"url": srv.URL + "/"})
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, "destination_not_allowed", res.Error.Code, "%+v", res.Error)
	assert.Equal(t, "authorization", res.Error.Classification)
	assert.Contains(t, res.Error.LastErrorSummary, "loopback")
	assert.Contains(t, res.Error.LastErrorSummary, "FENIX_FETCH_ALLOW")

	// A session that may reach public sites still cannot be sent to loopback.
	res = browserCall(t, w, "brw-guard-open", "conv-guard", "browser_open", map[string]any{})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	id, _ := res.Output.Data["browser_session_id"].(string)
	res = browserCall(t, w, "brw-guard-nav", "conv-guard", "browser_navigate", map[string]any{"browser_session_id": id, "url": srv.URL + "/"})
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, "destination_not_allowed", res.Error.Code, "%+v", res.Error)
	res = browserCall(t, w, "brw-guard-file", "conv-guard", "browser_navigate", map[string]any{"browser_session_id": id, "url": "file:///etc/passwd"})
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, "destination_not_allowed", res.Error.Code, "%+v", res.Error)
}

func TestBrowserCancelClosesTheBrowserWithinTwoSeconds(t *testing.T) {
	needChromium(t)
	srv, hung := loginSite(t)
	w := startWorker(t, withLoopbackAllowed())
	res := browserCall(t, w, "brw-cancel-open", "conv-cancel", "browser_open", map[string]any{})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	id, _ := res.Output.Data["browser_session_id"].(string)
	profiles := filepath.Join(w.dataDir, "browser", "profiles") + "/"
	require.NotEmpty(t, browser.ProcessesUsingProfile(profiles), "Chromium runs for the open session")

	a := assignment("brw-cancel-nav", map[string]any{"call_id": "call-hang", "tool_name": "browser_navigate",
		"arguments": map[string]any{"browser_session_id": id, "url": srv.URL + "/hang"}}, browserTools...)
	run := startWorkflow(t, w.queue, workflows.ExecuteAssignmentWorkflow, "it-browser-cancel", a)
	select {
	case <-hung:
	case <-time.After(30 * time.Second):
		t.Fatal("the browser never requested the hanging page")
	}
	ctx := context.Background()
	sent := time.Now()
	require.NoError(t, server.Client().SignalWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.SignalCancel, workflows.CancelRequest{Reason: "stop browsing"}))
	require.Eventually(t, func() bool { return len(browser.ProcessesUsingProfile(profiles)) == 0 }, 10*time.Second, 10*time.Millisecond,
		"Chromium is gone after the cancel")
	gone := time.Since(sent)
	assert.Less(t, gone, 2*time.Second, "Chromium is gone within 2 s of the cancel")
	var out contract.Result
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, contract.StatusCanceled, out.Status)
	t.Logf("cancel signal to Chromium gone: %s; to canceled result: %s", gone, time.Since(sent))

	res = browserCall(t, w, "brw-cancel-after", "conv-cancel", "browser_snapshot", map[string]any{"browser_session_id": id})
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, "browser_session_closed", res.Error.Code, "%+v", res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, "the run that used it was canceled")
}

// A Claude Code PreToolUse hook matching browser_.* governs the browser
// tools like any other: it sees the URL and blocks before anything runs.
func TestBrowserToolsAreHookedByClaudeCodeMatchers(t *testing.T) {
	needChromium(t)
	srv, _ := loginSite(t)
	project := t.TempDir()
	hooksDir := filepath.Join(project, ".claude", "hooks")
	require.NoError(t, os.MkdirAll(hooksDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hooksDir, "browser-guard.sh"), []byte(`#!/bin/bash
input=$(cat)
if grep -q '"tool_name":"browser_' <<<"$input" && grep -q 'forbidden' <<<"$input"; then
  echo "browsing forbidden pages is not allowed" >&2
  exit 2
fi
exit 0
`), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"hooks": {"PreToolUse": [
  {"matcher": "browser_.*", "hooks": [{"type": "command", "command": "bash \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/browser-guard.sh"}]}
]}}`), 0o644))
	w := startWorker(t, withLoopbackAllowed(), inProject(project))

	res := browserCall(t, w, "brw-hook-blocked", "conv-hook", "browser_open", map[string]any{"url": srv.URL + "/forbidden"})
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, "%+v", res.Error)
	assert.Contains(t, res.Error.LastErrorSummary, "browsing forbidden pages is not allowed")
	assert.Empty(t, w.Host.BrowserSessions(), "a blocked browser_open starts no browser")

	res = browserCall(t, w, "brw-hook-allowed", "conv-hook", "browser_open", map[string]any{"url": srv.URL + "/"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	pre, ok := traceEntry(res, "pre_tool_use")
	require.True(t, ok, "the PreToolUse stage ran")
	assert.Contains(t, fmt.Sprint(pre), "browser-guard.sh", "the matcher browser_.* selected the hook")
}
