package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/fenixrt/fenix/history/verify"
)

// cmdVerify checks recorded runs for tool executions without an allow.
// Exit 0: none; 1: some (or an error).
func cmdVerify(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	query := fs.String("query", "", "visibility query narrowing the runs, e.g. \"ConversationId = 'conv-1'\"")
	since := fs.Duration("since", 0, "only runs started within this long (default: every run the namespace keeps)")
	asJSON := fs.Bool("json", false, "print the summary and violations as JSON")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return exitUsage, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *since < 0 {
		return exitUsage, usageError{"-since must be positive"}
	}
	q := *query
	if *since > 0 {
		window := fmt.Sprintf("StartTime >= '%s'", time.Now().Add(-*since).UTC().Format(time.RFC3339Nano))
		if q == "" {
			q = window
		} else {
			q = window + " AND (" + q + ")"
		}
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	sum, err := verify.Server(ctx, conn.Client, conn.dc, conn.namespace, q)
	if err != nil {
		return exitFailed, err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return exitFailed, err
		}
	} else {
		for _, v := range sum.Violations {
			fmt.Fprintf(c.stdout, "VIOLATION %s\n  %s\n", v, runURL(conn.uiBase, conn.namespace, v.WorkflowID, v.RunID))
		}
		fmt.Fprintln(c.stdout, sum.Line())
	}
	if len(sum.Violations) > 0 {
		return exitFailed, nil
	}
	return exitOK, nil
}
