package hooks

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type elicitHook struct {
	Base
	name   string
	answer ElicitationAction
	seen   *[]ElicitationEvent
	panics bool
}

func (h *elicitHook) Name() string { return h.name }

func (h *elicitHook) Elicitation(_ context.Context, ev ElicitationEvent) (ElicitationAction, error) {
	if h.panics {
		panic("boom")
	}
	if h.seen != nil {
		*h.seen = append(*h.seen, ev)
	}
	ev.RequestedSchema["tampered"] = true
	return h.answer, nil
}

func (h *elicitHook) ElicitationResult(_ context.Context, ev ElicitationResultEvent) (ElicitationAction, error) {
	return h.answer, nil
}

func TestElicitationHooksAnswerTheMoreCarefulWay(t *testing.T) {
	ev := ElicitationEvent{ServerName: "crm", Message: "Which account?", Mode: ElicitModeForm,
		RequestedSchema: map[string]any{"type": "object"}}
	var seen []ElicitationEvent
	r := NewRegistry()
	r.Add(&fakeHook{name: "observer"})
	r.Add(&elicitHook{name: "silent", seen: &seen})
	r.Add(&elicitHook{name: "filler", answer: ElicitationAction{Action: ElicitAccept, Content: map[string]any{"account": "acme"}}})
	sum := r.RunElicitation(context.Background(), ev)
	require.NotNil(t, sum.Answer)
	assert.Equal(t, ElicitAccept, sum.Answer.Action)
	assert.Equal(t, "filler", sum.DecidedBy)
	assert.Len(t, sum.Decisions, 2, "only the hooks that answer elicitations are asked: %+v", sum.Decisions)
	assert.NotContains(t, ev.RequestedSchema, "tampered", "a hook gets its own copy of the schema")
	require.Len(t, seen, 1)
	assert.Equal(t, "crm", seen[0].ServerName)

	r.Add(&elicitHook{name: "guard", answer: ElicitationAction{Action: ElicitDecline, Reason: "not from CI"}})
	sum = r.RunElicitation(context.Background(), ev)
	assert.Equal(t, ElicitDecline, sum.Answer.Action, "a decline wins over an accept")
	assert.Equal(t, "guard", sum.DecidedBy)

	none := NewRegistry()
	none.Add(&elicitHook{name: "silent"})
	assert.Nil(t, none.RunElicitation(context.Background(), ev).Answer, "no opinion: a person is asked")

	panicky := NewRegistry()
	panicky.Add(&elicitHook{name: "broken", panics: true})
	sum = panicky.RunElicitation(context.Background(), ev)
	require.NotNil(t, sum.Answer)
	assert.Equal(t, ElicitDecline, sum.Answer.Action, "a panicking hook refuses rather than answers for the user")

	odd := NewRegistry()
	odd.Add(&elicitHook{name: "odd", answer: ElicitationAction{Action: "maybe"}})
	sum = odd.RunElicitation(context.Background(), ev)
	assert.Nil(t, sum.Answer)
	assert.Contains(t, sum.Decisions[0].Error, `unknown elicitation action maybe`)

	res := r.RunElicitationResult(context.Background(), ElicitationResultEvent{ServerName: "crm", Action: ElicitAccept, Content: map[string]any{"account": "x"}})
	assert.Equal(t, EventElicitationResult, res.Event)
	assert.Equal(t, ElicitDecline, res.Answer.Action)
}
