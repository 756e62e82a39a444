// Package bench measures Fenix against the durable floor on a real dev
// server: bare workflows that do only what durability requires (no
// activity, one activity, the model calls of an agent turn) next to
// governed Fenix calls that need exactly that much, in the fast and the
// regular stage modes. Scenarios are interleaved in rounds on one server,
// so a slow minute of the machine hits them all alike.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	fenixworker "github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// Options configure a run.
type Options struct {
	// N is the number of runs per scenario and concurrency.
	N           int
	Concurrency []int
	// Think is a pause before each run of a worker goroutine, like an
	// agent waiting on its model between tool calls (0: back to back).
	Think time.Duration
	// Only keeps the scenarios whose names match (nil: all).
	Only    *regexp.Regexp
	CLIPath string
	// ServerConfig is the dev server's dynamic config: ServerFenix
	// (devserver.DynamicConfig, the default), ServerStock (as the Temporal
	// CLI ships) or ServerEager (stock plus eager activities).
	ServerConfig string
	// GRPCCompression is the client's request compression for the floor
	// and Fenix alike: "gzip" (the SDK's default) or "none".
	GRPCCompression string
	Out             io.Writer
	Logger          *slog.Logger
}

// Result is one scenario at one concurrency.
type Result struct {
	Scenario string
	Floor    string
	// ShapeFloor is the bare workflow with this run's own activities (see
	// BareShapeWorkflow), "" for none; PayloadFloor the same carrying the
	// run's payloads (BarePayloadShapeWorkflow).
	ShapeFloor   string
	PayloadFloor string
	Concurrency  int
	N            int
	Failed       int
	// Busy is the wall time of this scenario's batches (think time
	// included); Throughput is N / Busy.
	Busy       time.Duration
	Throughput float64
	P50, P99   time.Duration
	// Max is the slowest run; Slowest describes it when it took far
	// longer than the rest (see describeSlowest).
	Max          time.Duration
	Slowest      string
	EventsPerRun int
	BytesPerRun  int
	// TasksPerRun and InTask are the workflow tasks of a run and the time
	// the worker held them, averaged over up to sampleRuns runs.
	TasksPerRun int
	InTask      time.Duration
	FirstError  error
}

// BareQueue is the floor workers' task queue.
const BareQueue = "bench-bare"

// BareWorkflow runs n no-op activities in sequence: the floor any
// pipeline of n regular activities pays on this server.
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

// ShTrue runs `sh -c true`: the work of exec_command `true` without Fenix.
func ShTrue(ctx context.Context) error {
	return exec.CommandContext(ctx, "sh", "-c", "true").Run()
}

// NewBareWorker serves the floors on BareQueue: BareWorkflow,
// BareShapeWorkflow, BarePayloadShapeWorkflow and their activities.
func NewBareWorker(c client.Client) worker.Worker {
	bare := worker.New(c, BareQueue, worker.Options{})
	bare.RegisterWorkflowWithOptions(BareWorkflow, workflow.RegisterOptions{Name: BareWorkflowName})
	bare.RegisterWorkflowWithOptions(BareShapeWorkflow, workflow.RegisterOptions{Name: BareShapeWorkflowName})
	bare.RegisterActivityWithOptions(Noop, activity.RegisterOptions{Name: "Noop"})
	bare.RegisterActivityWithOptions(ShTrue, activity.RegisterOptions{Name: "ShTrue"})
	registerPayloadShape(bare)
	return bare
}

// BareShapeWorkflowName is BareShapeWorkflow's registered name.
const BareShapeWorkflowName = "BenchBareShapeWorkflow"

// BareWorkflowName is BareWorkflow's registered name.
const BareWorkflowName = "BenchBareWorkflow"

// Run starts a dev server and the workers and measures every scenario at
// every concurrency.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.N <= 0 {
		o.N = 100
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 20}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	serverOpts, config, err := serverOptions(o.ServerConfig)
	if err != nil {
		return nil, err
	}
	serverOpts.CLIPath = o.CLIPath
	srv, err := devserver.Start(ctx, serverOpts)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	dataDir, err := os.MkdirTemp("", "fenix-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	workspace, err := os.MkdirTemp("", "fenix-bench-workspace-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(workspace)

	c := srv.Client()
	switch o.GRPCCompression {
	case "", "gzip":
	case "none":
		plain, err := client.Dial(client.Options{HostPort: srv.HostPort, Namespace: srv.Namespace,
			Logger:            sdklog.NewStructuredLogger(o.Logger),
			DataConverter:     codec.NewDataConverter(nil),
			ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
		if err != nil {
			return nil, err
		}
		defer plain.Close()
		c = plain
	default:
		return nil, fmt.Errorf("grpc compression %q is unknown: use gzip or none", o.GRPCCompression)
	}
	mcpFile, withMCP, err := mcpConfig(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	model, err := scriptedModel()
	if err != nil {
		return nil, err
	}
	// Fenced off the server, as the worker binary is by default
	// (FENIX_COMMAND_UNREACHABLE=frontend): commands pay for it.
	fenced := tools.HostConfig{Unreachable: []string{srv.HostPort}}
	w, err := fenixworker.New(c, fenixworker.Config{TaskQueue: workflows.DefaultTaskQueue, DataDir: dataDir,
		DefaultWorkspaceRoot: workspace, Logger: o.Logger, Model: &llm.Router{Scripted: model}, MCPConfig: mcpFile, HostConfig: fenced})
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()
	bare := NewBareWorker(c)
	if err := bare.Start(); err != nil {
		return nil, err
	}
	defer bare.Stop()
	if withMCP {
		bareMCP := newBareMCPWorker(c, w.MCP())
		if err := bareMCP.Start(); err != nil {
			return nil, err
		}
		defer bareMCP.Stop()
	}

	python, withPython := Python()
	var project string
	if withPython {
		if project, err = PythonHooksProject(dataDir, python); err != nil {
			return nil, err
		}
		for _, hw := range []struct {
			queue       string
			concurrency int
		}{{pythonHooksInTurnQueue, 1}, {pythonHooksTogetherQueue, 0}} {
			hooked, err := fenixworker.New(c, fenixworker.Config{TaskQueue: hw.queue, DataDir: filepath.Join(dataDir, hw.queue),
				DefaultWorkspaceRoot: workspace, Logger: o.Logger, HooksFile: project, HookConcurrency: hw.concurrency, HostConfig: fenced})
			if err != nil {
				return nil, err
			}
			if err := hooked.Start(); err != nil {
				return nil, err
			}
			defer hooked.Stop()
		}
	}

	// The regular calculator's own activity count, for the bare workflow
	// that pays the same number of round trips.
	regularActivities, err := countActivities(ctx, c, ScenarioCalculatorRegular)
	if err != nil {
		return nil, err
	}
	shapes, err := fastShapes(ctx, c)
	if err != nil {
		return nil, err
	}
	all := allScenarios(regularActivities, shapes)
	if withMCP {
		all = append(all, mcpScenarios()...)
	} else {
		fmt.Fprintln(o.Out, "MCP scenarios skipped: the npm reference servers are unavailable (node/npm missing or the install failed)")
	}
	if withPython {
		all = append(all, pythonHookScenarios()...)
	} else {
		fmt.Fprintln(o.Out, "python hook scenarios skipped: no python3")
	}
	scenarios := selectScenarios(all, o.Only)
	if withPython && slices.ContainsFunc(scenarios, func(sc scenario) bool { return sc.name == ScenarioPythonHooksTogether }) {
		startup, err := PythonStartup(ctx, python, 20)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "python hooks run with %s: %s to start and import json, re, sys (p50 of 20)\n", python, startup.Round(time.Millisecond/10))
	}
	fmt.Fprintf(o.Out, "dev server with %s; %d runs per scenario, interleaved in rounds; think time %s\n", config, o.N, o.Think)
	fmt.Fprintf(o.Out, "the regular-mode calculator schedules %d regular activities\n\n", regularActivities)

	var results []Result
	for _, conc := range o.Concurrency {
		rs, err := measure(ctx, c, scenarios, o.N, conc, o.Think)
		if err != nil {
			return results, err
		}
		results = append(results, rs...)
	}
	if project != "" && slices.ContainsFunc(scenarios, func(sc scenario) bool { return sc.name == ScenarioPythonHooksTogether }) {
		logged, err := CommandsLogged(project)
		if err != nil {
			return results, fmt.Errorf("the python hooks' command log: %w", err)
		}
		fmt.Fprintf(o.Out, "log_commands.py logged %d commands\n", logged)
	}
	return results, nil
}

// Server configurations of Options.ServerConfig.
const (
	ServerFenix = "fenix"
	ServerStock = "stock"
	ServerEager = "eager"
)

const eagerActivities = "system.enableActivityEagerExecution=true"

func serverOptions(name string) (devserver.Options, string, error) {
	switch name {
	case "", ServerFenix:
		return devserver.Options{}, "devserver.DynamicConfig " + fmt.Sprint(devserver.DynamicConfig), nil
	case ServerStock:
		return devserver.Options{StockConfig: true}, "the CLI's stock dynamic config", nil
	case ServerEager:
		return devserver.Options{StockConfig: true, ExtraArgs: []string{"--dynamic-config-value", eagerActivities}},
			"the CLI's stock dynamic config plus " + eagerActivities, nil
	}
	return devserver.Options{}, "", fmt.Errorf("server config %q is not %q, %q or %q", name, ServerFenix, ServerStock, ServerEager)
}

// measure runs every scenario n times at concurrency conc, interleaved:
// each round runs one batch of every scenario in turn.
func measure(ctx context.Context, c client.Client, scenarios []scenario, n, conc int, think time.Duration) ([]Result, error) {
	batch := 1
	if conc > 1 {
		batch = 2 * conc
	}
	accs := make([]batchResult, len(scenarios))
	for done := 0; done < n; done += batch {
		size := min(batch, n-done)
		for i, sc := range scenarios {
			if err := ctx.Err(); err != nil {
				// Interrupted: what was measured is not the n runs asked for.
				return nil, fmt.Errorf("benchmark interrupted after %d of %d runs per scenario: %w", done, n, err)
			}
			b := runBatch(ctx, c, sc, size, conc, think)
			a := &accs[i]
			a.latencies = append(a.latencies, b.latencies...)
			a.busy += b.busy
			a.failed += b.failed
			if a.firstErr == nil {
				a.firstErr = b.firstErr
			}
			a.sample = append(a.sample, b.sample[:min(len(b.sample), sampleRuns-len(a.sample))]...)
			if b.slowest > a.slowest {
				a.slowest, a.slowestRun = b.slowest, b.slowestRun
			}
		}
	}
	var out []Result
	for i, sc := range scenarios {
		a := accs[i]
		r := Result{Scenario: sc.name, Floor: sc.floor, ShapeFloor: sc.shapeFloor, PayloadFloor: sc.payloadFloor, Concurrency: conc, N: n, Failed: a.failed, Busy: a.busy, FirstError: a.firstErr}
		if a.busy > 0 {
			r.Throughput = float64(n-a.failed) / a.busy.Seconds()
		}
		slices.Sort(a.latencies)
		r.P50, r.P99, r.Max = percentile(a.latencies, 50), percentile(a.latencies, 99), a.slowest
		if a.slowestRun != nil && a.slowest > outlierFactor*r.P50 && a.slowest > time.Second {
			r.Slowest = describeSlowest(ctx, c, a.slowestRun, a.slowest)
		}
		if len(a.sample) > 0 {
			var inTask time.Duration
			for _, run := range a.sample {
				st, err := historyOf(ctx, c, run)
				if err != nil {
					return nil, err
				}
				r.EventsPerRun, r.BytesPerRun, r.TasksPerRun = st.events, st.bytes, st.tasks
				inTask += st.inTask
			}
			r.InTask = inTask / time.Duration(len(a.sample))
		}
		if a.failed == n {
			return nil, fmt.Errorf("%s at concurrency %d: every run failed: %w", sc.name, conc, a.firstErr)
		}
		out = append(out, r)
	}
	return out, nil
}

// batchResult is what runs of one scenario measured.
type batchResult struct {
	latencies []time.Duration
	busy      time.Duration
	failed    int
	firstErr  error
	// sample are completed runs, for their histories.
	sample []client.WorkflowRun
	// slowest is the longest completed run, slowestRun the run.
	slowest    time.Duration
	slowestRun client.WorkflowRun
}

// sampleRuns is how many runs of a scenario have their history read.
const sampleRuns = 10

// runBatch runs size runs of one scenario with conc goroutines.
func runBatch(ctx context.Context, c client.Client, sc scenario, size, conc int, think time.Duration) batchResult {
	var r batchResult
	jobs := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	started := time.Now()
	for g := 0; g < min(conc, size); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if think > 0 {
					select {
					case <-ctx.Done():
						continue // the feeder stops too
					case <-time.After(think):
					}
				}
				t0 := time.Now()
				run, err := sc.run(ctx, c)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					r.failed++
					if r.firstErr == nil {
						r.firstErr = err
					}
				} else {
					r.latencies = append(r.latencies, d)
					if d > r.slowest {
						r.slowest, r.slowestRun = d, run
					}
					if len(r.sample) < sampleRuns {
						r.sample = append(r.sample, run)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < size && ctx.Err() == nil; i++ {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	r.busy = time.Since(started)
	return r
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	idx := (len(sorted)*p + 99) / 100
	return sorted[max(idx, 1)-1]
}
