package verify

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

	"github.com/fenixrt/fenix/history/runhistory"
)

// Summary is the check of many runs.
type Summary struct {
	Runs       int `json:"runs"`
	Executions int `json:"executions"`
	// Ungoverned counts runs recorded before lifecycle hooks.
	Ungoverned int         `json:"ungoverned"`
	Violations []Violation `json:"violations"`
}

// Err is nil when no run has a violation, else an error listing them all.
func (s Summary) Err() error {
	if len(s.Violations) == 0 {
		return nil
	}
	lines := make([]string, len(s.Violations))
	for i, v := range s.Violations {
		lines[i] = "  - " + v.String()
	}
	return fmt.Errorf("%d tool %s ran without an allow:\n%s", len(s.Violations), plural(len(s.Violations), "execution", "executions"),
		strings.Join(lines, "\n"))
}

// Line is the one-line summary.
func (s Summary) Line() string {
	return fmt.Sprintf("%d %s checked, %d %s (tool calls and subagent starts), %d without an allow",
		s.Runs, plural(s.Runs, "run", "runs"), s.Executions, plural(s.Executions, "execution", "executions"), len(s.Violations))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Server checks every ExecuteAssignment and AgentTurn run the visibility
// query narrows to (all of them when it is empty), whatever their status:
// a running run's history so far must hold too. dc must be the workers'
// data converter. A run that cannot be read fails the check, naming it.
func Server(ctx context.Context, c client.Client, dc converter.DataConverter, namespace, query string) (Summary, error) {
	refs, err := runhistory.List(ctx, c, namespace, runhistory.ToolRunsQuery(query))
	if err != nil {
		return Summary{}, err
	}
	reports := make([]Report, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, ref := range refs {
		g.Go(func() error {
			run, err := runhistory.Fetch(gctx, c, ref.WorkflowID, ref.RunID, dc)
			if err != nil {
				return fmt.Errorf("reading %s (run %s): %w", ref.WorkflowID, ref.RunID, err)
			}
			reports[i], err = Run(run)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return Summary{}, err
	}
	sum := Summary{Runs: len(refs), Violations: []Violation{}}
	for _, r := range reports {
		sum.Executions += r.Executions
		sum.Violations = append(sum.Violations, r.Violations...)
		if r.Ungoverned {
			sum.Ungoverned++
		}
	}
	return sum, nil
}
