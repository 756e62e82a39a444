// Command build finds or builds the Temporal CLI the dev servers run (see
// internal/harness/devserver.CLIPath), with the same code the tests use, so
// CI builds it once, without a test's time limit, before the suite starts.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fenixrt/fenix/internal/harness/devserver"
)

func main() {
	start := time.Now()
	path, err := devserver.CLIPath(context.Background(), true, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devserver build:", err)
		os.Exit(1)
	}
	fmt.Printf("temporal CLI: %s (ready in %s)\n", path, time.Since(start).Round(time.Second))
}
