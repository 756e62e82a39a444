package workflows

import (
	"log/slog"
	"testing"

	"go.temporal.io/sdk/log"

	"github.com/fenixrt/fenix/contract"
)

// A run whose stages moved to a worker holding another policy (a call
// approved after its worker was replaced by one with other settings)
// finished under the second policy with nothing in its trace saying so.
// The change is traced where it happens, once per change.
func TestAPolicyChangeMidRunIsTraced(t *testing.T) {
	s := &session{logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))}
	s.addTrace(contract.Trace("review_tool_call", "policy_fingerprint", "aaaa"))
	s.addTrace(contract.Trace("prepare_turn"))
	s.addTrace(contract.Trace("pre_tool_use", "policy_fingerprint", "aaaa"))
	s.addTrace(contract.Trace("post_tool_use", "policy_fingerprint", "bbbb"))
	s.addTrace(contract.Trace("session_stop", "policy_fingerprint", "bbbb"))
	var changes []contract.TraceEntry
	for _, e := range s.trace {
		if e.Hook == "policy_changed" {
			changes = append(changes, e)
		}
	}
	if len(s.trace) != 6 || len(changes) != 1 {
		t.Fatalf("trace %v, want one policy_changed after post_tool_use", s.trace)
	}
	if c := changes[0]; c.Get("stage") != "post_tool_use" || c.Get("from") != "aaaa" || c.Get("to") != "bbbb" || s.trace[4].Hook != "policy_changed" {
		t.Errorf("policy_changed = %v at %v", c, s.trace)
	}
}
