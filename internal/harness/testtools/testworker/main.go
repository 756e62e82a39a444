// Command testworker is a Fenix worker with the test tools registered
// (test_sleep, test_slow_lookup), for fault tests that kill a worker
// process while a test tool runs. Production workers are ./worker.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/internal/harness/testtools"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "testworker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("testworker", flag.ContinueOnError)
	queue := fs.String("task-queue", workflows.DefaultTaskQueue, "shared task queue")
	dataDir := fs.String("data-dir", "", "data directory")
	workspace := fs.String("workspace-root", "", "default workspace root")
	hooksFile := fs.String("hooks-file", "", "command hook settings file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return err
	}
	opts.Logger = worker.NewSDKLogger(logger)
	opts.DataConverter = codec.NewDataConverter(nil)
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	registry, err := testtools.WithBuiltins(testtools.Sleep(), testtools.SlowLookup())
	if err != nil {
		return err
	}
	w, err := worker.New(c, worker.Config{TaskQueue: *queue, DataDir: *dataDir, DefaultWorkspaceRoot: *workspace,
		HooksFile: *hooksFile, Tools: registry, Logger: logger, Namespace: opts.Namespace})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}
