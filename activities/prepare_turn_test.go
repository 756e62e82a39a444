package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/agent/prompt"
	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/agent/skills"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/redact"
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

// With TranscriptKept (fenix-shape 10) an inline context that ends with
// the caller's transcript unchanged comes back as its head alone, measured
// whole; a redacted transcript, or a context that must be stored, comes
// back whole as before.
func TestPrepareTurnLeavesOutTheTranscriptTheCallerKeeps(t *testing.T) {
	store, err := contextstore.NewFS(t.TempDir())
	require.NoError(t, err)
	a := &Activities{Contexts: store, Redactor: redact.Default(), InlineLimit: 4096}
	turn := contract.Assignment{AgentContext: contract.AgentContext{Profile: "main"}, ContextMessages: []contract.Message{
		{Role: contract.RoleUser, Content: "What is 2 + 2?"},
		{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{CallID: "c1", ToolName: "calculator", Arguments: map[string]any{"expression": "2 + 2"}}}},
		{Role: contract.RoleTool, Content: "4", ToolCallID: "c1", Name: "calculator"},
	}}
	prepare := func(as contract.Assignment, kept bool) PrepareTurnResult {
		t.Helper()
		res, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: as, DecideCompaction: true, TranscriptKept: kept})
		require.NoError(t, err)
		return res
	}

	whole := prepare(turn, false)
	require.False(t, whole.TranscriptTail)
	kept := prepare(turn, true)
	require.True(t, kept.TranscriptTail)
	assert.Equal(t, whole.Messages.Messages[:len(whole.Messages.Messages)-3], kept.Messages.Messages, "the head alone")
	assert.Equal(t, whole.Messages.Count, kept.Messages.Count, "measured whole")
	assert.Equal(t, whole.Messages.Bytes, kept.Messages.Bytes)
	assert.Equal(t, whole.Messages.Messages, append(kept.Messages.Messages, turn.ContextMessages...))

	secret := turn
	secret.ContextMessages = append([]contract.Message{{Role: contract.RoleUser, Content: "my key is AKIAIOSFODNN7EXAMPLE"}}, turn.ContextMessages...)
	redacted := prepare(secret, true)
	assert.False(t, redacted.TranscriptTail, "the model gets the redacted transcript, which the caller does not have")
	assert.Contains(t, redacted.Messages.Messages[len(redacted.Messages.Messages)-4].Content, "[REDACTED:aws_access_key_id]")

	long := turn
	long.ContextMessages = append([]contract.Message{{Role: contract.RoleUser, Content: strings.Repeat("word ", 1000)}}, turn.ContextMessages...)
	stored := prepare(long, true)
	assert.False(t, stored.TranscriptTail)
	assert.NotEmpty(t, stored.Messages.Ref, "over the inline limit the context is stored whole")
}

// A tool call's PrepareTurn (ContextUnused) takes no workspace snapshot
// (it lists the workspace and writes operator_state.json) and loads no
// skill the transcript refers to: both grow with the workspace, for a
// context no model reads. A round's PrepareTurn does both.
func TestPrepareTurnTakesNoSnapshotForAContextNobodyReads(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# project\n"), 0o644))
	catalog, err := skills.Open(skills.Roots{System: filepath.Join("..", "examples", "skills", "system")})
	require.NoError(t, err)
	a := &Activities{DefaultWorkspaceRoot: ws,
		Assembler: &prompt.Assembler{DefaultWorkspaceRoot: ws, Operator: &operator.Snapshotter{}, Skills: catalog}}
	main := contract.Assignment{ConversationID: "conv-1", WorkspaceRoot: ws, AgentContext: contract.AgentContext{Profile: "main"},
		ContextMessages: []contract.Message{{Role: contract.RoleUser, Content: "Use $release-notes, then compute 2 + 2."}}}
	state := filepath.Join(ws, ".fenix", "sessions", "conv-1", operator.StateFile)

	call, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: main, DecideCompaction: true, ContextUnused: true})
	require.NoError(t, err)
	assert.NotEmpty(t, call.Trace.Get("context_unread"))
	assert.Nil(t, call.Trace.Get("operator_state_path"))
	assert.NoFileExists(t, state, "a tool call writes nothing into the workspace")
	assert.Empty(t, call.Trace.Get("selected_skills"))
	assert.EqualValues(t, 1, call.Trace.Get("active_skill_count"), "the catalog's skills are still listed")

	round, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: main, DecideCompaction: true})
	require.NoError(t, err)
	assert.Nil(t, round.Trace.Get("context_unread"))
	assert.FileExists(t, state)
	assert.Equal(t, "[release-notes]", fmt.Sprint(round.Trace.Get("selected_skills")))
	assert.Greater(t, round.EstimatedTokenCount, call.EstimatedTokenCount, "the round's context holds the snapshot")
}

// A tool call's context is redacted only when it goes on to CompactContext
// (whose hooks and summarizer see it): otherwise nothing reads it, and
// redacting a long transcript was most of the stage's work.
func TestPrepareTurnRedactsAContextNobodyReadsOnlyWhenItIsCompacted(t *testing.T) {
	store, err := contextstore.NewFS(t.TempDir())
	require.NoError(t, err)
	a := &Activities{Contexts: store, Redactor: redact.Default(), InlineLimit: 1 << 20}
	call := contract.Assignment{AgentContext: contract.AgentContext{Profile: "bench"}}
	for i := range 4 {
		call.ContextMessages = append(call.ContextMessages, contract.Message{Role: contract.RoleUser, Content: fmt.Sprintf("step %d: my key is AKIAIOSFODNN7EXAMPLE and more words here", i)})
	}

	unread, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: call, DecideCompaction: true, ContextUnused: true})
	require.NoError(t, err)
	require.NotNil(t, unread.NoCompaction)
	assert.Empty(t, unread.Messages.Messages)
	assert.Nil(t, unread.Trace.Get("context_redactions"), "nothing reads it: nothing to redact")

	threshold := 10
	call.BudgetHints = contract.BudgetHints{AdvisoryCompactionThresholdTokens: &threshold}
	compacted, err := a.PrepareTurn(context.Background(), PrepareTurnInput{Assignment: call, DecideCompaction: true, ContextUnused: true})
	require.NoError(t, err)
	require.Nil(t, compacted.NoCompaction, "over the threshold CompactContext runs")
	assert.EqualValues(t, 4, compacted.Trace.Get("context_redactions"))
	for _, m := range compacted.Messages.Messages {
		assert.NotContains(t, m.Content, "AKIAIOSFODNN7EXAMPLE", "what goes on to CompactContext is redacted")
	}
	require.NotEmpty(t, compacted.Messages.Messages)
}
