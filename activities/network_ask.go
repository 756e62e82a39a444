package activities

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/netguard"
)

// UpdateNetworkPermission is the update a network-sandboxed command's
// ExecuteTool sends to its own run when the command connects to a host
// its sandbox neither allows nor denies: the run parks a permission
// ("network: host:port") until decide_permission, the approval timeout
// or a cancel, and answers — as Claude Code asks its user about such a
// host instead of refusing it.
const UpdateNetworkPermission = "network_permission"

// NetworkPermissionRequest is the update's argument.
type NetworkPermissionRequest struct {
	CallID   string `json:"call_id"`
	ToolName string `json:"tool_name"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
}

// NetworkPermissionAnswer is the update's result.
type NetworkPermissionAnswer struct {
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
	DecidedBy string `json:"decided_by"`
}

// maxNetworkAsk bounds an ask beyond the run's own deadline for it.
const maxNetworkAsk = 2 * time.Hour

// networkAsker is the Asker of a call's command: it sends
// UpdateNetworkPermission to the run executing the call and waits for
// the answer, once per host and port for the command's life. It answers
// no once the call's activity has ended (a service the call started asks
// nobody), and is nil where there is no run to ask (a test environment).
func networkAsker(ctx context.Context, call contract.ToolCall) netguard.Asker {
	info, ok := currentActivity(ctx)
	c := activityClient(ctx)
	if !ok || c == nil || info.WorkflowExecution.ID == "" {
		return nil
	}
	wfID, runID := info.WorkflowExecution.ID, info.WorkflowExecution.RunID
	var mu sync.Mutex
	answered := map[string]NetworkPermissionAnswer{}
	return func(_ context.Context, host string, port int) (bool, string) {
		dest := net.JoinHostPort(host, strconv.Itoa(port))
		mu.Lock()
		a, seen := answered[dest]
		mu.Unlock()
		if !seen {
			var err error
			if a, err = askRun(ctx, c, wfID, runID, NetworkPermissionRequest{CallID: call.CallID, ToolName: call.ToolName, Host: host, Port: port}); err != nil {
				return false, err.Error()
			}
			mu.Lock()
			answered[dest] = a
			mu.Unlock()
		}
		why := a.DecidedBy
		if a.Reason != "" {
			why += ": " + a.Reason
		}
		return a.Allowed, why
	}
}

// askRun sends the network question and waits for its answer.
func askRun(ctx context.Context, c client.Client, wfID, runID string, req NetworkPermissionRequest) (NetworkPermissionAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, maxNetworkAsk)
	defer cancel()
	var a NetworkPermissionAnswer
	err := updateRun(ctx, c, wfID, runID, UpdateNetworkPermission, req.CallID, req, &a)
	return a, err
}

// updateRun sends a call's question to its own run as the update name
// and waits for the answer; ctx is the call's activity, whose end ends
// the wait.
func updateRun(ctx context.Context, c client.Client, wfID, runID, name, callID string, arg, answer any) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wfID, RunID: runID, UpdateName: name,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return fmt.Errorf("run %s of call %q could not be asked: %v", wfID, callID, err)
	}
	if err := h.Get(ctx, answer); err != nil {
		return fmt.Errorf("run %s of call %q did not answer: %v", wfID, callID, err)
	}
	return nil
}
