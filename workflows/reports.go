package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/contract"
)

// reportDelivery sends reports to the kernel's workflow (report_to).
//
// Signals sent in one workflow task can reach their target in any order,
// and since the fast path a whole call's reports (started, progress,
// complete) are often produced in one workflow task. So newer runs send
// them one at a time, in sequence order, each after the previous one was
// delivered, from a coroutine that never holds up the stages. Older runs
// replay the concurrent sends they recorded.
type reportDelivery struct {
	// legacy: every report is signalled at once (shapes before the fast path).
	inFlight []workflow.Future
	// ordered: reports wait in queue; sending is true while the
	// coroutine delivers.
	queue   []contract.Report
	sending bool
}

// report records a report and delivers it to the kernel when asked to.
func (s *session) report(r contract.Report) {
	r.Sequence = len(s.reports) + 1
	r.LogicalWorkID = s.id.LogicalWorkID
	r.AttemptNo = s.id.AttemptNo
	r.ConversationID = s.id.ConversationID
	r.TurnID = s.id.TurnID
	r.OccurredAt = workflow.Now(s.ctx).UTC()
	if s.shape >= shapeBounded {
		r = r.Bounded()
	}
	s.reports = append(s.reports, r)
	if s.reportTo == nil || s.reportTo.WorkflowID == "" {
		return
	}
	if s.shape < shapeFastPath {
		s.delivery.inFlight = append(s.delivery.inFlight, s.signalReport(r))
		return
	}
	s.delivery.queue = append(s.delivery.queue, r)
	if s.delivery.sending {
		return
	}
	s.delivery.sending = true
	// Disconnected: reports must reach the kernel even while this
	// workflow is being canceled.
	ctx, _ := workflow.NewDisconnectedContext(s.ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for len(s.delivery.queue) > 0 {
			next := s.delivery.queue[0]
			s.delivery.queue = s.delivery.queue[1:]
			s.logDeliveryError(s.signalReport(next).Get(ctx, nil))
		}
		s.delivery.sending = false
	})
}

func (s *session) signalReport(r contract.Report) workflow.Future {
	signal := s.reportTo.SignalName
	if signal == "" {
		signal = DefaultReportSignal
	}
	ctx, _ := workflow.NewDisconnectedContext(s.ctx)
	return workflow.SignalExternalWorkflow(ctx, s.reportTo.WorkflowID, s.reportTo.RunID, signal, r)
}

// awaitDeliveries waits for report signals so the workflow does not close
// with deliveries in flight; a kernel that is gone is logged, not fatal.
func (s *session) awaitDeliveries() {
	ctx, _ := workflow.NewDisconnectedContext(s.ctx)
	for _, f := range s.delivery.inFlight {
		s.logDeliveryError(f.Get(ctx, nil))
	}
	s.delivery.inFlight = nil
	_ = workflow.Await(ctx, func() bool { return !s.delivery.sending })
}

func (s *session) logDeliveryError(err error) {
	if err != nil {
		s.logger.Warn("report delivery failed", "workflow_id", s.reportTo.WorkflowID, "error", err)
	}
}
