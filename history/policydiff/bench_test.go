package policydiff

import (
	"context"
	"path/filepath"
	"testing"

	historypb "go.temporal.io/api/history/v1"

	"github.com/fenixrt/fenix/history/runhistory"
	"github.com/fenixrt/fenix/internal/harness/testtools"
)

// BenchmarkReplay measures policy-diff's re-evaluation throughput with
// native Go hooks: parsing each recorded history, extracting its calls,
// re-running Review, PreToolUse and PermissionRequest and diffing. Fetching
// from the server is not included (it is bounded by the server and runs
// concurrently). Run: go test ./policydiff -run '^$' -bench Replay.
func BenchmarkReplay(b *testing.B) {
	files, err := filepath.Glob(filepath.Join(corpus, "*.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("corpus: %v", err)
	}
	histories := make([][]*historypb.HistoryEvent, len(files))
	for i, f := range files {
		if histories[i], err = runhistory.ReadJSONFile(f); err != nil {
			b.Fatal(err)
		}
	}
	p := policyWith(b, testtools.PolicyHook{}, freezeHook{tool: "workspace_read"})
	ctx := context.Background()
	calls := 0
	b.ResetTimer()
	for b.Loop() {
		for i, events := range histories {
			run, err := runhistory.Parse(files[i], "run", events, nil)
			if err != nil {
				b.Fatal(err)
			}
			results, err := ReplayRun(ctx, p, run)
			if err != nil {
				b.Fatal(err)
			}
			calls += len(results)
		}
	}
	b.ReportMetric(float64(calls)/b.Elapsed().Seconds(), "calls/s")
}
