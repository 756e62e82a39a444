package mcpserver

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/mcpserver"
)

// A client that goes away while its call runs has the call's run
// cancelled: it aborts the HTTP request, deletes its session, or closes
// the stdin of `starter mcp`. None of them sends notifications/cancelled.

const (
	initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	initializedMsg = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	sleepCall      = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_sleep","arguments":{"seconds":120}}}`
)

// rawHTTP is a bare Streamable HTTP client: the SDKs send
// notifications/cancelled, which would hide what these tests look at.
type rawHTTP struct {
	t       *testing.T
	url     string
	session string
}

func (c *rawHTTP) request(ctx context.Context, method, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	return http.DefaultClient.Do(req)
}

func connectRaw(t *testing.T, url string) *rawHTTP {
	t.Helper()
	c := &rawHTTP{t: t, url: url}
	resp, err := c.request(context.Background(), http.MethodPost, initializeBody)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	c.session = resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, c.session)
	resp, err = c.request(context.Background(), http.MethodPost, initializedMsg)
	require.NoError(t, err)
	resp.Body.Close()
	return c
}

// startSleep posts a long test_sleep call and returns once its run is
// under way; cancel aborts the request.
func (c *rawHTTP) startSleep(queue string) (workflowID string, abort func()) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := c.request(ctx, http.MethodPost, sleepCall)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	c.t.Cleanup(func() { cancel(); <-done })
	id := runningRun(c.t, queue)
	return id, func() { cancel(); <-done }
}

// runningRun waits for the one ExecuteAssignment run on the queue to be
// running its tool.
func runningRun(t *testing.T, queue string) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		resp, err := env.Server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Server.Namespace,
			Query: "TaskQueue = '" + queue + "' AND WorkflowType = 'ExecuteAssignment' AND ExecutionStatus = 'Running'"})
		if err != nil || len(resp.Executions) != 1 {
			return false
		}
		id = resp.Executions[0].Execution.WorkflowId
		return true
	}, 30*time.Second, 100*time.Millisecond, "no running call on queue %s", queue)
	return id
}

// canceledWithin requires the run to end canceled within d (the tool
// sleeps for two minutes), with why in its reason.
func canceledWithin(t *testing.T, workflowID string, d time.Duration, why string) {
	t.Helper()
	require.Eventually(t, func() bool {
		desc, err := env.Server.Client().DescribeWorkflow(context.Background(), workflowID, "")
		return err == nil && desc.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, d, 100*time.Millisecond, "run %s still running %s after the client went away", workflowID, d)
	res := runResult(t, workflowID)
	require.Equal(t, contract.StatusCanceled, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, why)
}

func TestAbortingTheHTTPRequestCancelsItsRun(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"test_sleep"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	c := connectRaw(t, url)
	id, abort := c.startSleep(w.queue)
	abort()
	canceledWithin(t, id, 20*time.Second, "aborted its HTTP request")
}

func TestDeletingTheSessionCancelsItsRuns(t *testing.T) {
	w := startWorker(t)
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"test_sleep"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	c := connectRaw(t, url)
	id, _ := c.startSleep(w.queue)
	resp, err := c.request(context.Background(), http.MethodDelete, "")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	canceledWithin(t, id, 20*time.Second, "closed its MCP session")
}

// Closing stdin is how a stdio client ends its session (the spec's
// shutdown): `starter mcp` cancels the calls in flight before it exits.
func TestClosingStdioCancelsItsRuns(t *testing.T) {
	w := startWorker(t)
	cmd := exec.Command(filepath.Join(env.BinDir, "starter"), "mcp", "-task-queue", w.queue, "-allow", "test_sleep")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.Server.HostPort, "TEMPORAL_NAMESPACE="+env.Server.Namespace)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	lines := bufio.NewScanner(stdout)
	for _, msg := range []string{initializeBody, initializedMsg, sleepCall} {
		_, err := io.WriteString(stdin, msg+"\n")
		require.NoError(t, err)
		if strings.Contains(msg, `"initialize"`) {
			require.True(t, lines.Scan(), "no answer to initialize")
		}
	}
	id := runningRun(t, w.queue)
	require.NoError(t, stdin.Close())
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("starter mcp did not exit after its stdin closed")
	}
	canceledWithin(t, id, 20*time.Second, "closed its MCP session")
}
