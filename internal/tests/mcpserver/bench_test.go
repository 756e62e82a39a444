package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/workflows"
)

// BenchmarkCalculatorCall: one calculator call as an MCP tools/call through
// the gateway (Streamable HTTP, Go SDK client) next to the same call as a
// direct ExecuteAssignment from a Temporal client: the gateway's cost on
// top of the durable run. Reports p50 and p95 per call.
//
//	go test ./internal/tests/mcpserver -run '^$' -bench CalculatorCall -benchtime 50x
func BenchmarkCalculatorCall(b *testing.B) {
	w := startWorker(b)
	args := map[string]any{"expression": "6 * 7"}
	seq := 0

	b.Run("direct-ExecuteAssignment", func(b *testing.B) {
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			seq++
			id := fmt.Sprintf("bench-direct-%d-%d", time.Now().UnixNano(), seq)
			start := time.Now()
			run, err := env.Server.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: w.queue}, workflows.ExecuteAssignmentWorkflow, contract.Assignment{
				LogicalWorkID: id, AttemptNo: 1, ConversationID: "bench", TurnID: "t",
				AgentContext: contract.AgentContext{Profile: "main", AllowedToolNames: []string{"calculator"}},
				ToolCall:     &contract.ToolCall{CallID: "c", ToolName: "calculator", Arguments: args},
			})
			require.NoError(b, err)
			var res contract.Result
			require.NoError(b, run.Get(ctx, &res))
			require.Equal(b, contract.StatusCompleted, res.Status)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})

	b.Run("mcp-gateway-http", func(b *testing.B) {
		url, stop := gateway(b, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"calculator"}}, mcpserver.HTTPOptions{Addr: "127.0.0.1:0"})
		defer stop()
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		require.NoError(b, err)
		defer cs.Close()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: args})
			require.NoError(b, err)
			require.False(b, res.IsError)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*95/100]), "p95-ms")
	b.ReportMetric(0, "ns/op")
}
