package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
)

// StartWorkflow starts workflowType (ExecuteAssignment, AgentTurn or
// PrepareRound) for a with input, setting a's StartAttributes so the run
// makes no upsert of its own until its status changes. When the namespace
// does not know Fenix's search attributes (no worker registered them), it
// starts the run without them: the run then upserts what it can, as it
// would for a starter in any other language that sets none.
//
// A start that names no WorkflowIDReusePolicy gets REJECT_DUPLICATE: an
// assignment's attempt, a turn and a round run once. Temporal's default
// (ALLOW_DUPLICATE) starts a closed run's ID again, so a kernel that
// started an assignment again after it ended (a retry after a lost
// answer, a restart that replays its queue) ran its tool calls twice;
// now it gets the run that exists (the Go SDK's handle to it, whose Get
// is that run's result, unless WorkflowExecutionErrorWhenAlreadyStarted
// asks for the error).
func StartWorkflow(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, workflowType string, a contract.Assignment, input any) (client.WorkflowRun, error) {
	if opts.WorkflowIDReusePolicy == enumspb.WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED {
		opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	}
	withAttributes := opts
	withAttributes.TypedSearchAttributes = StartAttributes(a)
	run, err := c.ExecuteWorkflow(ctx, withAttributes, workflowType, input)
	if err != nil && unknownSearchAttribute(err) {
		return c.ExecuteWorkflow(ctx, opts, workflowType, input)
	}
	return run, err
}

// StartWorkflowJSON is StartWorkflow for an input already in JSON: the
// assignment's fields are read from it. Input that is no assignment is
// started as it is, without attributes, so the run reports what is wrong
// with it.
func StartWorkflowJSON(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, workflowType string, input json.RawMessage) (client.WorkflowRun, error) {
	var a contract.Assignment
	if err := json.Unmarshal(input, &a); err != nil {
		return c.ExecuteWorkflow(ctx, opts, workflowType, input)
	}
	return StartWorkflow(ctx, c, opts, workflowType, a, input)
}

// unknownSearchAttribute reports whether err is the server refusing a
// search attribute its namespace has not registered.
func unknownSearchAttribute(err error) bool {
	var invalid *serviceerror.InvalidArgument
	if !errors.As(err, &invalid) {
		return false
	}
	msg := strings.ToLower(invalid.Message)
	return strings.Contains(msg, "search attribute")
}
