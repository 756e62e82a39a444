package workflows

import (
	"encoding/json"

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
// identifiers before the run binds or echoes them; the error names them.
// parseErr, the parse's own error, takes precedence.
func (s *session) boundIdentifiers(bound func() error, parseErr error) error {
	if s.shape < shapeBoundedIDs {
		return parseErr
	}
	if err := bound(); err != nil && parseErr == nil {
		return err
	}
	return parseErr
}
