package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/fenixrt/fenix/mcpserver"
)

// A client subscribed through the gateway to a resource of an MCP server
// behind Fenix (the official everything server, whose subscribers get
// updates once its toggle-subscriber-updates tool is called) hears of its
// updates: the worker holds the upstream subscription and the gateway
// watches it in governed runs. A project's PreToolUse hook on
// watch_mcp_resource refuses one subscription; unsubscribing cancels the
// watch in flight (the server has stopped sending updates by then, so
// nothing else ends it), and no run is left waiting.
func TestAnUpstreamServersResourceUpdatesReachASubscribedClient(t *testing.T) {
	const watched, refused = "demo://resource/static/document/architecture.md", "demo://resource/static/document/features.md"
	w, _ := startEverythingWorker(t, blockingHook("watch_mcp_resource", "features.md", "nobody watches the feature list"))
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "steps": []any{
		step("subscribe", "uri", watched),
		step("subscribe", "uri", refused),
		call("mcp__everything__toggle-subscriber-updates", map[string]any{}, "pauseMs", 6000),
		// Updates stop, so the watch in flight waits until it is canceled.
		call("mcp__everything__toggle-subscriber-updates", map[string]any{}, "pauseMs", 2000),
		step("unsubscribe", "uri", watched, "pauseMs", 3000),
	}})
	connected := d.next(time.Minute, "connected")
	assert.Equal(t, true, connected["capabilities"].(map[string]any)["resources"].(map[string]any)["subscribe"], "%v", connected)
	session := connected["sessionId"].(string)

	got := d.next(time.Minute, "subscribed", "resource_error")
	require.Equal(t, "subscribed", got.kind(), "%v", got)
	blocked := d.next(time.Minute, "subscribed", "resource_error")
	require.Equal(t, "resource_error", blocked.kind(), "%v", blocked)
	assert.Contains(t, blocked["message"], "nobody watches the feature list")

	updated := d.next(time.Minute, "updated")
	assert.Equal(t, watched, updated["uri"])

	// Once unsubscribed, no watch run is left open, and the one that was
	// waiting ended canceled, not at its five-minute bound.
	d.next(time.Minute, "unsubscribed")
	var watches []*workflowservice.ListWorkflowExecutionsResponse
	require.Eventually(t, func() bool {
		resp, err := env.Server.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: env.Server.Namespace,
			Query: "WorkflowId STARTS_WITH 'assignment-mcp-" + session + "-watch-'"})
		if err != nil || len(resp.Executions) == 0 {
			return false
		}
		for _, e := range resp.Executions {
			if e.Status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return false
			}
		}
		watches = append(watches, resp)
		return true
	}, 30*time.Second, 200*time.Millisecond, "a watch run is still open after the client unsubscribed")
	ended := watches[len(watches)-1].Executions
	assert.GreaterOrEqual(t, len(ended), 2, "one watch per update, then one waiting")
	var after int
	for {
		e := d.next(time.Minute, "updated", "done")
		if e.kind() == "done" {
			break
		}
		after++
	}
	assert.LessOrEqual(t, after, 1, "updates after unsubscribing (one may have been on its way)")
}
