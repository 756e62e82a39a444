package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// HeaderConversation lets an HTTP client name its conversation: its
// sessions' calls share one conversation_id (hook sessions, audit, the
// approvals inbox) instead of one per MCP session.
const HeaderConversation = "Fenix-Conversation-Id"

// Metadata keys of a tools/call result's _meta.
const (
	MetaWorkflowID = "fenixrt/workflow_id"
	MetaRunID      = "fenixrt/run_id"
	MetaStatus     = "fenixrt/status"
	// MetaErrorCode is a failed run's error code (contract.Failure.Code:
	// permission_denied, resource_not_found, ...), for clients that act
	// on it rather than read the text.
	MetaErrorCode = "fenixrt/error_code"
	// MetaData is the run's output data for an MCP server's tool that
	// declared no output schema (Fenix's own tools send theirs as
	// structuredContent).
	MetaData = "fenixrt/data"
)

// cancelWait bounds how long a cancelled call waits for its run to record
// the cancellation before answering.
const cancelWait = 30 * time.Second

// call is one tools/call in flight.
type call struct {
	g          *Gateway
	req        *mcp.CallToolRequest
	tool       string
	session    string
	requestID  string
	workflowID string
	callID     string
	// progress state
	token      any
	mu         sync.Mutex // progress is sent from the loop and from elicit
	progressed float64
	// lastProgress is when the last progress notification was sent.
	lastProgress time.Time
	sentReport   int
	asked        map[string]bool
	// inputs are the questions the run has for a client that takes them
	// as input requests (multiround.go).
	inputs []inputQuestion
	// cancellation by the gateway (inflight.go)
	cancelMu      sync.Mutex
	cancelReason  string
	started       bool
	pendingCancel bool
}

func (g *Gateway) callHandler(d tools.Descriptor) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.call(ctx, d, req)
	}
}

func (g *Gateway) call(ctx context.Context, d tools.Descriptor, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := map[string]any{}
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return errorResult(fmt.Sprintf("arguments of tool %q must be a JSON object: %v", d.Name, err)), nil
		}
	}
	conversation, err := g.conversation(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	// The start event carries the arguments: over ExecuteAssignment's
	// limit they would fail deep inside Temporal (its 2 MB payload limit)
	// or in the run's review, after a start.
	if raw, _ := json.Marshal(args); len(raw) > workflows.MaxToolArgumentBytes {
		return fenixErrorResult(fenixerr.PayloadTooLarge("arguments of tool %q are %d bytes, over the %d bytes (1 MiB + 64 KiB) any Fenix tool accepts: pass large content by reference (a workspace file) instead",
			d.Name, len(raw), workflows.MaxToolArgumentBytes).WithTool(d.Name)), nil
	}
	c := &call{g: g, req: req, tool: d.Name, session: req.Session.ID(), requestID: requestIDOf(req.Params.Meta), token: req.Params.GetProgressToken(), asked: map[string]bool{}}
	if c.requestID == "" {
		// Not read off the wire (a transport other than the gateway's):
		// unique, so never mistaken for a retry.
		c.requestID = "x" + randomID()
	}
	session := c.session
	if session == "" {
		session = g.stdioSession // one session per `starter mcp` process
	}
	// A retry answering the input requests of an earlier answer goes on
	// with that answer's run.
	var resumed *pendingInput
	if state := req.Params.RequestState; state != "" {
		in, ok := g.inputs.take(state, session, d.Name)
		if !ok {
			return errorResult(fmt.Sprintf("tool %q: the requestState names no call of this tool in this session waiting for answers (a state is answered once, within %s, on the gateway that gave it)", d.Name, inputStateTTL)), nil
		}
		resumed = &in
	}
	workID := logicalWorkID(conversation, session, c.requestID, d.Name, args)
	c.workflowID = workflows.AssignmentWorkflowID(workID, 1)
	c.callID = "mcp-" + c.requestID
	if resumed != nil {
		c.workflowID, c.callID = resumed.workflowID, resumed.callID
	}
	// Registered until the handler returns, which is before the SDK writes
	// the answer: a request that ends unanswered still finds its call.
	g.calls.add(c)
	defer g.calls.remove(c)
	defer c.settle()

	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if resumed != nil {
		c.resume(ctx, *resumed)
		c.markStarted()
		return c.finish(ctx, d, g.cfg.Client.GetWorkflow(startCtx, c.workflowID, ""), session)
	}
	a := g.assignment(workID, conversation, c, args, req)
	run, err := workflows.StartWorkflow(startCtx, g.cfg.Client, client.StartWorkflowOptions{
		ID:        c.workflowID,
		TaskQueue: g.cfg.TaskQueue,
		// A retry of the same request joins the run in flight, or reads the
		// result of the closed one: never a second execution.
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.ExecuteAssignmentWorkflow, a, a)
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if !errors.As(err, &started) {
			return nil, internalError("could not start %s %s for tool %q on task queue %q: %v", workflows.ExecuteAssignmentWorkflow, c.workflowID, d.Name, g.cfg.TaskQueue, err)
		}
		run = g.cfg.Client.GetWorkflow(startCtx, c.workflowID, "")
	}
	c.markStarted()
	return c.finish(ctx, d, run, session)
}

// finish waits for the call's run and answers with its result, or with
// the questions it has for a client that takes them as input requests.
func (c *call) finish(ctx context.Context, d tools.Descriptor, run client.WorkflowRun, session string) (*mcp.CallToolResult, error) {
	res, err := c.await(ctx, run)
	switch {
	case errors.Is(err, errInputRequired):
		return c.inputRequired(session), nil
	case err != nil && ctx.Err() != nil:
		return nil, err // nobody is waiting for the answer
	case err != nil:
		return nil, internalError("%v", err)
	}
	c.sendLogs(ctx, res)
	return c.g.toResult(ctx, d, res, run), nil
}

// internalError is a JSON-RPC internal error (-32603): the spec's
// protocol error for a server failure, here Temporal not starting or not
// returning the run that is the call. What the run itself decided (a
// failure, a denial, a cancellation) is a tool result with isError.
func internalError(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcp gateway: " + fmt.Sprintf(format, args...)}
}

// conversation is the call's conversation_id: the configured one, the
// client's Fenix-Conversation-Id header, else the MCP session.
func (g *Gateway) conversation(req *mcp.CallToolRequest) (string, error) {
	if g.cfg.Conversation != "" {
		return g.cfg.Conversation, nil
	}
	if req.Extra != nil && req.Extra.Header != nil {
		if name := req.Extra.Header.Get(HeaderConversation); name != "" {
			if err := checkName(HeaderConversation, name); err != nil {
				return "", err
			}
			if sub := subjectOf(req.Extra.TokenInfo); sub != "" {
				// Each signed-in user names conversations of their own: a
				// conversation's commands share a signal domain and its hooks
				// a session, which another user's name must not reach.
				sum := sha256.Sum256([]byte(sub))
				return "u" + hex.EncodeToString(sum[:6]) + "-" + name, nil
			}
			return name, nil
		}
	}
	if id := req.Session.ID(); id != "" {
		return id, nil
	}
	return g.stdioSession, nil
}

// logicalWorkID derives the assignment's identity from the conversation,
// the MCP session, the request ID and the call: a retry of the same
// request in its session maps to the same run. JSON-RPC request IDs are
// unique only within a session, so another session's request with the
// same ID (a new client numbering from zero in a named conversation) is a
// new run, never the recorded result of an earlier one; so is a different
// call reusing a request ID.
func logicalWorkID(conversation, session, requestID, tool string, args map[string]any) string {
	raw, _ := json.Marshal(args) // map keys marshal sorted: stable
	sum := sha256.Sum256(append([]byte(session+"\x00"+tool+"\x00"), raw...))
	return fmt.Sprintf("mcp-%s-%s-%s", conversation, requestID, hex.EncodeToString(sum[:6]))
}

func (g *Gateway) assignment(workID, conversation string, c *call, args map[string]any, req *mcp.CallToolRequest) contract.Assignment {
	clientName := "an MCP client"
	if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
		clientName = p.ClientInfo.Name
	}
	asWhom := ""
	if req.Extra != nil {
		if sub := subjectOf(req.Extra.TokenInfo); sub != "" {
			asWhom = fmt.Sprintf(" as signed-in user %q", sub)
		}
	}
	a := contract.Assignment{
		LogicalWorkID:   workID,
		AttemptNo:       1,
		ConversationID:  conversation,
		TurnID:          "mcp-" + c.requestID,
		ContextMessages: []contract.Message{{Role: "user", Content: fmt.Sprintf("%s called tool %s over MCP%s.", clientName, c.tool, asWhom)}},
		AgentContext:    contract.AgentContext{Profile: g.cfg.Profile, AllowedToolNames: []string{c.tool}},
		WorkspaceRoot:   g.cfg.WorkspaceRoot,
		ToolCall:        &contract.ToolCall{CallID: c.callID, ToolName: c.tool, Arguments: args},
	}
	if g.cfg.ApprovalTimeout > 0 {
		a.Approval.TimeoutSeconds = int(g.cfg.ApprovalTimeout / time.Second)
	}
	return a
}

// await waits for the run, sending its reports as progress, asking for
// approvals and passing on a client's cancellation.
func (c *call) await(ctx context.Context, run client.WorkflowRun) (contract.Result, error) {
	getCtx, stopGet := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGet()
	type outcome struct {
		res contract.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var res contract.Result
		err := run.Get(getCtx, &res)
		done <- outcome{res, err}
	}()
	tick := time.NewTicker(c.g.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case o := <-done:
			if o.err != nil {
				return contract.Result{}, fmt.Errorf("run %s of tool %q did not complete: %w", c.workflowID, c.tool, o.err)
			}
			c.sendReports(ctx, o.res.Reports)
			return o.res, nil
		case <-tick.C:
			c.poll(ctx, getCtx)
			if len(c.inputs) > 0 {
				return contract.Result{}, errInputRequired
			}
		case <-ctx.Done():
			if reason, ok := c.g.cancels.take(c.session, c.requestID); ok {
				if reason == "" {
					reason = "no reason given"
				}
				c.cancelRun(reasonNotifiedCalls + reason)
			}
			if !c.cancelRequested() {
				// A gateway shutdown, or a session the SDK ended without
				// the client asking (idle timeout): the run goes on in
				// Temporal and a retry of this request reads its result.
				return contract.Result{}, ctx.Err()
			}
			wait := time.NewTimer(cancelWait)
			defer wait.Stop()
			select {
			case o := <-done:
				return o.res, o.err
			case <-wait.C:
				return contract.Result{}, ctx.Err()
			}
		}
	}
}

// poll reads reports and pending permissions once.
func (c *call) poll(ctx, qctx context.Context) {
	qctx, cancel := context.WithTimeout(qctx, 5*time.Second)
	defer cancel()
	if c.token != nil {
		var reports []contract.Report
		if v, err := c.g.cfg.Client.QueryWorkflow(qctx, c.workflowID, "", workflows.QueryReports); err == nil && v.Get(&reports) == nil {
			c.sendReports(ctx, reports)
		}
	}
	var pending []workflows.PendingPermission
	v, err := c.g.cfg.Client.QueryWorkflow(qctx, c.workflowID, "", workflows.QueryPendingPermissions)
	if err != nil || v.Get(&pending) != nil {
		return
	}
	for _, p := range pending {
		if c.asked[p.CallID] {
			if c.quietFor() >= c.g.cfg.WaitingReminder {
				c.progress(ctx, "still "+waitingMessage(c.workflowID, p))
			}
			continue
		}
		c.asked[p.CallID] = true
		if c.canElicit() {
			if multiRoundTrip(c.req) {
				// Returned as an input request (multiround.go).
				if q, ok := c.question(ctx, p); ok {
					c.inputs = append(c.inputs, inputQuestion{pending: p, asked: q})
				}
				continue
			}
			go c.elicit(ctx, p)
			continue
		}
		c.progress(ctx, waitingMessage(c.workflowID, p))
	}
}

// toResult maps a run's result onto MCP: completed is content (plus the
// projector's data as structuredContent); failed and canceled are
// isError results whose text is the pipeline's reason (a blocking hook's
// reason, a denial, a validation error).
func (g *Gateway) toResult(ctx context.Context, d tools.Descriptor, res contract.Result, run client.WorkflowRun) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Meta: mcp.Meta{MetaWorkflowID: run.GetID(), MetaRunID: run.GetRunID(), MetaStatus: res.Status}}
	switch {
	case res.Status == contract.StatusCompleted && res.Output != nil && d.Declared != nil && len(d.Declared.OutputSchema) > 0:
		// The client validates structuredContent against the output schema
		// the server declared: it gets the server's own.
		out.Content = g.completedContent(ctx, run.GetID(), res.Output)
		structured, err := g.declaredStructure(ctx, res.Output.Data)
		if err != nil {
			// A result without it would fail the client's check with no
			// word of why; the run itself completed (fenixrt/status).
			out.IsError = true
			out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("[the tool's structured content is not sent: %v]", err)})
		}
		out.StructuredContent = structured
	case res.Status == contract.StatusCompleted && res.Output != nil:
		out.Content = g.completedContent(ctx, run.GetID(), res.Output)
		switch {
		case len(res.Output.Data) == 0:
		case d.Declared != nil:
			// An MCP server's tool that declared no output schema: the
			// run's data is Fenix's account of the call (server, items,
			// stored references), not the tool's output, and a client that
			// prefers structuredContent to content would show it instead.
			out.Meta[MetaData] = res.Output.Data
		default:
			out.StructuredContent = res.Output.Data
		}
	case res.Error != nil:
		out.IsError = true
		out.Meta[MetaErrorCode] = res.Error.Code
		out.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s [%s, %s]", res.Error.LastErrorSummary, res.Error.ErrorType, res.Error.Code)}}
	default:
		out.IsError = true
		out.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("run ended with status %q and no output", res.Status)}}
	}
	return out
}

// fenixErrorResult is an isError result for a Fenix error, shaped like a
// failed run's: the message, then its type and code.
func fenixErrorResult(e *fenixerr.Error) *mcp.CallToolResult {
	return errorResult(fmt.Sprintf("%s [%s, %s]", e.Message, e.Type, e.Code))
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
