package workflows_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/workflows"
)

func withAudit(t *testing.T, h *harness) audit.Store {
	store, err := audit.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	h.acts.Audit = store
	return store
}

func decideAs(h *harness, d workflows.PermissionDecision) *updateOutcome {
	return sendUpdate[any](h, workflows.UpdateDecidePermission, "decide-"+d.DecidedBy+d.ArgsHash, d)
}

// decisionLines are the audit log's decisions as "source decision
// decider".
func decisionLines(t *testing.T, store audit.Store) []string {
	var out []string
	for _, d := range decisionRows(t, store) {
		out = append(out, d.Source+" "+d.Decision+" "+d.Decider)
	}
	return out
}

func decisionRows(t *testing.T, store audit.Store) []audit.Decision {
	rows, err := store.Query(context.Background(), audit.Filter{Event: audit.EventPermissionDecision})
	require.NoError(t, err)
	var out []audit.Decision
	for _, r := range rows {
		d, err := audit.ParseDecision(r)
		require.NoError(t, err)
		out = append(out, d)
	}
	return out
}

func TestDecisionOnChangedArgumentsIsRefusedAndTheRightOneIsRecorded(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	store := withAudit(t, h)
	var pending []workflows.PendingPermission
	var stale, wordy, unknown, camel, good, late *updateOutcome
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(workflows.QueryPendingPermissions)
		require.NoError(t, err)
		require.NoError(t, v.Get(&pending))
		stale = decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "mallory",
			ArgsHash: contract.ArgumentsHash(map[string]any{"expression": "6 * 7"})})
		wordy = decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "bob",
			Reason: strings.Repeat("because ", 1<<17), ArgsHash: pending[0].ArgsHash})
		unknown = decideAs(h, workflows.PermissionDecision{CallID: "call-9", Decision: workflows.DecisionAllow, DecidedBy: "carol"})
		camel = decideAs(h, workflows.PermissionDecision{Decision: workflows.DecisionAllow, DecidedBy: "dave"})
		good = decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionAllow, DecidedBy: "alice",
			Reason: "2 + 2 is fine", ArgsHash: pending[0].ArgsHash})
		late = decideAs(h, workflows.PermissionDecision{CallID: "call-1", Decision: workflows.DecisionDeny, DecidedBy: "erin"})
	}, time.Hour)
	a := calculatorAssignment()
	a["approval"] = map[string]any{"timeout_seconds": 2 * 24 * 3600}
	res := h.executeAssignment(t, a)

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Len(t, pending, 1)
	assert.Equal(t, contract.ArgumentsHash(map[string]any{"expression": "2 + 2"}), pending[0].ArgsHash)
	assert.NotEmpty(t, pending[0].PolicyFingerprint, "the inbox shows the policy that asked")
	assert.Equal(t, "conv-1", pending[0].ConversationID)
	require.Error(t, stale.rejected)
	assert.Contains(t, stale.rejected.Error(), "made on arguments sha256:")
	assert.Contains(t, stale.rejected.Error(), "list the call again")
	require.Error(t, wordy.rejected, "a 1 MiB reason would be repeated into history")
	assert.Contains(t, wordy.rejected.Error(), "over the 8192-byte limit")
	assert.True(t, good.accepted)
	// Typed, as a stage's errors are, so a kernel in another language
	// tells the refusals apart without reading their text.
	for rejected, code := range map[error]string{stale.rejected: workflows.CodeArgsHashMismatch, wordy.rejected: workflows.CodeInvalidDecision,
		late.rejected: workflows.CodeAlreadyDecided, unknown.rejected: workflows.CodeCallNotPending, camel.rejected: workflows.CodeInvalidDecision} {
		fe := fenixerr.FromTemporal(rejected)
		require.NotNil(t, fe, "%v", rejected)
		assert.Equal(t, fenixerr.TypeValidation, fe.Type, "%v", rejected)
		assert.Equal(t, code, fe.Code, "%v", rejected)
	}
	assert.Contains(t, camel.rejected.Error(), "snake_case", "a decision without call_id says which fields it takes")

	tr := findTrace(res.Trace, "permission_decision")
	require.NotNil(t, tr)
	assert.Equal(t, "alice", tr.Get("decider"))
	assert.Equal(t, pending[0].ArgsHash, tr.Get("args_hash"))
	assert.Equal(t, pending[0].PolicyFingerprint, tr.Get("policy_fingerprint"))
	at, err := time.Parse(time.RFC3339Nano, tr.Get("decided_at").(string))
	require.NoError(t, err)
	assert.Equal(t, time.Hour, at.Sub(pending[0].RequestedAt).Round(time.Minute), "decided at workflow time, an hour after asking")

	rows := decisionRows(t, store)
	require.Len(t, rows, 1)
	assert.Equal(t, audit.Decision{Decision: "allow", Decider: "alice", Source: "decide_permission", At: at,
		ArgsHash: pending[0].ArgsHash, PolicyFingerprint: pending[0].PolicyFingerprint, Reason: "2 + 2 is fine"}, rows[0])
}

func TestExpiredDecisionIsAuditedAsTimeout(t *testing.T) {
	h := withHook(t, &scriptedHook{pre: requirePermission})
	store := withAudit(t, h)
	a := calculatorAssignment()
	a["approval"] = map[string]any{"timeout_seconds": 3 * 24 * 3600}
	res := h.executeAssignment(t, a)

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "no decision within 72h0m0s")
	rows := decisionRows(t, store)
	require.Len(t, rows, 1)
	assert.Equal(t, "deny", rows[0].Decision)
	assert.Equal(t, "timeout", rows[0].Decider)
	assert.Equal(t, "timeout", findTrace(res.Trace, "permission_decision").Get("decider"))
}
