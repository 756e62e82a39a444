package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/bench"
	"github.com/fenixrt/fenix/internal/harness/childproc"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/workflows"
)

// BenchmarkClusterFloorAndFenix measures a governed exec_command call on
// the production-shaped cluster (server 1.29.1 on PostgreSQL with the
// shipped dynamic config, two hosts in network namespaces) next to its
// durable floor, a bare workflow with one no-op activity served by a
// floor worker in each host's namespace, and its shape floor (the local
// and regular activities of a first call's history with no-op stages, the
// command run by sh -c true). Both are started from this
// process. Each sub-benchmark reports p50 and p99 latency, calls/s (at
// concurrency 20: the cluster's throughput, both hosts together) and the
// PostgreSQL transactions and row writes per call in the Temporal,
// visibility and Fenix databases.
//
//	sudo FENIX_TEST_POSTGRES_DSN=postgres://… go test -run '^$' -bench ClusterFloorAndFenix -benchtime 100x ./internal/harness/cluster/
func BenchmarkClusterFloorAndFenix(b *testing.B) {
	if skipReason != "" {
		b.Skip(skipReason)
	}
	startFloorWorkers(b)
	var seq atomic.Int64
	floor := func(ctx context.Context) error {
		id := fmt.Sprintf("bench-floor-%d-%d", time.Now().UnixNano(), seq.Add(1))
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: bench.BareQueue}, bench.BareWorkflowName, 1)
		if err != nil {
			return err
		}
		return run.Get(ctx, nil)
	}
	var lastExec atomic.Value
	fenix := func(ctx context.Context) error {
		id := fmt.Sprintf("bench-exec-%d-%d", time.Now().UnixNano(), seq.Add(1))
		res, err := startAndWait(workflows.ExecuteAssignmentWorkflow, id,
			assignment(id, execCall("call-"+id, "true", 30), "exec_command"), 2*time.Minute)
		if err == nil && res.Status != contract.StatusCompleted {
			err = fmt.Errorf("%s: %s: %+v", id, res.Status, res.Error)
		}
		lastExec.Store(id)
		return err
	}
	// The shape floors: exec_command's run as this cluster records it
	// (its local stages and the command's activity), read from a first
	// call's history, with no-op stages and the command run by sh -c true;
	// then the same carrying the run's payloads.
	if err := fenix(context.Background()); err != nil {
		b.Fatal(err)
	}
	shapeOfExec, err := bench.ShapeOf(context.Background(), tc, lastExec.Load().(string), "", bench.ShapeShTrue)
	if err != nil {
		b.Fatal(err)
	}
	floorRun := func(start func(context.Context, client.Client) (client.WorkflowRun, error)) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := start(ctx, tc)
			return err
		}
	}
	shape, payloads := floorRun(bench.ShapeFloor(shapeOfExec.Steps)), floorRun(bench.PayloadShapeFloor(shapeOfExec))
	for _, conc := range []int{1, 20} {
		for _, sc := range []struct {
			name string
			run  func(context.Context) error
		}{{"floor_1_activity", floor}, {"shape_" + shapeOfExec.Steps, shape}, {"shape_" + shapeOfExec.Steps + "_with_payloads", payloads},
			{"fenix_exec_command_true", fenix}} {
			b.Run(fmt.Sprintf("%s/c=%d", sc.name, conc), func(b *testing.B) {
				measureOnCluster(b, conc, sc.run)
			})
		}
	}
}

// measureOnCluster runs b.N calls, conc at a time, and reports latency,
// throughput and PostgreSQL writes per call.
func measureOnCluster(b *testing.B, conc int, call func(context.Context) error) {
	ctx := context.Background()
	before := pgWrites(b)
	took := make([]time.Duration, b.N)
	next := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	b.ResetTimer()
	began := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				if err := call(ctx); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				took[i] = time.Since(start)
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	wall := time.Since(began)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed; first: %v", n, b.N, firstErr.Load())
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	at := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	b.ReportMetric(float64(at(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(at(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(b.N)/wall.Seconds(), "calls/s")
	// pg_stat_database is flushed by each backend at most once a second.
	time.Sleep(2 * time.Second)
	after := pgWrites(b)
	perCall := func(n int64) float64 { return float64(n) / float64(b.N) }
	b.ReportMetric(perCall(after.xacts-before.xacts), "pg-xacts/call")
	b.ReportMetric(perCall(after.rows-before.rows), "pg-rows/call")
	b.ReportMetric(perCall(after.byDB[cl.TemporalDB]-before.byDB[cl.TemporalDB]), "rows-temporal/call")
	b.ReportMetric(perCall(after.byDB[cl.VisibilityDB]-before.byDB[cl.VisibilityDB]), "rows-visibility/call")
	b.ReportMetric(perCall(after.byDB[cl.FenixDB]-before.byDB[cl.FenixDB]), "rows-fenix/call")
}

// writeCounts are committed transactions (read-only ones count too, as
// pg_stat_database counts them) and rows inserted, updated or deleted in
// the cluster's databases, in all and per database.
type writeCounts struct {
	xacts, rows int64
	byDB        map[string]int64
}

func pgWrites(b *testing.B) writeCounts {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, cl.PG.DSN(cl.TemporalDB, ""))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	w := writeCounts{byDB: map[string]int64{}}
	// This query's own transaction counts too: one per reading, the same
	// before and after.
	rows, err := conn.Query(ctx, `SELECT datname, xact_commit, tup_inserted + tup_updated + tup_deleted
		FROM pg_stat_database WHERE datname = ANY($1)`, []string{cl.TemporalDB, cl.VisibilityDB, cl.FenixDB})
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var db string
		var xacts, written int64
		if err := rows.Scan(&db, &xacts, &written); err != nil {
			b.Fatal(err)
		}
		w.xacts += xacts
		w.rows += written
		w.byDB[db] = written
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return w
}

// startFloorWorkers builds the floor worker and starts one in each host's
// network namespace, dialing Temporal the way that host's Fenix worker
// does.
func startFloorWorkers(b *testing.B) {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "floorworker")
	build := exec.Command("go", "build", "-o", bin, "./internal/harness/bench/cmd/floorworker")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build floorworker: %v\n%s", err, out)
	}
	for _, h := range []*Host{hostA, hostB} {
		cmd := h.Link.Command(bin)
		cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+h.TemporalAddress(), "TEMPORAL_NAMESPACE="+cl.Namespace)
		logs := &logBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		p, err := childproc.Start(cmd)
		if err != nil {
			b.Fatalf("host %s: start floorworker: %v", h.Name, err)
		}
		b.Cleanup(func() { _ = p.Stop(5 * time.Second) })
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(logs.String(), "floor worker started") {
			if time.Now().After(deadline) {
				b.Fatalf("host %s: floorworker did not start:\n%s", h.Name, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
