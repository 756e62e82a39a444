package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Print writes the results as a table. Each Fenix row is compared with its
// durable floor at the same concurrency: "p50/floor" is its median latency
// over the floor's (lower is better), "tput/floor" its throughput over the
// floor's (higher is better). "tasks" and "in task" are a run's workflow
// tasks and the time the worker held them (local stages included),
// averaged over sampled runs: the rest of p50 is the server's.
// "p50/shape" and "tput/shape" compare a fast Fenix row with the bare
// workflow shaped like it (BareShapeWorkflow: L a no-op local activity, A
// a no-op activity, X an activity running sh -c true): what is left is the
// cost of Fenix's stage code rather than of Temporal's machinery.
// "p50/payload" and "tput/payload" compare it with the same bare workflow
// carrying what the Fenix run records (BarePayloadShapeWorkflow): what is
// left is the work of its stages and of the workflow code around them.
func Print(w io.Writer, results []Result) {
	type key struct {
		name string
		conc int
	}
	byKey := map[key]Result{}
	for _, r := range results {
		byKey[key{r.Scenario, r.Concurrency}] = r
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tconc\truns\tfailed\truns/s\tp50\tp99\tevents/run\tbytes/run\ttasks\tin task\tfloor\tp50/floor\ttput/floor\tp50/shape\ttput/shape\tp50/payload\ttput/payload\t")
	ratios := func(r Result, floorName string) (p50, tput string) {
		p50, tput = "-", "-"
		f, ok := byKey[key{floorName, r.Concurrency}]
		if !ok || floorName == "" {
			return p50, tput
		}
		if f.P50 > 0 {
			p50 = fmt.Sprintf("%.2fx", float64(r.P50)/float64(f.P50))
		}
		if f.Throughput > 0 {
			tput = fmt.Sprintf("%.2fx", r.Throughput/f.Throughput)
		}
		return p50, tput
	}
	for _, r := range results {
		floor := "-"
		if r.Floor != "" {
			floor = r.Floor
		}
		p50Ratio, tputRatio := ratios(r, r.Floor)
		p50Shape, tputShape := ratios(r, r.ShapeFloor)
		p50Payload, tputPayload := ratios(r, r.PayloadFloor)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Scenario, r.Concurrency, r.N, r.Failed,
			r.Throughput, round(r.P50), round(r.P99), r.EventsPerRun, r.BytesPerRun, r.TasksPerRun, round(r.InTask), floor, p50Ratio, tputRatio,
			p50Shape, tputShape, p50Payload, tputPayload)
	}
	tw.Flush()
	for _, r := range results {
		if r.Slowest != "" {
			fmt.Fprintf(w, "%s at concurrency %d: an outlier (p50 %s): %s\n", r.Scenario, r.Concurrency, round(r.P50), r.Slowest)
		}
	}
	for _, r := range results {
		if r.FirstError != nil {
			fmt.Fprintf(w, "%s at concurrency %d: %d failed, first: %v\n", r.Scenario, r.Concurrency, r.Failed, r.FirstError)
		}
	}
}

func round(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
