package activities

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
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
	// Granted is a person's allow of the destination earlier in the
	// conversation (NetworkMemory): the run allows at once, and records
	// it.
	Granted *NetworkGrant `json:"granted,omitempty"`
}

// NetworkPermissionAnswer is the update's result.
type NetworkPermissionAnswer struct {
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
	DecidedBy string `json:"decided_by"`
	// Remember says a person allowed the destination just now: the
	// conversation remembers it (Claude Code remembers an allowed host
	// for its session).
	Remember bool `json:"remember,omitempty"`
}

// NetworkGrant is a person's allow of a destination (host:port) in a
// conversation.
type NetworkGrant struct {
	Dest      string    `json:"dest"`
	DecidedBy string    `json:"decided_by"`
	RunID     string    `json:"run_id,omitempty"`
	At        time.Time `json:"at"`
}

// NetworkMemory keeps the destinations people allowed in each
// conversation, so its later runs are not asked again (the worker's:
// the conversation's session workflow).
type NetworkMemory interface {
	Grants(ctx context.Context, conversationID string) ([]NetworkGrant, error)
	Grant(ctx context.Context, conversationID string, g NetworkGrant) error
}

// maxNetworkAsk bounds an ask beyond the run's own deadline for it.
const maxNetworkAsk = 2 * time.Hour

// networkAsker is the Asker of a call's command: it sends
// UpdateNetworkPermission to the run executing the call and waits for
// the answer, once per host and port for the command's life. A
// destination a person allowed earlier in the conversation (memory) is
// sent as granted, and one a person allows now is remembered for the
// conversation. It answers no once the call's activity has ended (a
// service the call started asks nobody), and is nil where there is no
// run to ask (a test environment).
func networkAsker(ctx context.Context, call contract.ToolCall, conversationID string, memory NetworkMemory) netguard.Asker {
	c, wfID, runID, ok := askableRun(ctx)
	if !ok {
		return nil
	}
	if conversationID == "" {
		memory = nil
	}
	var mu sync.Mutex
	answered := map[string]NetworkPermissionAnswer{}
	return func(_ context.Context, host string, port int) (bool, string) {
		dest := net.JoinHostPort(host, strconv.Itoa(port))
		mu.Lock()
		a, seen := answered[dest]
		mu.Unlock()
		if !seen {
			req := NetworkPermissionRequest{CallID: call.CallID, ToolName: call.ToolName, Host: host, Port: port}
			if memory != nil {
				req.Granted = grantOf(ctx, memory, conversationID, dest)
			}
			var err error
			if a, err = askRun(ctx, c, wfID, runID, req); err != nil {
				return false, err.Error()
			}
			if a.Remember && memory != nil {
				g := NetworkGrant{Dest: dest, DecidedBy: a.DecidedBy, RunID: wfID, At: time.Now().UTC()}
				if err := memory.Grant(ctx, conversationID, g); err != nil {
					activity.GetLogger(ctx).Warn("the conversation could not remember an allowed host; its later runs will ask again",
						"conversation_id", conversationID, "dest", dest, "error", err)
				}
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

// grantOf is the conversation's grant of dest, nil for none or when the
// memory cannot be read (the run then asks).
func grantOf(ctx context.Context, memory NetworkMemory, conversationID, dest string) *NetworkGrant {
	grants, err := memory.Grants(ctx, conversationID)
	if err != nil {
		activity.GetLogger(ctx).Warn("the conversation's allowed hosts could not be read; asking", "conversation_id", conversationID, "error", err)
		return nil
	}
	for _, g := range grants {
		if g.Dest == dest {
			return &g
		}
	}
	return nil
}

// askRun sends the network question and waits for its answer.
func askRun(ctx context.Context, c client.Client, wfID, runID string, req NetworkPermissionRequest) (NetworkPermissionAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, maxNetworkAsk)
	defer cancel()
	var a NetworkPermissionAnswer
	err := updateRun(ctx, c, wfID, runID, UpdateNetworkPermission, req.CallID, req, &a)
	return a, err
}

// askableRun is the run executing the call's activity ctx, with a client
// to ask it; not ok outside one (a test environment).
func askableRun(ctx context.Context) (c client.Client, wfID, runID string, ok bool) {
	info, inActivity := currentActivity(ctx)
	c = activityClient(ctx)
	if !inActivity || c == nil || info.WorkflowExecution.ID == "" {
		return nil, "", "", false
	}
	return c, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, true
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
