package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"

	"github.com/fenixrt/fenix/internal/harness/bench"
	"github.com/fenixrt/fenix/internal/harness/devserver"
)

// cmdBench starts its own dev server and worker and measures Fenix against
// the durable floor: bare workflows doing only the round trips each
// scenario cannot avoid.
func cmdBench(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	n := fs.Int("n", 100, "runs per scenario and concurrency")
	conc := fs.String("concurrency", "1,20", "comma-separated concurrencies")
	think := fs.Duration("think", 0, "pause before each run, like an agent waiting on its model (0: back to back)")
	only := fs.String("only", "", "regular expression: run only the matching scenarios (and their floors)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the worker and client (this process; the server is another) to this file, for `go tool pprof`")
	traceFile := fs.String("trace", "", "write a Go execution trace of the worker and client to this file: `go tool trace -pprof=sched FILE` shows where goroutines waited to run")
	compression := fs.String("grpc-compression", "gzip", "client request compression, for the floor and Fenix alike: gzip (the SDK's default) or none")
	server := fs.String("server-config", bench.ServerFenix, "dev server dynamic config: fenix (eager activities, transfer-queue poll limit lifted, one partition), stock (as the CLI ships) or eager (stock plus eager activities)")
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
	var filter *regexp.Regexp
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return exitUsage, usageError{fmt.Sprintf("-only %q: %v", *only, err)}
		}
		filter = re
	}
	cliPath, err := devserver.CLIPath(ctx, true, c.stderr)
	if err != nil {
		return exitFailed, err
	}
	for _, rec := range []struct {
		flag, path string
		start      func(io.Writer) error
		stop       func()
	}{{"-cpuprofile", *cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile}, {"-trace", *traceFile, trace.Start, trace.Stop}} {
		if rec.path == "" {
			continue
		}
		f, err := os.Create(rec.path)
		if err != nil {
			return exitFailed, fmt.Errorf("%s: %w", rec.flag, err)
		}
		defer f.Close()
		if err := rec.start(f); err != nil {
			return exitFailed, fmt.Errorf("%s %s: %w", rec.flag, rec.path, err)
		}
		defer rec.stop()
	}
	results, err := bench.Run(ctx, bench.Options{N: *n, Concurrency: levels, Think: *think, Only: filter,
		CLIPath: cliPath, ServerConfig: *server, GRPCCompression: *compression, Out: c.stdout})
	if err != nil {
		return exitFailed, err
	}
	bench.Print(c.stdout, results)
	return exitOK, nil
}
