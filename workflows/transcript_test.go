package workflows_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
)

// The transcript once (fenix-shape 10): an agent turn keeps its inline
// transcript in workflow state; CallModel returns the answer alone and
// appending runs no AppendMessages stage while the transcript stays inline.

// modelCalls records what each CallModel was asked, besides the harness's
// record of started stages.
func modelCalls(t *testing.T, h *harness) *[]activities.CallModelInput {
	t.Helper()
	var calls []activities.CallModelInput
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		h.mu.Lock()
		h.started = append(h.started, info.ActivityType.Name)
		h.mu.Unlock()
		if info.ActivityType.Name == "CallModel" {
			var in activities.CallModelInput
			require.NoError(t, args.Get(&in))
			calls = append(calls, in)
		}
	})
	return &calls
}

func TestTranscriptOnceKeepsAnInlineTranscriptInTheWorkflow(t *testing.T) {
	h := agentHarness(t)
	h.acts.Hooks = workerHooks(openAudit(t))
	calls := modelCalls(t, h)
	res := h.runTurn(t, turnRequest("main", 5))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "2 + 2 is 4.", res.Output.Content)
	assert.Zero(t, h.count("AppendMessages"), "the tool result is appended in the workflow: %v", h.rawStarted())

	require.Len(t, *calls, 2)
	for i, in := range *calls {
		assert.True(t, in.AnswerOnly, "call %d", i+1)
		assert.Zero(t, in.Transcript, "call %d: the transcript is not sent beside the prompt", i+1)
	}
	want := []contract.Message{
		{Role: contract.RoleUser, Content: "Help me."},
		{Role: contract.RoleAssistant, Content: "Let me compute.", ToolCalls: []contract.ToolCall{{CallID: "call-0-0", ToolName: "calculator", Arguments: map[string]any{"expression": "2 + 2"}}}},
		{Role: contract.RoleTool, Content: "The calculator returned 4.", ToolCallID: "call-0-0", Name: "calculator"},
	}
	assert.Equal(t, want, conversation((*calls)[1].Prompt), "the second prompt holds the answer and the tool result the workflow appended")
}

// conversation is a prompt without its system messages.
func conversation(prompt contract.MessageSet) []contract.Message {
	var out []contract.Message
	for _, m := range prompt.Messages {
		if m.Role != contract.RoleSystem {
			out = append(out, m)
		}
	}
	return out
}

// A worker that predates fenix-shape 10 ignores AnswerOnly and returns
// the empty transcript it was sent with the answer appended; the workflow
// appends the answer to its own transcript all the same.
func TestTranscriptOnceIgnoresTheTranscriptOfAnOlderWorker(t *testing.T) {
	h := agentHarness(t)
	calls := modelCalls(t, h)
	h.env.OnActivity(h.acts.CallModel, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.CallModelInput) (activities.CallModelResult, error) {
			res, err := h.acts.CallModel(ctx, activities.CallModelInput{Model: in.Model, Prompt: in.Prompt, Transcript: in.Transcript,
				AllowedToolNames: in.AllowedToolNames, Step: in.Step, MaxTokens: in.MaxTokens})
			return res, err
		})
	res := h.runTurn(t, turnRequest("main", 5))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "2 + 2 is 4.", res.Output.Content)
	require.Len(t, *calls, 2)
	got := conversation((*calls)[1].Prompt)
	require.Len(t, got, 3, "%+v", got)
	assert.Equal(t, "Help me.", got[0].Content)
	assert.Equal(t, "Let me compute.", got[1].Content)
	assert.Equal(t, "The calculator returned 4.", got[2].Content)
}

// A tool result that takes the transcript over the inline limit still
// goes through AppendMessages into the context store, and the next model
// call gets the transcript by reference.
func TestTranscriptOnceStoresATranscriptOverTheInlineLimit(t *testing.T) {
	h := agentHarness(t)
	h.acts.Hooks = workerHooks(openAudit(t))
	writeBigFile(t, h.acts.DefaultWorkspaceRoot)
	calls := modelCalls(t, h)
	res := h.runTurn(t, turnRequest("reader", 5))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Equal(t, "It repeats itself.", res.Output.Content)
	assert.Equal(t, 1, h.count("AppendMessages"), "over the inline limit the stage stores the transcript: %v", h.rawStarted())

	require.Len(t, *calls, 2)
	second := (*calls)[1].Transcript
	require.NotEmpty(t, second.Ref, "the second model call gets the transcript by reference")
	assert.Empty(t, second.Messages)
	stored, err := contextstore.Unpack(context.Background(), h.acts.Contexts, second)
	require.NoError(t, err)
	require.Len(t, stored, 3)
	assert.Equal(t, "Reading.", stored[1].Content)
	assert.Contains(t, stored[2].Content, "Durable agents.")
}

// writeBigFile puts big.txt, which the "reader" script reads, in the
// workspace: its content alone is over the inline limit.
func writeBigFile(t *testing.T, workspace string) {
	t.Helper()
	big := strings.Repeat("Durable agents. ", contextstore.DefaultInlineLimit/16+64)
	require.NoError(t, os.WriteFile(filepath.Join(workspace, "big.txt"), []byte(big), 0o644))
}
