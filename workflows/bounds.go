package workflows

import (
	"github.com/fenixrt/fenix/contract"
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
