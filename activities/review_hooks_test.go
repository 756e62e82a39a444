package activities

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
)

// A lean review's recorded result repeats neither the call (the workflow
// has it) nor what the descriptor says to the model; it keeps what the
// workflow and the history tools read.
func TestLeanReviewRecordsNoCallAndNoModelFacingText(t *testing.T) {
	a := &Activities{Tools: tools.Builtin(), Hooks: hooks.NewRegistry()}
	agent := contract.AgentContext{Profile: "main", AllowedToolNames: []string{"calculator"}}
	call := contract.ToolCall{CallID: "c1", ToolName: "calculator", Arguments: map[string]any{"expression": "1 + 1"}}

	lean, err := a.ReviewToolCall(context.Background(), ReviewToolCallInput{ToolCall: call, AgentContext: agent, Lean: true})
	require.NoError(t, err)
	recorded, err := json.Marshal(lean)
	require.NoError(t, err)
	for _, absent := range []string{`"tool_call"`, "Evaluate an arithmetic"} {
		assert.NotContains(t, string(recorded), absent)
	}
	assert.Equal(t, "calculator", lean.Tool.Name)
	assert.True(t, lean.Tool.Local)
	assert.Equal(t, contract.ArgumentsHash(call.Arguments), lean.ArgsHash)

	full, err := a.ReviewToolCall(context.Background(), ReviewToolCallInput{ToolCall: call, AgentContext: agent})
	require.NoError(t, err)
	recorded, err = json.Marshal(full)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(recorded), `"tool_call"`), "a review before fenix-shape 5 still returns the call")
}
