package contract

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBoundIdentifiersShortensOversizedFields(t *testing.T) {
	a := Assignment{LogicalWorkID: "w", ConversationID: strings.Repeat("c", 5000), TurnID: "t",
		ToolCall:     &ToolCall{CallID: strings.Repeat("\xff", 1<<20), ToolName: "calculator"},
		AgentContext: AgentContext{AllowedToolNames: []string{"calculator", strings.Repeat("n", MaxIDBytes+1)}}}
	err := a.BoundIdentifiers()
	if err == nil {
		t.Fatal("no error for oversized fields")
	}
	for _, want := range []string{"conversation_id is 5000 bytes (at most 256)", "tool_call.call_id is 1048576 bytes", "agent_context.allowed_tool_names[1] is 257 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for _, v := range []string{a.ConversationID, a.ToolCall.CallID, a.AgentContext.AllowedToolNames[1]} {
		if len(v) > 64 || !strings.Contains(v, "bytes)") || !strings.HasPrefix(v, v[:1]) {
			t.Errorf("placeholder %q", v)
		}
	}
	if a.LogicalWorkID != "w" || a.ToolCall.ToolName != "calculator" || a.AgentContext.AllowedToolNames[0] != "calculator" {
		t.Errorf("fields within their bounds changed: %+v", a)
	}
	if len(err.Error()) > 2048 {
		t.Errorf("error is %d bytes", len(err.Error()))
	}

	ok := Assignment{LogicalWorkID: strings.Repeat("w", MaxIDBytes), ConversationID: "c", TurnID: "t", WorkspaceRoot: "/" + strings.Repeat("p", MaxPathBytes-1)}
	if err := ok.BoundIdentifiers(); err != nil {
		t.Errorf("fields at their bounds refused: %v", err)
	}
	r := AgentTurnRequest{Assignment: Assignment{LogicalWorkID: "w"}, Model: strings.Repeat("m", 300)}
	if err := r.BoundIdentifiers(); err == nil || !strings.Contains(err.Error(), "model is 300 bytes") {
		t.Errorf("AgentTurn model: %v", err)
	}
}

func TestBoundToolCallsRenamesOversizedNames(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	calls := []ToolCall{{CallID: long, ToolName: "calculator"}, {CallID: long, ToolName: long}, {CallID: "ok", ToolName: "calculator"}}
	over := BoundToolCalls(calls)
	if len(over) != 3 {
		t.Fatalf("oversized: %+v", over)
	}
	renamed := UniqueCallIDs(calls)
	if len(renamed) != 1 || calls[0].CallID == calls[1].CallID {
		t.Errorf("equal placeholders not made unique: %+v", calls)
	}
	for _, c := range calls {
		if len(c.CallID) > MaxIDBytes || len(c.ToolName) > MaxIDBytes {
			t.Errorf("still oversized: %d %d", len(c.CallID), len(c.ToolName))
		}
	}
	if calls[2].CallID != "ok" || calls[0].ToolName != "calculator" {
		t.Errorf("names within bounds changed: %+v", calls)
	}
}

// allowed_tool_names is bounded as a whole: within the bound it is kept
// as it is; over it, it is emptied and the error says how large it was.
func TestBoundAllowedToolNames(t *testing.T) {
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%063d", i) // 64 bytes with its separator
		}
		return out
	}
	a := Assignment{AgentContext: AgentContext{AllowedToolNames: names(MaxAllowedToolNamesBytes / 64)}}
	require.NoError(t, a.BoundAllowedToolNames())
	assert.Len(t, a.AgentContext.AllowedToolNames, MaxAllowedToolNamesBytes/64)

	a.AgentContext.AllowedToolNames = names(MaxAllowedToolNamesBytes/64 + 1)
	err := a.BoundAllowedToolNames()
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("agent_context.allowed_tool_names is %d names of %d bytes", MaxAllowedToolNamesBytes/64+1, MaxAllowedToolNamesBytes+64))
	assert.Empty(t, a.AgentContext.AllowedToolNames)
}

// A child's identifier is parent/call while it fits; longer, it stays
// within MaxIDBytes, valid UTF-8, stable and distinct per call, keeping
// the parent's prefix readable.
func TestChildIDFitsTheBound(t *testing.T) {
	if got := ChildID("work-1", "call_9"); got != "work-1/call_9" {
		t.Errorf("ChildID = %q", got)
	}
	long := strings.Repeat("é", 124) // 248 bytes
	a, b := ChildID(long, "call_1"), ChildID(long, "call_2")
	for _, id := range []string{a, b} {
		if len(id) > MaxIDBytes || !utf8.ValidString(id) || !strings.HasPrefix(id, long[:200]) {
			t.Errorf("ChildID = %q (%d bytes)", id, len(id))
		}
	}
	if a == b || a != ChildID(long, "call_1") {
		t.Errorf("not distinct or not stable: %q %q", a, b)
	}
	if nested := ChildID(a, "call_3"); len(nested) > MaxIDBytes || nested == a {
		t.Errorf("nested ChildID = %q", nested)
	}
}
