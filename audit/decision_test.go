package audit_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/audit"
)

func TestDecisionRowRoundTripsAndShortensLongReasons(t *testing.T) {
	store, err := audit.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	require.NoError(t, err)
	defer store.Close()
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	d := audit.Decision{Decision: "deny", Decider: "alice", Source: "decide_permission", At: at,
		ArgsHash: "sha256:" + strings.Repeat("ab", 32), PolicyFingerprint: strings.Repeat("f", 64), Reason: strings.Repeat("é\"", 400)}
	row, err := audit.DecisionRow(audit.Row{SessionID: "wf", RunID: "run", CallID: "call-1", ToolName: "calculator"}, d)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(row.OutputPreview), audit.MaxOutputPreviewBytes)
	require.NoError(t, store.Record(context.Background(), row))
	require.NoError(t, store.Record(context.Background(), row), "a retried write adds nothing")

	rows, err := store.Query(context.Background(), audit.Filter{SessionID: "wf", Event: audit.EventPermissionDecision})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "deny", rows[0].Status)
	assert.Equal(t, at, rows[0].CreatedAt)
	got, err := audit.ParseDecision(rows[0])
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(d.Reason, strings.TrimSuffix(got.Reason, "…")), "the reason is cut, not garbled")
	got.Reason = d.Reason
	assert.Equal(t, d, got)

	_, err = audit.DecisionRow(audit.Row{SessionID: "wf", CallID: "c"}, audit.Decision{Decider: strings.Repeat("x", 600)})
	assert.ErrorContains(t, err, "does not fit an audit row")
	_, err = audit.ParseDecision(audit.Row{Event: audit.EventToolCall})
	assert.ErrorContains(t, err, "not PERMISSION_DECISION")
}
