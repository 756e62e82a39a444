package workflows

import (
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// A call no worker took before its ScheduleToStart timeout (pinned to a
// host whose worker is gone) never ran: it was reported as one that "ran
// at most once", whose outcome is unknown. A call whose worker went
// silent mid-run still is.
func TestALostToolSaysWhetherItCouldHaveRun(t *testing.T) {
	call := contract.ToolCall{CallID: "c", ToolName: "command_run_read"}
	explain := func(timeout enumspb.TimeoutType) string {
		t.Helper()
		err := &stageError{stage: activities.StageExecuteTool, err: fenixerr.FromTemporal(temporal.NewTimeoutError(timeout, nil))}
		if err.err.Type != fenixerr.TypeWorkerLost {
			t.Fatalf("a %s timeout classified as %s", timeout, err.err.Type)
		}
		_, explained := explainLostTool(call, err)
		return explained.Error()
	}
	if got := explain(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START); !strings.Contains(got, "never started") || strings.Contains(got, "at most once") {
		t.Errorf("schedule-to-start: %s", got)
	}
	if got := explain(enumspb.TIMEOUT_TYPE_HEARTBEAT); !strings.Contains(got, "ran at most once") {
		t.Errorf("heartbeat: %s", got)
	}
}
