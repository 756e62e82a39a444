// Command build builds the production Temporal server into its cache (see
// internal/harness/prodserver), with the same code the cluster tests use, so CI can
// build it once before the test suite starts.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fenixrt/fenix/internal/harness/prodserver"
)

func main() {
	start := time.Now()
	b, err := prodserver.Find(context.Background(), true, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prodserver build:", err)
		os.Exit(1)
	}
	fmt.Printf("temporal server %s: %s, %s (ready in %s)\n", prodserver.Version, b.Server, b.SQLTool, time.Since(start).Round(time.Second))
}
