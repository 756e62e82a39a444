// Command install installs the MCP reference servers the tests run into
// their cache (see package mcpservers); a no-op when they are there.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/fenixrt/fenix/internal/harness/mcpservers"
)

func main() {
	s, err := mcpservers.Install(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpservers:", err)
		os.Exit(1)
	}
	fmt.Println("MCP reference servers in", s.Dir)
}
