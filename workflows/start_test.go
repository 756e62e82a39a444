package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// The start attributes are what a run would upsert first: a tool call
// names its tool, a turn or a round does not.
func TestStartAttributesAreTheRunsFirstUpsert(t *testing.T) {
	call := contract.Assignment{ConversationID: "conv-1", TurnID: "turn-1", ToolCall: &contract.ToolCall{ToolName: "exec_command"}}
	attrs := workflows.StartAttributes(call)
	for key, want := range map[temporal.SearchAttributeKeyKeyword]string{workflows.SearchAttrConversationID: "conv-1", workflows.SearchAttrTurnID: "turn-1",
		workflows.SearchAttrAssignmentStatus: workflows.AssignmentStatusRunning, workflows.SearchAttrToolName: "exec_command"} {
		got, ok := attrs.GetKeyword(key)
		assert.True(t, ok, key.GetName())
		assert.Equal(t, want, got, key.GetName())
	}
	assert.Equal(t, 4, attrs.Size())

	turn := workflows.StartAttributes(contract.Assignment{ConversationID: "conv-1", TurnID: "turn-2"})
	assert.Equal(t, 3, turn.Size())
	assert.False(t, turn.ContainsKey(workflows.SearchAttrToolName))
}
