package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// uniqueCallIDs renames repeated call IDs of one model answer (the second
// "x" becomes "x#2") before any of them runs, so each call has its own
// approval, audit row and observation; the renames are in the trace.
func (t *turnRun) uniqueCallIDs(step int, calls []contract.ToolCall) {
	if t.shape < shapeBounded {
		return
	}
	if renames := contract.UniqueCallIDs(calls); len(renames) > 0 {
		t.addTrace(contract.Trace("duplicate_call_ids", "step", step, "renamed", renames))
	}
}

// runUniqueCallIDs renames the calls of one step whose IDs an earlier step
// of this run used (shapeRunUniqueCallIDs): audit rows are unique per
// (session, run, call, event), so a reused ID would fold the later call
// into the earlier call's rows and leave it unrecorded; pending approvals
// and subagent workflow IDs are per call ID too. It returns the model's
// IDs of the calls, or nil when none was renamed: the transcript keeps
// those, so each tool result answers the ID the model's message names.
func (t *turnRun) runUniqueCallIDs(step int, calls []contract.ToolCall) []string {
	if t.shape < shapeRunUniqueCallIDs {
		return nil
	}
	if t.usedCallIDs == nil {
		t.usedCallIDs = map[string]bool{}
	}
	renames := contract.RenameReusedCallIDs(calls, t.usedCallIDs)
	if len(renames) == 0 {
		return nil
	}
	t.addTrace(contract.Trace("reused_call_ids", "step", step, "renamed", renames))
	modelIDs := make([]string, len(calls))
	for i := range calls {
		modelIDs[i] = calls[i].CallID
	}
	for _, r := range renames {
		modelIDs[r.Index] = r.From
	}
	return modelIDs
}

// MaxToolArgumentBytes is above the largest arguments any built-in tool
// accepts (workspace_write: 1 MiB of content plus 16 KiB). Larger
// arguments fail before any stage carries them: each stage that repeated
// them would add their size to history, and a workflow task that records
// several of them exceeds the server's 4 MB message limit.
const MaxToolArgumentBytes = 1<<20 + 64<<10

// oversizedArguments refuses arguments over MaxToolArgumentBytes with a
// PayloadTooLargeError naming the tool; each tool's own, smaller limit is
// enforced by ReviewToolCall.
func (s *session) oversizedArguments(call contract.ToolCall) error {
	if s.shape < shapeBounded {
		return nil
	}
	raw, err := json.Marshal(call.Arguments)
	if err != nil || len(raw) <= MaxToolArgumentBytes {
		return nil
	}
	return &stageError{stage: activities.StageReviewToolCall, err: fenixerr.PayloadTooLarge(
		"arguments of tool %q (call %s) are %d bytes, over the %d bytes any tool accepts: pass large content by reference (a workspace file) instead",
		call.ToolName, call.CallID, len(raw), MaxToolArgumentBytes).WithTool(call.ToolName)}
}

// stepShare is each of an agent step's calls' share of a budget the
// step's calls split, since their stages' results reach one workflow
// task; 0 (a stage's own bound) outside a step of several, or in a run
// whose shape is before since (shapeStepResultBudget for results,
// shapeStepHookContext for what hooks add and rewrite).
func (s *session) stepShare(budget int, since workflow.Version) int {
	if s.shape < since || s.stepCalls < 2 {
		return 0
	}
	return budget / s.stepCalls
}

// boundedCall is the call as hooks and failure payloads see it once its
// arguments were refused as too large.
func boundedCall(call contract.ToolCall) contract.ToolCall {
	call.Arguments = contract.BoundMap(call.Arguments, contract.EchoBytes)
	return call
}

// boundedInvocation bounds what a failure repeats of the invocation.
func (s *session) boundedInvocation(inv *contract.ToolInvocation) *contract.ToolInvocation {
	if inv == nil || s.shape < shapeBounded {
		return inv
	}
	b := inv.Bounded()
	return &b
}

// boundIdentifiers (shapeBoundedIDs) shortens the assignment's oversized
// identifiers before the run binds or echoes them, and (shapeBoundedToolNames)
// empties an oversized allowed_tool_names; the error names them. parseErr,
// the parse's own error, takes precedence.
func (s *session) boundIdentifiers(bound func() error, a *contract.Assignment, parseErr error) error {
	if s.shape < shapeBoundedIDs {
		return parseErr
	}
	err := bound()
	if s.shape >= shapeBoundedToolNames {
		if listErr := a.BoundAllowedToolNames(); err == nil {
			err = listErr
		}
	}
	if parseErr != nil {
		return parseErr
	}
	return err
}
