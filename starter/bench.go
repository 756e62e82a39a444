package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenixrt/fenix/internal/bench"
	"github.com/fenixrt/fenix/internal/devserver"
)

// cmdBench starts its own dev server and worker and measures Fenix against
// a bare workflow with the same number of activities.
func cmdBench(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	n := fs.Int("n", 100, "runs per scenario and concurrency")
	conc := fs.String("concurrency", "1,20", "comma-separated concurrencies")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	var levels []int
	for _, part := range strings.Split(*conc, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < 1 {
			return exitUsage, usageError{fmt.Sprintf("concurrency %q is not a positive number", part)}
		}
		levels = append(levels, v)
	}
	cliPath, err := devserver.CLIPath(ctx, true, c.stderr)
	if err != nil {
		return exitFailed, err
	}
	results, err := bench.Run(ctx, bench.Options{N: *n, Concurrency: levels, CLIPath: cliPath, Out: c.stdout})
	if err != nil {
		return exitFailed, err
	}
	bench.Print(c.stdout, results)
	return exitOK, nil
}
