package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// An interrupted benchmark (Ctrl-C, SIGTERM) stops at once, even between
// runs spaced by think time, and says that it measured less than asked.
func TestAnInterruptedBenchStopsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	runs := 0
	quick := scenario{name: "quick", run: func(context.Context, client.Client) (client.WorkflowRun, error) {
		runs++
		return nil, nil
	}}
	start := time.Now()
	_, err := measure(ctx, nil, []scenario{quick, quick}, 100, 1, time.Second)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the interrupted bench took %s to stop", took)
	}
	if err == nil || !strings.Contains(err.Error(), "interrupted after") {
		t.Fatalf("err = %v, want the interruption named", err)
	}
	if runs > 2 {
		t.Fatalf("%d runs after the interruption", runs)
	}
}
