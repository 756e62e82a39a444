package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/workflows"
)

// A run Temporal ends from outside (`temporal workflow terminate`, or its
// execution timeout) runs no further stage, so no SessionStop hook writes
// its audit row, and the trail would end at its last tool call as if the
// run were still going. Every worker looks, now and then, for the runs of
// its task queue that ended so, and records a RUN_ENDED row for each with
// who ended it and why. Rows are idempotent, so workers sharing a store,
// and sweeps that overlap, write each once.

// DefaultEndedRunsSweepInterval is how often a worker looks for runs ended
// from outside (FENIX_ENDED_RUNS_SWEEP).
const DefaultEndedRunsSweepInterval = 30 * time.Second

// endedRunsLookback is how far back a worker's first sweep looks: runs
// ended while no worker ran are recorded when one starts.
const endedRunsLookback = 24 * time.Hour

// endedRunsOverlap is how far back each later sweep looks again: a
// visibility store may list a closed run a little after it closed.
const endedRunsOverlap = 2 * time.Minute

// endedRuns is the sweep's state: where the next one starts, and the runs
// recorded within the overlap, so they are not looked up again.
type endedRuns struct {
	since    time.Time
	recorded map[string]time.Time
}

func (w *Worker) startEndedRunsSweep() {
	interval := w.cfg.EndedRunsSweepInterval
	if interval <= 0 {
		return
	}
	state := &endedRuns{since: time.Now().Add(-endedRunsLookback), recorded: map[string]time.Time{}}
	sweep := func(ctx context.Context) {
		n, err := w.recordEndedRuns(ctx, state)
		if err != nil {
			w.cfg.Logger.Warn("recording runs ended from outside in the audit log failed; the next sweep tries again", "task_queue", w.cfg.TaskQueue, "error", err)
		}
		if n > 0 {
			w.cfg.Logger.Info("recorded runs ended from outside in the audit log", "task_queue", w.cfg.TaskQueue, "count", n)
		}
	}
	w.endedRunsSweeper = startPeriodic(interval, sweep)
}

func (w *Worker) stopEndedRunsSweep() { w.endedRunsSweeper.stop() }

// recordEndedRuns records the runs of the worker's task queue that were
// terminated or timed out since state.since, and moves state on.
func (w *Worker) recordEndedRuns(ctx context.Context, state *endedRuns) (int, error) {
	started := time.Now()
	query := fmt.Sprintf(`TaskQueue = %q AND WorkflowType IN (%q, %q, %q) AND ExecutionStatus IN ("Terminated", "TimedOut") AND CloseTime >= %q`,
		w.cfg.TaskQueue, workflows.ExecuteAssignmentWorkflow, workflows.AgentTurnWorkflow, workflows.PrepareRoundWorkflow,
		state.since.UTC().Format(time.RFC3339Nano))
	namespace := w.cfg.Namespace
	if namespace == "" {
		namespace = "default"
	}
	recorded := 0
	var token []byte
	for {
		resp, err := w.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: query, PageSize: 100, NextPageToken: token,
		})
		if err != nil {
			return recorded, fmt.Errorf("listing the runs ended from outside in %s: %w", namespace, err)
		}
		for _, e := range resp.GetExecutions() {
			key := e.GetExecution().GetWorkflowId() + "/" + e.GetExecution().GetRunId()
			if _, done := state.recorded[key]; done {
				continue
			}
			row, err := w.endedRunRow(ctx, e.GetExecution(), e.GetStatus(), e.GetCloseTime().AsTime(), e.GetSearchAttributes())
			if err == nil {
				err = w.audit.Record(ctx, row)
			}
			if err != nil {
				return recorded, fmt.Errorf("run %s: %w", key, err)
			}
			state.recorded[key] = e.GetCloseTime().AsTime()
			recorded++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	state.since = started.Add(-endedRunsOverlap)
	for key, closed := range state.recorded {
		if closed.Before(state.since) {
			delete(state.recorded, key)
		}
	}
	return recorded, nil
}

// endedRunRow is the RUN_ENDED row of a run, with its close event's reason
// and identity.
func (w *Worker) endedRunRow(ctx context.Context, run *commonpb.WorkflowExecution, status enumspb.WorkflowExecutionStatus, closed time.Time, attrs *commonpb.SearchAttributes) (audit.Row, error) {
	row := audit.Row{
		SessionID: run.GetWorkflowId(), RunID: run.GetRunId(), Event: audit.EventRunEnded,
		ConversationID: keyword(attrs, workflows.SearchAttrConversationID.GetName()),
		TurnID:         keyword(attrs, workflows.SearchAttrTurnID.GetName()),
		ToolName:       keyword(attrs, workflows.SearchAttrToolName.GetName()),
		CreatedAt:      closed,
	}
	iter := w.client.GetWorkflowHistory(ctx, run.GetWorkflowId(), run.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	var why string
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return row, fmt.Errorf("reading its close event: %w", err)
		}
		if t := ev.GetWorkflowExecutionTerminatedEventAttributes(); t != nil {
			why = "terminated by " + orUnknown(t.GetIdentity()) + ": " + orUnknown(t.GetReason())
		}
		if ev.GetWorkflowExecutionTimedOutEventAttributes() != nil {
			why = "timed out: the run passed its workflow execution timeout"
		}
	}
	row.Status = strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_"))
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT {
		row.Status = "timed_out"
	}
	row.Error = why
	return row, nil
}

// keyword reads a keyword search attribute, "" when it is not set.
func keyword(attrs *commonpb.SearchAttributes, name string) string {
	p, ok := attrs.GetIndexedFields()[name]
	if !ok {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		return ""
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "(not given)"
	}
	return s
}
