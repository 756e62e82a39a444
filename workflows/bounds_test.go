package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
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

// Arguments over what any tool accepts fail before any stage carries
// them, with a typed error, and the failure repeats them bounded.
func TestOversizedArgumentsFailFast(t *testing.T) {
	h := newHarness(t)
	a := calculatorAssignment()
	a["tool_call"] = map[string]any{"call_id": "big", "tool_name": "calculator", "arguments": map[string]any{"expression": strings.Repeat("1", 1_200_000)}}
	res := h.executeAssignment(t, a)

	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Equal(t, fenixerr.TypePayloadTooLarge, res.Error.ErrorType)
	assert.Contains(t, res.Error.LastErrorSummary, `arguments of tool "calculator" (call big) are 1200017 bytes`)
	assert.Zero(t, h.count("ReviewToolCall"), "no stage ran with the arguments")
	assert.Zero(t, h.count("ExecuteTool"))
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(raw), 64<<10, "the result repeats the arguments bounded")
}

// A call at the largest size a tool accepts completes, and its reports
// carry the arguments bounded: the result stays far below 2 MB.
func TestReportsBoundTheArguments(t *testing.T) {
	h := newHarness(t)
	a := calculatorAssignment()
	a["agent_context"] = map[string]any{"profile": "main", "allowed_tool_names": []string{"workspace_write"}}
	a["tool_call"] = map[string]any{"call_id": "w", "tool_name": "workspace_write", "arguments": map[string]any{"path": "big.txt", "content": strings.Repeat("x", 1<<20)}}
	res := h.executeAssignment(t, a)

	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(raw), 128<<10, "reports repeat the 1 MiB arguments bounded")
	for _, r := range res.Reports {
		if r.ToolInvocation != nil {
			assert.Contains(t, r.ToolInvocation.RequestPayload.Arguments["content"], "[truncated by Fenix: 1024 of 1048576 bytes kept]")
		}
	}
}
