package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
)

// A tool call's PrepareTurn (ContextUnused, fenix-shape 8) with nothing to
// compact returns the context's size and estimates without the messages,
// and stores nothing even when the context is over the inline limit; with
// something to compact, CompactContext needs the messages, so they come
// back as before.
func TestPrepareTurnLeavesOutAContextNobodyReads(t *testing.T) {
	fs, err := contextstore.NewFS(t.TempDir())
	require.NoError(t, err)
	store := &countingStore{Store: fs}
	a := &Activities{Contexts: store, InlineLimit: 256}
	long := contract.Assignment{
		AgentContext: contract.AgentContext{Profile: "main"},
	}
	for i := range 6 {
		role := contract.RoleUser
		if i%2 == 1 {
			role = contract.RoleAssistant
		}
		long.ContextMessages = append(long.ContextMessages, contract.Message{Role: role, Content: strings.Repeat("word ", 40)})
	}

	res, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: long, DecideCompaction: true, ContextUnused: true})
	require.NoError(t, err)
	require.NotNil(t, res.NoCompaction)
	assert.Empty(t, res.Messages.Messages)
	assert.Empty(t, res.Messages.Ref)
	assert.Equal(t, res.EstimatedMessageCount, res.Messages.Count)
	assert.Greater(t, res.Messages.Bytes, 256, "the size is still measured")
	assert.Equal(t, res.Messages.Bytes, res.Trace.Get("context_bytes"))
	assert.Zero(t, store.puts, "nothing stored for a context nobody reads")

	used, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: long, DecideCompaction: true})
	require.NoError(t, err)
	assert.NotEmpty(t, used.Messages.Ref, "a context the caller reads is stored as before")
	assert.Equal(t, res.Messages.Bytes, used.Messages.Bytes)

	compact := long
	threshold := 10
	compact.BudgetHints = contract.BudgetHints{AdvisoryCompactionThresholdTokens: &threshold}
	needed, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: compact, DecideCompaction: true, ContextUnused: true})
	require.NoError(t, err)
	assert.Nil(t, needed.NoCompaction, "over the threshold: CompactContext runs")
	assert.NotEmpty(t, needed.Messages.Ref, "and gets the messages")
}
