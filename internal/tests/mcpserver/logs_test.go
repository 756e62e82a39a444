package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/mcpserver"
)

// What an MCP server behind Fenix logs while a call is the one in flight
// to it (the everything server's simulated logging, one message every
// 5 s, during an 8 s operation) reaches the gateway's client as log
// messages before the call's result, at the level the client set.
func TestAnUpstreamServersLogsReachTheGatewaysClient(t *testing.T) {
	w, _ := startEverythingWorker(t)
	const toggle, long = "mcp__everything__toggle-simulated-logging", "mcp__everything__trigger-long-running-operation"
	url, _ := gateway(t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"mcp__everything"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
	d := startDriver(t, map[string]any{"transport": "http", "url": url, "logLevel": "debug", "steps": []any{
		call(toggle, map[string]any{}),
		call(long, map[string]any{"duration": 8, "steps": 2}),
		call(toggle, map[string]any{}),
	}})
	r := d.result(time.Minute)
	require.False(t, r.IsError, r.text())
	var logs []map[string]any
	for {
		e := d.next(time.Minute, "log", "result")
		if e.kind() == "result" {
			break
		}
		logs = append(logs, e["params"].(map[string]any))
	}
	require.NotEmpty(t, logs, "the server logged during the 8 s call")
	for _, l := range logs {
		data, _ := l["data"].(string)
		assert.True(t, strings.Contains(data, "-level message") || strings.Contains(data, "level-message"), "%v", l)
		assert.NotEmpty(t, l["level"])
	}
}
