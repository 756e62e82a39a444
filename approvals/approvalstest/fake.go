// Package approvalstest is an in-memory stand-in for the Temporal client
// the approvals inbox uses, for tests of the inbox and its views.
package approvalstest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/workflows"
)

// Run is one waiting run.
type Run struct {
	WorkflowID, RunID, Type string
	Pending                 []workflows.PendingPermission
	// QueryErr fails its pending_permissions query.
	QueryErr error
}

// Client serves ListWorkflow from Runs, answers pending_permissions and
// records decide_permission updates; a decision removes the call.
type Client struct {
	mu      sync.Mutex
	Runs    []*Run
	Queries []string
	Updates []client.UpdateWorkflowOptions
	// UpdateErr fails the next update (e.g. a validator's refusal).
	UpdateErr error
}

func (c *Client) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Queries = append(c.Queries, req.GetQuery())
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, r := range c.Runs {
		if len(r.Pending) == 0 && r.QueryErr == nil {
			continue
		}
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
			Execution: &commonpb.WorkflowExecution{WorkflowId: r.WorkflowID, RunId: r.RunID},
			Type:      &commonpb.WorkflowType{Name: r.Type}})
	}
	return resp, nil
}

func (c *Client) QueryWorkflow(_ context.Context, workflowID, _ string, queryType string, _ ...any) (converter.EncodedValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if queryType != workflows.QueryPendingPermissions {
		return nil, fmt.Errorf("unexpected query %q", queryType)
	}
	for _, r := range c.Runs {
		if r.WorkflowID == workflowID {
			if r.QueryErr != nil {
				return nil, r.QueryErr
			}
			return jsonValue{r.Pending}, nil
		}
	}
	return nil, fmt.Errorf("workflow %q not found", workflowID)
}

func (c *Client) UpdateWorkflow(_ context.Context, opts client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Updates = append(c.Updates, opts)
	if err := c.UpdateErr; err != nil {
		c.UpdateErr = nil
		return nil, err
	}
	d := opts.Args[0].(workflows.PermissionDecision)
	for _, r := range c.Runs {
		if r.WorkflowID != opts.WorkflowID {
			continue
		}
		for i, p := range r.Pending {
			if p.CallID == d.CallID {
				r.Pending = append(r.Pending[:i], r.Pending[i+1:]...)
				return handle{opts: opts, res: workflows.PermissionDecisionResult{CallID: d.CallID, Decision: d.Decision, Accepted: true}}, nil
			}
		}
	}
	return nil, fmt.Errorf("no tool call %q is waiting for a permission decision", d.CallID)
}

// LastDecision is the payload of the last update.
func (c *Client) LastDecision() (workflows.PermissionDecision, client.UpdateWorkflowOptions) {
	c.mu.Lock()
	defer c.mu.Unlock()
	opts := c.Updates[len(c.Updates)-1]
	return opts.Args[0].(workflows.PermissionDecision), opts
}

type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return j.v != nil }
func (j jsonValue) Get(ptr any) error {
	raw, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, ptr)
}

type handle struct {
	opts client.UpdateWorkflowOptions
	res  workflows.PermissionDecisionResult
}

func (h handle) WorkflowID() string { return h.opts.WorkflowID }
func (h handle) RunID() string      { return h.opts.RunID }
func (h handle) UpdateID() string   { return h.opts.UpdateID }
func (h handle) Get(_ context.Context, ptr any) error {
	if ptr == nil {
		return nil
	}
	*ptr.(*workflows.PermissionDecisionResult) = h.res
	return nil
}
