package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/mcpservers"
)

// TestBenchRuns keeps the benchmark working: a few interleaved runs of
// every scenario on a real dev server, each checked for its answer. The
// numbers come from `go run ./starter bench`.
func TestBenchRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Temporal dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := devserver.CLIPath(ctx, true, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	results, err := Run(ctx, Options{N: 3, Concurrency: []int{1, 2}, CLIPath: cli, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * (len(allScenarios(0, nil)) + 3 + 3) // and the three shape floors, with and without payloads
	if _, err := mcpservers.Install(ctx); err == nil {
		want += 2 * len(mcpScenarios())
	}
	_, withPython := Python()
	if withPython {
		want += 2 * len(pythonHookScenarios())
	}
	if len(results) != want {
		t.Fatalf("got %d results, want %d", len(results), want)
	}
	for _, r := range results {
		if r.Failed != 0 || r.Throughput <= 0 || r.EventsPerRun == 0 || r.Max < r.P99 {
			t.Errorf("%s at %d: %+v", r.Scenario, r.Concurrency, r)
		}
	}
	Print(&out, results)
	for _, want := range []string{"p50/floor", "p50/shape", "p50/payload", ScenarioCalculatorFast, ScenarioAgentTurnRegular, "bare workflow shaped LL", "KB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// Three runs at each of two concurrencies, by each of the two python
	// hook workers: every run's log_commands.py appended its line.
	if withPython && !strings.Contains(out.String(), "log_commands.py logged 12 commands") {
		t.Errorf("the python hooks did not log 12 commands:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}
