package bench

import (
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// An outlier's description names the two events its longest wait lies
// between, so a stall is placed (the server's dispatch, the worker's
// task, an activity) while the dev server still holds the history.
func TestLongestWaitNamesItsEvents(t *testing.T) {
	at := time.Date(2026, 12, 6, 21, 0, 0, 0, time.UTC)
	event := func(id int64, kind enumspb.EventType, after time.Duration) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: id, EventType: kind, EventTime: timestamppb.New(at.Add(after))}
	}
	got := longestWait([]*historypb.HistoryEvent{
		event(1, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0),
		event(2, enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, time.Millisecond),
		event(3, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, 20*time.Second),
		event(4, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 20*time.Second+5*time.Millisecond),
	})
	want := "20.005s of it in history; its longest wait, 19.999s, is between events 2 WorkflowTaskScheduled and 3 WorkflowTaskStarted"
	if got != want {
		t.Errorf("longestWait = %q, want %q", got, want)
	}
	if got := longestWait(nil); got != "no history" {
		t.Errorf("longestWait(nil) = %q", got)
	}
}
