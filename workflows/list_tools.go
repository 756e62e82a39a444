package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
)

// ListToolsWorkflow is the workflow type that answers "which tools does a
// worker on this task queue serve?" (the MCP gateway's tools/list).
const ListToolsWorkflow = "ListTools"

// ListToolsWorkflowID is the workflow ID prefix of tool listings; callers
// add a unique suffix.
const ListToolsWorkflowID = "list-tools"

// ListToolsRequest is ListTools' input.
type ListToolsRequest struct {
	// Requester names who asks (shown in history), e.g. "mcp-gateway".
	Requester string `json:"requester,omitempty"`
}

// ListTools returns the registry of the worker that runs it: one local
// activity, so the listing costs one workflow task and a marker, and it
// includes whatever that worker's configuration added (MCP clients' tools).
func ListTools(ctx workflow.Context, _ ListToolsRequest) (activities.ToolCatalog, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
		Summary:             "ListTools",
	})
	var cat activities.ToolCatalog
	err := workflow.ExecuteLocalActivity(ctx, acts.ListTools).Get(ctx, &cat)
	return cat, err
}
