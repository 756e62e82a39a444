package activities

import (
	"context"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
)

// StageStoreContext is the trace hook of StoreContext.
const StageStoreContext = "store_context"

// StoreContextInput carries an inline transcript too large to copy into
// every stage's input.
type StoreContextInput struct {
	Messages []contract.Message `json:"messages"`
}

// StoreContextResult is the transcript's reference in the context store.
type StoreContextResult struct {
	Messages contract.MessageSet `json:"messages"`
	Trace    contract.TraceEntry `json:"trace"`
}

// StoreContext moves an inline transcript into the context store. It runs
// as a local activity: local activity inputs are not written to history,
// so the transcript is recorded once (in the workflow's start event) and
// later stages carry only its reference.
func (a *Activities) StoreContext(ctx context.Context, in StoreContextInput) (StoreContextResult, error) {
	set, err := contextstore.Put(ctx, a.Contexts, in.Messages)
	if err != nil {
		return fail[StoreContextResult](err)
	}
	return StoreContextResult{
		Messages: set,
		Trace:    contract.Trace(StageStoreContext, "context_ref", set.Ref, "message_count", set.Count, "context_bytes", set.Bytes),
	}, nil
}
