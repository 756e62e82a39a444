package workflows

import (
	"slices"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
)

// Since fenix-shape 10 an agent turn keeps an inline transcript in
// workflow state. Every message it gains is already in history (the
// model's answer in CallModel's result, a tool's observation in its
// stages' results, a hook's context or Stop feedback in its stage's), yet
// each model call recorded the transcript twice more (in CallModel's input
// beside the prompt, and with the answer in its result) and each tool step
// once more (AppendMessages' result). Now CallModel gets the prompt alone
// and returns the answer alone, and appending that keeps the transcript
// inline runs no stage. PrepareTurn, which assembled [system prompt] +
// transcript into its result, returns the system prompt alone when the
// transcript follows it unchanged, and the workflow puts them together.
// A transcript over the inline limit goes through the context store by
// reference, as before.

// keepsTranscript is whether this run appends to its inline transcript
// itself (shapeTranscriptOnce).
func (t *turnRun) keepsTranscript() bool { return t.shape >= shapeTranscriptOnce }

// modelInput is CallModel's input for this step: without the transcript
// when the run keeps it, with it (by reference) otherwise.
func (t *turnRun) modelInput(prompt contract.MessageSet, step int) activities.CallModelInput {
	in := activities.CallModelInput{Model: t.model, Prompt: prompt, AllowedToolNames: t.req.AgentContext.AllowedToolNames,
		Step: step, MaxTokens: t.req.MaxTokens}
	if t.keepsTranscript() && t.transcript.Ref == "" {
		in.AnswerOnly = true
	} else {
		in.Transcript = t.transcript
	}
	return in
}

// takeAnswer adds the model's answer to the transcript: the run appends it
// when it asked for the answer only (whatever transcript an older worker
// returned beside it), else takes the transcript CallModel returned.
func (t *turnRun) takeAnswer(in activities.CallModelInput, res activities.CallModelResult) error {
	if in.AnswerOnly {
		return t.appendMessages([]contract.Message{res.Message})
	}
	t.transcript = res.Transcript
	t.setHookTranscript(t.transcript)
	return nil
}

// appendInline appends messages to an inline transcript that stays within
// the inline limit of the worker's stages (contextstore.DefaultInlineLimit;
// a different limit would need a new shape, since replay must decide the
// same). ok is false when the AppendMessages stage must store it.
func (t *turnRun) appendInline(messages []contract.Message) (contract.MessageSet, bool) {
	if !t.keepsTranscript() {
		return contract.MessageSet{}, false
	}
	longer, ok, err := contextstore.AppendInline(t.transcript, messages, contextstore.DefaultInlineLimit)
	return longer, ok && err == nil
}

// followedBy is head followed by tail, in a new slice.
func followedBy(head, tail []contract.Message) []contract.Message {
	return append(slices.Clip(head), tail...)
}
