package cluster

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// TestManyAssignmentsSpreadOverBothHosts runs 200 exec_command assignments,
// 20 at a time, on the shared queue: none is lost, each ran once, the audit
// log has one TOOL_CALL row per call, and both hosts served some. The
// per-host split and the latencies are logged.
func TestManyAssignmentsSpreadOverBothHosts(t *testing.T) {
	requireCluster(t)
	ensureHosts(t)
	const total, concurrency = 200, 20
	type outcome struct {
		id   string
		res  contract.Result
		err  error
		took time.Duration
	}
	outcomes := make([]outcome, total)
	next := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id := fmt.Sprintf("load-%03d", i)
				callStart := time.Now()
				res, err := startAndWait(workflows.ExecuteAssignmentWorkflow, id,
					assignment(id, execCall(fmt.Sprintf("call-%03d", i), fmt.Sprintf("echo load %d", i), 30), "exec_command"), 2*time.Minute)
				outcomes[i] = outcome{id: id, res: res, err: err, took: time.Since(callStart)}
			}
		}()
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	wall := time.Since(began)

	store := auditStore(t)
	perHost := map[string]int{}
	var took []time.Duration
	toolCalls := 0
	for i, o := range outcomes {
		if !assert.NoError(t, o.err, "%s lost", o.id) {
			continue
		}
		if !assert.Equal(t, contract.StatusCompleted, o.res.Status, "%s: %+v", o.id, o.res.Error) {
			continue
		}
		assert.Contains(t, o.res.Output.Content, fmt.Sprintf("load %d", i))
		took = append(took, o.took)
		events := history(t, o.id)
		assert.Equal(t, []int32{1}, toolAttempts(events), "%s: one ExecuteTool attempt", o.id)
		perHost[hostName(toolRanOn(events))]++
		toolCalls += auditCount(t, store, o.id, audit.EventToolCall)
	}
	assert.Equal(t, total, toolCalls, "audit TOOL_CALL rows equal tool calls")
	require.Positive(t, perHost[hostA.Name], "host a served none of %d: %v", total, perHost)
	require.Positive(t, perHost[hostB.Name], "host b served none of %d: %v", total, perHost)
	t.Logf("LOAD: %d exec_command assignments, %d at a time, in %s (%.1f/s): none lost; per host %v; latency %s",
		total, concurrency, wall.Round(time.Millisecond), float64(total)/wall.Seconds(), perHost, percentiles(took))
}
