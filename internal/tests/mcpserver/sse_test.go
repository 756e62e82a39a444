package mcpserver

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/mcpserver"
)

// sseURL is the gateway's HTTP+SSE endpoint beside its Streamable HTTP one.
func sseURL(streamable string) string {
	return strings.TrimSuffix(streamable, mcpserver.Path) + mcpserver.SSEPath
}

// sessionOf reads the MCP session out of a gateway run's workflow ID
// (assignment-mcp-<session>-<request>-<hash>): the SSE client does not
// report it.
func sessionOf(workflowID string) string {
	rest := strings.TrimPrefix(workflowID, "assignment-mcp-")
	session, _, _ := strings.Cut(rest, "-")
	return session
}

// TestSSEWithTheTypeScriptClient: a client that speaks only the older
// HTTP+SSE transport (the TypeScript SDK's SSEClientTransport, what many
// agent frameworks' "sse" MCP clients are) lists the tools, runs an
// allowed call, and cancels one; the token is required as on /mcp.
func TestSSEWithTheTypeScriptClient(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"calculator", "test_sleep"}},
		mcpserver.HTTPOptions{Addr: "127.0.0.1:0", Token: "tok-123"})
	url = sseURL(url)

	refused := startDriver(t, map[string]any{"transport": "sse", "url": url, "steps": []any{step("list")}})
	fatal := <-refused.events
	assert.Equal(t, "fatal", fatal.kind(), "no token, no session: %v", fatal)

	d := startDriver(t, map[string]any{
		"transport": "sse", "url": url, "headers": map[string]string{"Authorization": "Bearer tok-123"},
		"steps": []any{
			step("list"),
			call("calculator", map[string]any{"expression": "2 + 2"}),
			// Aborted once the run surely reported its review, even on a
			// loaded machine.
			call("test_sleep", map[string]any{"seconds": 60}, "abortAfterMs", 5000, "pauseMs", 1500),
		},
	})
	d.next(30*time.Second, "connected")
	assert.ElementsMatch(t, []string{"calculator", "test_sleep"}, toolNames(d.next(30*time.Second, "tools")))
	ok := d.result(time.Minute)
	assert.False(t, ok.IsError, ok.text())
	assert.Contains(t, ok.text(), "4")
	session := sessionOf(ok.workflowID())
	require.NotEmpty(t, session, ok.workflowID())
	assert.Equal(t, contract.StatusCompleted, runResult(t, ok.workflowID()).Status)

	for msg := ""; !strings.Contains(msg, "tool_reviewed test_sleep"); {
		msg, _ = d.next(30*time.Second, "progress")["message"].(string)
	}
	aborted := d.next(time.Minute, "call_error")
	assert.Contains(t, aborted["message"], "abort")
	id := findRun(t, session, ok.workflowID())
	res := runResult(t, id)
	require.Equal(t, contract.StatusCanceled, res.Status, "the client's notifications/cancelled cancels the run")
	assert.Contains(t, res.Error.LastErrorSummary, "notifications/cancelled")
	d.next(30*time.Second, "done")
}

// A client whose SSE stream closes while a call runs has the run
// cancelled, as an aborted Streamable HTTP request does; while the call
// runs the stream gets keep-alive comments, so a proxy does not close it
// for idling; a POST to a session that is not open is 404, and a loopback
// endpoint refuses a foreign Host name (DNS rebinding).
func TestClosingTheSSEStreamCancelsItsRuns(t *testing.T) {
	w := startWorker(t)
	base, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"test_sleep"}},
		mcpserver.HTTPOptions{Addr: "127.0.0.1:0", SSEKeepAlive: 200 * time.Millisecond})
	url := sseURL(base)

	rebound, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	rebound.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(rebound)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	resp, err = http.Post(url+"?sessionid=nope", "application/json", strings.NewReader(initializedMsg))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	ctx, closeStream := context.WithCancel(context.Background())
	defer closeStream()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)
	events := bufio.NewScanner(stream.Body)
	var endpoint string
	for endpoint == "" && events.Scan() {
		if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
			endpoint = data
		}
	}
	require.True(t, strings.HasPrefix(endpoint, mcpserver.SSEPath+"?sessionid="), endpoint)
	post := func(body string) {
		t.Helper()
		resp, err := http.Post(strings.TrimSuffix(base, mcpserver.Path)+endpoint, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
	}
	post(initializeBody)
	post(initializedMsg)
	post(sleepCall)
	id := runningRun(t, w.queue)
	assert.True(t, strings.HasPrefix(id, "assignment-mcp-"+strings.TrimPrefix(endpoint, mcpserver.SSEPath+"?sessionid=")+"-"), "the run is the session's: %s", id)
	kept := make(chan struct{})
	go func() {
		for events.Scan() {
			if events.Text() == ": keep-alive" {
				close(kept)
				return
			}
		}
	}()
	select {
	case <-kept:
	case <-time.After(10 * time.Second):
		t.Fatal("no keep-alive comment on a stream whose call runs")
	}
	closeStream()
	canceledWithin(t, id, 20*time.Second, "closed its SSE stream")
}

// A call parked for permission says again, every WaitingReminder, that it
// waits: a proxy in front of the gateway sees the request's stream move
// and does not close it for idling during a long approval.
func TestAWaitingCallRemindsWhileItWaits(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"workspace_list"}, WaitingReminder: 300 * time.Millisecond},
		mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	d := startDriver(t, map[string]any{"transport": "sse", "url": sseURL(url), "steps": []any{call("workspace_list", map[string]any{"path": "."})}})
	var first, reminders int
	var approve []string
	for reminders < 2 {
		msg, _ := d.next(time.Minute, "progress")["message"].(string)
		switch {
		case strings.HasPrefix(msg, "still waiting for approval"):
			reminders++
		case strings.HasPrefix(msg, "waiting for approval"):
			first++
			approve = approveCommand(msg)
		}
	}
	assert.Equal(t, 1, first, "the first message is sent once")
	require.NotNil(t, approve)
	runStarter(t, approve...)
	r := d.result(time.Minute)
	assert.False(t, r.IsError, r.text())
}
