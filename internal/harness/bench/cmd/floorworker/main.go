// Command floorworker serves the durable floor (bench.BareWorkflow and its
// no-op activity) on bench.BareQueue, so a benchmark can measure the floor
// from a worker placed where Fenix's workers run: on the production-shaped
// cluster, inside a host's network namespace. It dials TEMPORAL_ADDRESS and
// TEMPORAL_NAMESPACE (envconfig), like the Fenix worker.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/fenixrt/fenix/internal/harness/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floorworker:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %q: %w", opts.HostPort, err)
	}
	defer c.Close()
	w := bench.NewBareWorker(c)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	fmt.Println("floor worker started")
	<-ctx.Done()
	return nil
}
