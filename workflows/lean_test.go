package workflows_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/internal/harness/testtools"
)

// auditEvents lists the events of the rows in store, oldest first.
func auditEvents(t *testing.T, store audit.Store) []string {
	rows, err := store.Query(context.Background(), audit.Filter{})
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, r.Event)
	}
	return out
}

// openAudit is a SQLite audit log in a temporary directory.
func openAudit(t *testing.T) audit.Store {
	store, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// workerHooks is the registry a worker without settings files builds:
// the cancellation guard, the audit log, extra Go hooks, redaction.
func workerHooks(store audit.Store, extra ...hooks.AgentHook) *hooks.Registry {
	r := hooks.NewRegistry()
	r.Add(builtin.NewCancellationHook())
	r.Add(builtin.NewAuditLogHook(store, 0, nil))
	for _, h := range extra {
		r.Add(h)
	}
	r.Add(builtin.NewRedactionHook(nil))
	return r
}

func TestLeanCalculatorLeavesOutStagesWithoutHooks(t *testing.T) {
	h := newHarness(t)
	store := openAudit(t)
	h.acts.Hooks = workerHooks(store)
	res := h.executeAssignment(t, calculatorAssignment())
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, []string{besideReview, "ExecuteTool", "ProjectToolResult",
		"RunPostToolUseHooks", "FinalizeOutput", "RunLifecycleHooks"}, h.startedActivities(),
		"no SessionStart or PreToolUse hook (the cancellation guard is the workflow's own check), nothing to compact")
	assert.Equal(t, []string{audit.EventToolCall, audit.EventSessionStop}, auditEvents(t, store), "the audit rows stay")
	review := res.Trace[0]
	assert.Equal(t, "review_tool_call", review.Hook)
	assert.Equal(t, `[post_tool_use post_tool_use_failure session_stop]`, fmt.Sprint(review.Get("hook_events")))
}

func TestLeanRunsStagesWithHooks(t *testing.T) {
	h := newHarness(t)
	store := openAudit(t)
	h.acts.Hooks = workerHooks(store, testtools.PolicyHook{})
	res := h.executeAssignment(t, calculatorAssignment())
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, []string{besideReview, "RunLifecycleHooks", "RunPreToolUseHooks", "ExecuteTool",
		"ProjectToolResult", "RunPostToolUseHooks", "FinalizeOutput", "RunLifecycleHooks"}, h.startedActivities())
}

func TestLeanFailedReviewStillStartsStopsAndAudits(t *testing.T) {
	h := newHarness(t)
	store := openAudit(t)
	h.acts.Hooks = workerHooks(store)
	a := calculatorAssignment()
	a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": []string{"workspace_read"}}
	res := h.executeAssignment(t, a)
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, []string{audit.EventToolFailure, audit.EventSessionStop}, auditEvents(t, store))
}

// observer is a Go hook on every event that does nothing: with it no
// stage is left out, as before fenix-shape 5.
type observer struct{ hooks.Base }

func (observer) Name() string { return "observer" }

func observedHooks() *hooks.Registry {
	r := hooks.NewRegistry()
	r.Add(observer{})
	return r
}

// Nothing to compact (fenix-shape 7): PrepareTurn answers for
// CompactContext, whose stage is left out while its trace entry, with the
// gate's reason, stays.
func TestIdleCompactionIsAnsweredByPrepareTurn(t *testing.T) {
	h := newHarness(t)
	res := h.executeAssignment(t, calculatorAssignment())
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Zero(t, h.count("CompactContext"), "no CompactContext stage: %v", h.startedActivities())
	var comp *contract.TraceEntry
	for i := range res.Trace {
		if res.Trace[i].Hook == "compact_context" {
			comp = &res.Trace[i]
		}
	}
	require.NotNil(t, comp, "the compact_context trace entry stays: %v", traceHooks(res.Trace))
	assert.Equal(t, false, comp.Get("compacted"))
	assert.Contains(t, fmt.Sprint(comp.Get("reason")), "threshold")
}
