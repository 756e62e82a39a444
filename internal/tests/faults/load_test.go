package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
)

// Load sizes: FENIX_FAULT_LOAD_N assignments, FENIX_FAULT_LOAD_C at a time.
const (
	defaultLoadN = 500
	defaultLoadC = 50
)

func loadSize(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s=%q is not a number", name, v)
	require.Positive(t, n, "%s must be positive", name)
	return n
}

// TestLoadCalculatorAssignmentsNoneLost runs N calculator assignments
// through ExecuteAssignment, C at a time, against the worker binary: every
// run must complete with its own answer, and the audit log must hold
// exactly one TOOL_CALL row per call.
func TestLoadCalculatorAssignmentsNoneLost(t *testing.T) {
	n := loadSize(t, "FENIX_FAULT_LOAD_N", defaultLoadN)
	conc := min(loadSize(t, "FENIX_FAULT_LOAD_C", defaultLoadC), n)
	// The full size is the default: on a 2-core machine it takes 35-55 s
	// (the dev server is the bottleneck), well inside the package budget.
	t.Logf("load: N=%d, C=%d (defaults %d/%d; FENIX_FAULT_LOAD_N / FENIX_FAULT_LOAD_C override)", n, conc, defaultLoadN, defaultLoadC)
	c := server.Client()
	spec := workerSpec{addr: server.HostPort, queue: newTaskQueue(), dataDir: t.TempDir(), workspace: t.TempDir()}
	w := startWorkerProc(t, spec)

	outcomes := make([]loadOutcome, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	began := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				outcomes[i] = runOne(c, spec.queue, i)
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	wall := time.Since(began)

	latencies := make([]time.Duration, 0, n)
	toolCalls, failed := 0, 0
	for i, o := range outcomes {
		if o.err != nil {
			failed++
			if failed <= 10 {
				t.Errorf("assignment %d: %v", i, o.err)
			}
			continue
		}
		latencies = append(latencies, o.latency)
		toolCalls += o.toolCalls
	}
	require.Zero(t, failed, "%d of %d assignments lost or wrong", failed, n)
	assert.Equal(t, n, toolCalls, "tool calls reported by the runs' metrics")

	store, err := audit.OpenSQLite(context.Background(), filepath.Join(spec.dataDir, "audit.db"))
	require.NoError(t, err)
	defer store.Close()
	rows, err := store.Count(context.Background(), audit.Filter{Event: audit.EventToolCall})
	require.NoError(t, err)
	failures, err := store.Count(context.Background(), audit.Filter{Event: audit.EventToolFailure})
	require.NoError(t, err)
	stops, err := store.Count(context.Background(), audit.Filter{Event: audit.EventSessionStop})
	require.NoError(t, err)
	assert.Equal(t, n, rows, "one TOOL_CALL audit row per tool call")
	assert.Zero(t, failures, "no TOOL_FAILURE audit rows")
	assert.Equal(t, n, stops, "one SESSION_STOP audit row per run")
	w.stop(t)

	sortDurations(latencies)
	t.Logf("load: %d assignments at concurrency %d in %s: %.1f assignments/s", n, conc, wall.Round(time.Millisecond), float64(n)/wall.Seconds())
	t.Logf("load: latency p50 %s, p99 %s, max %s (start to result)",
		percentile(latencies, 50).Round(time.Millisecond), percentile(latencies, 99).Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
	t.Logf("load: %d completed, %d tool calls, %d TOOL_CALL audit rows, %d SESSION_STOP rows, %d TOOL_FAILURE rows", len(latencies), toolCalls, rows, stops, failures)
}

type loadOutcome struct {
	latency   time.Duration
	toolCalls int
	err       error
}

// runOne runs assignment i (calculator "i + i") and checks its result.
func runOne(c client.Client, queue string, i int) loadOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := fmt.Sprintf("load-%s-%d", queue, i)
	began := time.Now()
	run, err := startAssignment(ctx, c, queue, id, assignment(fmt.Sprintf("load-%d", i), calculatorCall(fmt.Sprintf("call-%d", i), fmt.Sprintf("%d + %d", i, i)), "calculator"))
	if err != nil {
		return loadOutcome{err: fmt.Errorf("start %s: %w", id, err)}
	}
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		return loadOutcome{err: fmt.Errorf("%s has no result within 2m: %w", id, err)}
	}
	o := loadOutcome{latency: time.Since(began)}
	want := fmt.Sprintf("The calculator returned %d.", 2*i)
	switch {
	case res.Status != contract.StatusCompleted:
		o.err = fmt.Errorf("%s ended %s: %+v", id, res.Status, res.Error)
	case res.Output == nil || res.Output.Content != want:
		o.err = fmt.Errorf("%s output %+v, want %q", id, res.Output, want)
	case res.Metrics == nil:
		o.err = fmt.Errorf("%s has no metrics", id)
	default:
		o.toolCalls = res.Metrics.ToolCalls
	}
	return o
}
