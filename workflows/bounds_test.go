package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
)

// Two calls of one answer with the same ID: the second is renamed before
// either runs, so both run under their own IDs.
func TestAgentTurnRenamesDuplicateCallIDs(t *testing.T) {
	h := agentHarness(t)
	calls := []contract.ToolCall{
		{CallID: "same", ToolName: "calculator", Arguments: map[string]any{"expression": "1 + 1"}},
		{CallID: "same", ToolName: "calculator", Arguments: map[string]any{"expression": "2 + 2"}},
	}
	answer := contract.Message{Role: contract.RoleAssistant, ToolCalls: calls}
	user := contract.Message{Role: contract.RoleUser, Content: "Help me."}
	h.env.OnActivity("CallModel", mock.Anything, mock.Anything).Return(activities.CallModelResult{
		Message: answer, Transcript: contract.MessageSet{Messages: []contract.Message{user, answer}, Count: 2},
		Trace: contract.Trace(activities.StageCallModel),
	}, nil).Once()
	final := contract.Message{Role: contract.RoleAssistant, Content: "2 and 4."}
	h.env.OnActivity("CallModel", mock.Anything, mock.Anything).Return(activities.CallModelResult{
		Message: final, Transcript: contract.MessageSet{Messages: []contract.Message{user, answer, final}, Count: 3},
		Trace: contract.Trace(activities.StageCallModel),
	}, nil).Once()
	res := h.runTurn(t, turnRequest("unused", 3))

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	renamed := findTrace(res.Trace, "duplicate_call_ids")
	require.NotNil(t, renamed, "the rename is in the trace")
	assert.Contains(t, renamed.Fields["renamed"], map[string]any{"index": float64(1), "from": "same", "to": "same#2"})
	var ids []string
	for _, e := range res.Trace {
		if e.Hook == activities.StageExecuteTool {
			ids = append(ids, e.Get("call_id").(string))
		}
	}
	assert.ElementsMatch(t, []string{"same", "same#2"}, ids)
	assert.Equal(t, 2, h.count("ExecuteTool"))
}
