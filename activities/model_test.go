package activities

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/scripted"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// CallModel with AnswerOnly (fenix-shape 10) neither reads nor returns a
// transcript: the caller keeps it and appends the answer. Without it the
// transcript comes back with the answer, stored when over the inline
// limit, as before.
func TestCallModelAnswerOnlyLeavesTheTranscriptToTheCaller(t *testing.T) {
	provider, err := scripted.New(map[string]scripted.Script{"main": {Turns: []scripted.Turn{{Content: "It is 4."}}}})
	require.NoError(t, err)
	store, err := contextstore.NewFS(t.TempDir())
	require.NoError(t, err)
	a := &Activities{Model: &llm.Router{Scripted: provider}, Tools: tools.Builtin(), Contexts: store, InlineLimit: 512}
	question := contract.MessageSet{Messages: []contract.Message{{Role: contract.RoleUser, Content: "What is 2 + 2?"}}, Count: 1}
	call := func(in CallModelInput) CallModelResult {
		t.Helper()
		in.Model = llm.ScriptedModelPrefix + "main"
		in.Prompt = question
		res, err := a.CallModel(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, "It is 4.", res.Message.Content)
		return res
	}

	res := call(CallModelInput{AnswerOnly: true, Transcript: contract.MessageSet{Ref: "sha256:not-in-the-store"}})
	assert.Zero(t, res.Transcript, "no transcript is read or returned")
	encoded, err := json.Marshal(res)
	require.NoError(t, err)
	assert.NotContains(t, string(encoded), `"transcript"`)

	res = call(CallModelInput{Transcript: question})
	require.Len(t, res.Transcript.Messages, 2, "a caller that does not keep the transcript gets it back")
	assert.Equal(t, "It is 4.", res.Transcript.Messages[1].Content)

	long := contract.MessageSet{Messages: []contract.Message{{Role: contract.RoleUser, Content: strings.Repeat("word ", 100)}}, Count: 1}
	res = call(CallModelInput{Transcript: long})
	require.NotEmpty(t, res.Transcript.Ref, "a transcript over the inline limit is stored")
	stored, err := contextstore.Unpack(context.Background(), store, res.Transcript)
	require.NoError(t, err)
	require.Len(t, stored, 2)
	assert.Equal(t, "It is 4.", stored[1].Content)
}

// A model answer with more tool calls than one step may run fails with
// PayloadTooLargeError (too_many_tool_calls) naming the count; an answer
// at the limit is taken.
func TestCallModelRefusesTooManyToolCalls(t *testing.T) {
	turn := func(n int) scripted.Turn {
		calls := make([]scripted.ToolCall, n)
		for i := range calls {
			calls[i] = scripted.ToolCall{ToolName: "calculator", Arguments: map[string]any{"expression": "1+1"}}
		}
		return scripted.Turn{ToolCalls: calls}
	}
	provider, err := scripted.New(map[string]scripted.Script{
		"many": {Turns: []scripted.Turn{turn(10000)}},
		"max":  {Turns: []scripted.Turn{turn(MaxToolCallsPerAnswer)}},
	})
	require.NoError(t, err)
	a := &Activities{Model: &llm.Router{Scripted: provider}, Tools: tools.Builtin()}
	question := contract.MessageSet{Messages: []contract.Message{{Role: contract.RoleUser, Content: "go"}}, Count: 1}

	_, err = a.CallModel(context.Background(), CallModelInput{Model: llm.ScriptedModelPrefix + "many", Prompt: question, AnswerOnly: true})
	fe := fenixerr.FromTemporal(err)
	require.NotNil(t, fe)
	assert.Equal(t, fenixerr.TypePayloadTooLarge, fe.Type)
	assert.Equal(t, "too_many_tool_calls", fe.Code)
	assert.Contains(t, fe.Message, "10000 tool calls")

	res, err := a.CallModel(context.Background(), CallModelInput{Model: llm.ScriptedModelPrefix + "max", Prompt: question, AnswerOnly: true})
	require.NoError(t, err)
	assert.Len(t, res.Message.ToolCalls, MaxToolCallsPerAnswer)
}
