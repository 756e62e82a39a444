package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/workflows"
)

// NetworkMemory keeps a conversation's allowed hosts in its session
// workflow (ConversationSessionState.NetworkGrants): a grant starts the
// session if none runs, as a touch does, and lasts as long as it.
type NetworkMemory struct {
	Client    client.Client
	TaskQueue string
	// Idle is the idle timeout of a session a grant starts (the worker's
	// session idle timeout).
	Idle time.Duration
	// Timeout defaults to DefaultTouchTimeout.
	Timeout time.Duration
}

var _ activities.NetworkMemory = NetworkMemory{}

// Grants implements activities.NetworkMemory; a conversation without a
// session has none.
func (m NetworkMemory) Grants(ctx context.Context, conversationID string) ([]activities.NetworkGrant, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout())
	defer cancel()
	st, err := State(ctx, m.Client, m.TaskQueue, conversationID)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil, nil
	}
	return st.NetworkGrants, err
}

// Grant implements activities.NetworkMemory with Update-With-Start.
func (m NetworkMemory) Grant(ctx context.Context, conversationID string, g activities.NetworkGrant) error {
	ctx, cancel := context.WithTimeout(ctx, m.timeout())
	defer cancel()
	id := workflows.SessionWorkflowID(m.TaskQueue, conversationID)
	h, err := m.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: startSession(m.Client, m.TaskQueue, conversationID, m.Idle),
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: workflows.UpdateSessionNetworkGrant,
			Args: []any{g}, WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("remember %s in session %s: %w", g.Dest, id, err)
	}
	return nil
}

func (m NetworkMemory) timeout() time.Duration { return orTouchTimeout(m.Timeout) }
