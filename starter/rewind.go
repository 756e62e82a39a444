package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/history/policydiff"
	"github.com/fenixrt/fenix/history/rewind"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// cmdRewind resets a run to the workflow task before a stage. Exit 0: reset
// (or planned, with -dry-run); 1: refused or failed.
func cmdRewind(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("rewind", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	to := fs.String("to", "", "stage to rewind to: step, compact, review, pre_tool_use or permission")
	callID := fs.String("call", "", "tool call of review, pre_tool_use and permission (needed when the run has several)")
	step := fs.Int("step", 0, "AgentTurn step: required with -to step, narrows the other stages")
	reason := fs.String("reason", "", "why, recorded in the reset and in the new run's rewound_from trace entry")
	allowRerun := fs.Bool("allow-rerun", false, "rewind even though tools with side effects (writes included) that already ran will run again")
	discardPending := fs.Bool("discard-pending", false, "rewind a running run even though it waits for a permission decision (the request is dropped)")
	runID := fs.String("run-id", "", "run to rewind (default: the workflow's current run)")
	dryRun := fs.Bool("dry-run", false, "print the plan (and the event ID for the Web UI's reset) without resetting")
	// The workflow ID may come before the flags, as in the usage line.
	var workflowID string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		workflowID, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	if workflowID == "" && fs.NArg() == 1 {
		workflowID = fs.Arg(0)
	} else if fs.NArg() != 0 || workflowID == "" {
		return exitUsage, usageError{"expected exactly one workflow ID"}
	}
	if *to == "" {
		return exitUsage, usageError{"-to is required: step, compact, review, pre_tool_use or permission"}
	}
	target := rewind.Target{Stage: rewind.Stage(*to), CallID: *callID, Step: *step}
	if *reason == "" {
		*reason = "starter rewind to " + *to
	}

	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	if *runID == "" {
		desc, err := conn.DescribeWorkflow(ctx, workflowID, "")
		if err != nil {
			return exitFailed, fmt.Errorf("workflow %s: %w", workflowID, err)
		}
		*runID = desc.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	run, err := conn.fetchRun(ctx, policydiff.RunRef{WorkflowID: workflowID, RunID: *runID})
	if err != nil {
		return exitFailed, fmt.Errorf("reading %s (run %s): %w", workflowID, *runID, err)
	}
	plan, err := rewind.Locate(run, target, builtinSideEffects)
	if err != nil {
		return exitFailed, err
	}
	if plan.Running {
		plan.AwaitingPermission = conn.awaitingPermission(ctx, plan)
	}
	printPlan(c, plan)
	if err := plan.CheckRunning(*discardPending); err != nil {
		return exitFailed, err
	}
	if err := plan.Check(*allowRerun); err != nil {
		return exitFailed, err
	}
	if *dryRun {
		fmt.Fprintf(c.stdout, "Dry run: nothing reset. The same reset from the Web UI: Reset → event %d; or\n  temporal workflow reset --workflow-id %s --run-id %s --event-id %d --reason %q\n",
			plan.ResetEventID, plan.WorkflowID, plan.RunID, plan.ResetEventID, *reason)
		return exitOK, nil
	}
	host, _ := os.Hostname()
	out, err := rewind.Reset(ctx, conn.Client, conn.dc, conn.namespace, plan, *reason, "fenix-starter@"+host)
	if err != nil {
		return exitFailed, err
	}
	fmt.Fprintf(c.stdout, "Reset %s to event %d: new run %s\n", plan.WorkflowID, plan.ResetEventID, out.NewRunID)
	switch out.Recorded {
	case "":
		fmt.Fprintf(c.stdout, "The new run finished before rewound_from could be signalled; its history's reset event names run %s.\n", plan.RunID)
	default:
		fmt.Fprintf(c.stdout, "rewound_from recorded in the new run's trace (%s).\n", out.Recorded)
	}
	fmt.Fprintf(c.stdout, "Old run: %s\nNew run: %s\n", runURL(conn.uiBase, conn.namespace, plan.WorkflowID, plan.RunID),
		runURL(conn.uiBase, conn.namespace, plan.WorkflowID, out.NewRunID))
	return exitOK, nil
}

// printPlan prints a rewind plan one line at a time, each shown through
// contract.Printable: call IDs and tool names in it are the model's words,
// and an escape sequence or a line break must not reach the operator's
// terminal as such.
func printPlan(c *cli, p rewind.Plan) {
	say := func(format string, args ...any) {
		fmt.Fprintln(c.stdout, contract.Printable(fmt.Sprintf(format, args...)))
	}
	kind := "activity"
	if p.Local {
		kind = "local activity"
	}
	what := p.ActivityType
	if p.CallID != "" {
		what += " of call " + p.CallID
	}
	if p.Step > 0 {
		what += fmt.Sprintf(" (step %d)", p.Step)
	}
	say("Rewind %s (run %s) to %s: %s, %s at event %d", p.WorkflowID, p.RunID, p.Target.Stage, what, kind, p.StageEventID)
	say("Reset point: WorkflowTaskCompleted event %d", p.ResetEventID)
	if len(p.AlsoRerun) > 0 {
		say("Also re-run (same workflow task): %s", strings.Join(p.AlsoRerun, ", "))
	}
	for _, r := range p.Reruns {
		say("Would run again: %s", r)
	}
	if p.Running {
		say("The run is still running: rewinding terminates it (status Terminated, its pending activities and timers dropped) and goes on in a new run.")
	}
	for _, id := range p.AwaitingPermission {
		say("Waiting for a permission decision: call %s (the reset drops the request)", id)
	}
}

// awaitingPermission asks a running run which calls wait for permission
// (its pending_permissions query); when no worker answers, history says.
func (conn *connection) awaitingPermission(ctx context.Context, p rewind.Plan) []string {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := conn.QueryWorkflow(qctx, p.WorkflowID, p.RunID, workflows.QueryPendingPermissions)
	var pending []workflows.PendingPermission
	if err != nil || v.Get(&pending) != nil {
		return p.AwaitingPermission
	}
	ids := make([]string, len(pending))
	for i, pp := range pending {
		ids[i] = pp.CallID
	}
	return ids
}

// builtinSideEffects resolves tools whose review is not in history.
func builtinSideEffects(name string) (bool, bool) {
	d, ok := tools.Builtin().Lookup(name)
	return d.Local, ok
}
