// Package bench measures Fenix against a bare Temporal workflow on a real
// dev server: N calculator assignments through ExecuteAssignment, and a
// workflow running the same number of no-op activities, at several
// concurrencies, reporting throughput, latency percentiles and history
// size per run.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/devserver"
	"github.com/fenixrt/fenix/internal/fenixworker"
	"github.com/fenixrt/fenix/workflows"
)

// Options configure a run.
type Options struct {
	// N is the number of runs per scenario and concurrency.
	N           int
	Concurrency []int
	// Scenarios to run; nil means all of Scenarios().
	Scenarios []string
	CLIPath   string
	Out       io.Writer
	Logger    *slog.Logger
	// ServerArgs are extra dev-server arguments (dynamic config).
	ServerArgs []string
}

// Scenario names.
const (
	ScenarioFenixRegular = "fenix (regular stages)"
	ScenarioFenixLocal   = "fenix (local pure stages)"
	ScenarioFenixEager   = "fenix (local pure stages, eager start)"
	ScenarioBare         = "bare workflow (same activity count)"
)

// Scenarios lists every scenario in report order.
func Scenarios() []string {
	return []string{ScenarioBare, ScenarioFenixRegular, ScenarioFenixLocal, ScenarioFenixEager}
}

// Result is one scenario at one concurrency.
type Result struct {
	Scenario     string
	N            int
	Concurrency  int
	Wall         time.Duration
	Throughput   float64
	P50, P99     time.Duration
	EventsPerRun float64
	BytesPerRun  float64
	Failed       int
}

const bareWorkflowName = "BenchBareWorkflow"

// BareWorkflow runs n no-op activities in sequence: the floor any
// pipeline of n activities pays on this server.
func BareWorkflow(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	for i := 0; i < n; i++ {
		if err := workflow.ExecuteActivity(ctx, Noop).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Noop does nothing.
func Noop(context.Context) error { return nil }

func newBareWorker(c client.Client) worker.Worker {
	bare := worker.New(c, "bench-bare", worker.Options{})
	bare.RegisterWorkflowWithOptions(BareWorkflow, workflow.RegisterOptions{Name: bareWorkflowName})
	bare.RegisterActivityWithOptions(Noop, activity.RegisterOptions{Name: "Noop"})
	return bare
}

// Run starts a dev server and a worker and measures every scenario.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.N <= 0 {
		o.N = 100
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 20}
	}
	if o.Scenarios == nil {
		o.Scenarios = Scenarios()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := devserver.Start(ctx, devserver.Options{CLIPath: o.CLIPath, ExtraArgs: o.ServerArgs})
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	dataDir, err := os.MkdirTemp("", "fenix-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)

	c := srv.Client()
	w, err := fenixworker.New(c, fenixworker.Config{TaskQueue: workflows.DefaultTaskQueue, DataDir: dataDir, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()
	bare := newBareWorker(c)
	if err := bare.Start(); err != nil {
		return nil, err
	}
	defer bare.Stop()

	// The bare workflow runs as many activities as one assignment does.
	activities, err := assignmentActivityCount(ctx, c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "ExecuteAssignment (calculator) schedules %d activities; the bare workflow runs %d no-op activities.\n\n", activities, activities)

	var results []Result
	for _, conc := range o.Concurrency {
		for _, sc := range o.Scenarios {
			r, err := runScenario(ctx, c, sc, o.N, conc, activities)
			if err != nil {
				return results, fmt.Errorf("%s at concurrency %d: %w", sc, conc, err)
			}
			results = append(results, r)
		}
	}
	return results, nil
}

func calculatorInput(id string, pureStages string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{
		"logical_work_id": id, "attempt_no": 1, "conversation_id": "conv-bench", "turn_id": id,
		"context_messages": []map[string]any{{"role": "user", "content": "What is 2 + 2?"}},
		"agent_context":    map[string]any{"profile": "bench", "allowed_tool_names": []string{"calculator"}},
		"tool_call":        map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "2 + 2"}},
		"execution":        map[string]any{"pure_stages": pureStages},
	})
	return raw
}

func assignmentActivityCount(ctx context.Context, c client.Client) (int, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: workflows.DefaultTaskQueue},
		workflows.ExecuteAssignmentWorkflow, calculatorInput("bench-probe", contract.PureStagesRegular))
	if err != nil {
		return 0, err
	}
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		return 0, err
	}
	if res.Status != contract.StatusCompleted {
		return 0, fmt.Errorf("probe assignment ended %s: %+v", res.Status, res.Error)
	}
	n := 0
	iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return 0, err
		}
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			n++
		}
	}
	return n, nil
}

func runScenario(ctx context.Context, c client.Client, scenario string, n, conc, activities int) (Result, error) {
	latencies := make([]time.Duration, n)
	runs := make([]client.WorkflowRun, n)
	failed := 0
	var mu sync.Mutex
	jobs := make(chan int)
	var wg sync.WaitGroup
	started := time.Now()
	var firstErr error
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				t0 := time.Now()
				run, ok, err := runOne(ctx, c, scenario, i, activities)
				latencies[i] = time.Since(t0)
				runs[i] = run
				if err != nil || !ok {
					mu.Lock()
					failed++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	wall := time.Since(started)
	if firstErr != nil && failed == n {
		return Result{}, firstErr
	}
	events, bytes, err := historySize(ctx, c, runs[0])
	if err != nil {
		return Result{}, err
	}
	sorted := slices.Clone(latencies)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return Result{
		Scenario: scenario, N: n, Concurrency: conc, Wall: wall,
		Throughput: float64(n) / wall.Seconds(),
		P50:        percentile(sorted, 50), P99: percentile(sorted, 99),
		EventsPerRun: float64(events), BytesPerRun: float64(bytes), Failed: failed,
	}, nil
}

var runSeq struct {
	sync.Mutex
	n int
}

func nextID(prefix string) string {
	runSeq.Lock()
	defer runSeq.Unlock()
	runSeq.n++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), runSeq.n)
}

func runOne(ctx context.Context, c client.Client, scenario string, i, activities int) (client.WorkflowRun, bool, error) {
	switch scenario {
	case ScenarioBare:
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: nextID("bench-bare"), TaskQueue: "bench-bare"}, bareWorkflowName, activities)
		if err != nil {
			return nil, false, err
		}
		return run, run.Get(ctx, nil) == nil, nil
	default:
		mode := contract.PureStagesRegular
		if scenario != ScenarioFenixRegular {
			mode = contract.PureStagesLocal
		}
		id := nextID("bench-fenix")
		opts := client.StartWorkflowOptions{ID: id, TaskQueue: workflows.DefaultTaskQueue, EnableEagerStart: scenario == ScenarioFenixEager}
		run, err := c.ExecuteWorkflow(ctx, opts, workflows.ExecuteAssignmentWorkflow, calculatorInput(id, mode))
		if err != nil {
			return nil, false, err
		}
		var res contract.Result
		if err := run.Get(ctx, &res); err != nil {
			return run, false, err
		}
		return run, res.Status == contract.StatusCompleted && res.Output != nil && res.Output.Content == "The calculator returned 4.", nil
	}
}

func historySize(ctx context.Context, c client.Client, run client.WorkflowRun) (int, int, error) {
	events, size := 0, 0
	iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return 0, 0, err
		}
		b, _ := e.Marshal()
		events++
		size += len(b)
	}
	return events, size, nil
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	idx := (len(sorted)*p + 99) / 100
	if idx < 1 {
		idx = 1
	}
	return sorted[idx-1]
}

// Print writes the results as a table, with each Fenix scenario's
// throughput relative to the bare workflow at the same concurrency.
func Print(w io.Writer, results []Result) {
	bare := map[int]float64{}
	for _, r := range results {
		if r.Scenario == ScenarioBare {
			bare[r.Concurrency] = r.Throughput
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tconc\truns\tfailed\truns/s\tp50\tp99\tevents/run\tbytes/run\tvs bare\t")
	for _, r := range results {
		ratio := "-"
		if b := bare[r.Concurrency]; b > 0 && r.Scenario != ScenarioBare {
			ratio = fmt.Sprintf("%.2fx", r.Throughput/b)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%s\t%s\t%.0f\t%.0f\t%s\t\n", r.Scenario, r.Concurrency, r.N, r.Failed,
			r.Throughput, r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.EventsPerRun, r.BytesPerRun, ratio)
	}
	tw.Flush()
}
