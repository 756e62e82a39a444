package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/audit"
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
	workID := logicalWorkID(conversation, session, c.requestID, d.Name, args)
	c.workflowID = workflows.AssignmentWorkflowID(workID, 1)
	c.callID = "mcp-" + c.requestID
	a := g.assignment(workID, conversation, c, args, req)
	// Registered until the handler returns, which is before the SDK writes
	// the answer: a request that ends unanswered still finds its call.
	g.calls.add(c)
	defer g.calls.remove(c)
	defer c.settle()

	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
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
	res, err := c.await(ctx, run)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err // nobody is waiting for the answer
	case err != nil:
		return nil, internalError("%v", err)
	}
	return g.toResult(ctx, d, res, run), nil
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
			go c.elicit(ctx, p)
			continue
		}
		c.progress(ctx, waitingMessage(c.workflowID, p))
	}
}

func waitingMessage(workflowID string, p workflows.PendingPermission) string {
	return fmt.Sprintf("waiting for approval: tool %s needs permission %q; run `starter approve %s %s` or `starter deny %s %s` (deadline %s)",
		p.ToolName, p.Permission, workflowID, p.CallID, workflowID, p.CallID, p.Deadline.Format(time.RFC3339))
}

func (c *call) canElicit() bool {
	if c.g.cfg.ElicitApproval == ElicitOff {
		return false
	}
	p := c.req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// elicit asks the client's user. Decline denies; accept allows only in
// ElicitAllow mode, and otherwise leaves the call to an operator, as a
// dismissed or failed question does.
func (c *call) elicit(ctx context.Context, p workflows.PendingPermission) {
	if p.RequestedBy == workflows.ElicitationRequester {
		c.forwardQuestion(ctx, p)
		return
	}
	question, allow := elicitQuestion(c.g.cfg.ElicitApproval, c.workflowID, p)
	res, err := c.req.Session.Elicit(ctx, &mcp.ElicitParams{
		Mode:    "form",
		Message: question,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"reason": map[string]any{"type": "string", "title": "Reason", "description": "Optional note recorded with the decision"},
			},
		},
	})
	if err != nil || (res.Action != "accept" && res.Action != "decline") || (res.Action == "accept" && !allow) {
		why := "the client dismissed the question"
		switch {
		case err != nil:
			why = "asking the client failed: " + err.Error()
		case res.Action == "accept" && c.g.cfg.ElicitApproval == ElicitAllow:
			why = "the question could not show the arguments whole, so the client's accept is not an approval"
		case res.Action == "accept":
			why = "the client's accept is not an approval on this gateway (-elicit-approval " + c.g.cfg.ElicitApproval + ")"
		}
		c.progress(ctx, why+"; "+waitingMessage(c.workflowID, p))
		return
	}
	// The decision names the arguments the question showed: arguments
	// changed since refuse it.
	d := workflows.PermissionDecision{CallID: p.CallID, Decision: workflows.DecisionAllow, Reason: "approved by the MCP client's user", ArgsHash: p.ArgsHash}
	if res.Action == "decline" {
		d.Decision, d.Reason = workflows.DecisionDeny, "declined by the MCP client's user"
	}
	if note, _ := res.Content["reason"].(string); note != "" {
		d.Reason += ": " + note
	}
	c.decide(ctx, p, d)
}

// forwardQuestion puts an MCP server's question, asked during a tool the
// call runs, to the client's user as the server asked it (its message,
// form or URL): the answer is the user's input, not an approval of
// anything, so it is forwarded in every mode but off. Accept answers
// the form, decline declines; a dismissed question stays for an
// operator.
func (c *call) forwardQuestion(ctx context.Context, p workflows.PendingPermission) {
	server, _ := p.Arguments["mcp_server_name"].(string)
	message, _ := p.Arguments["message"].(string)
	params := &mcp.ElicitParams{Mode: "form", Message: fmt.Sprintf("MCP server %s (through Fenix) asks: %s", contract.Printable(server), message)}
	if url, _ := p.Arguments["url"].(string); p.Arguments["mode"] == "url" {
		caps := c.req.Session.InitializeParams().Capabilities.Elicitation
		if caps.URL == nil {
			c.progress(ctx, "MCP server "+server+" asks you to open "+url+"; the client takes no URL questions; "+waitingMessage(c.workflowID, p))
			return
		}
		params.Mode, params.URL = "url", url
		params.ElicitationID, _ = p.Arguments["elicitation_id"].(string)
	} else {
		params.RequestedSchema = p.Arguments["requested_schema"]
		if params.RequestedSchema == nil {
			params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
	}
	res, err := c.req.Session.Elicit(ctx, params)
	if err != nil || (res.Action != "accept" && res.Action != "decline") {
		why := "the client dismissed the question"
		if err != nil {
			why = "asking the client failed: " + err.Error()
		}
		c.progress(ctx, why+"; "+waitingMessage(c.workflowID, p))
		return
	}
	d := workflows.PermissionDecision{CallID: p.CallID, Decision: workflows.DecisionAllow, Reason: "answered by the MCP client's user",
		ArgsHash: p.ArgsHash, Content: res.Content}
	if params.Mode == "form" && d.Content == nil {
		d.Content = map[string]any{}
	}
	if res.Action == "decline" {
		d.Decision, d.Reason, d.Content = workflows.DecisionDeny, "declined by the MCP client's user", nil
	}
	c.decide(ctx, p, d)
}

// decide sends the client user's decision to the run.
func (c *call) decide(ctx context.Context, p workflows.PendingPermission, d workflows.PermissionDecision) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	h, err := c.g.cfg.Client.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID: c.workflowID, UpdateName: workflows.UpdateDecidePermission,
		Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var out workflows.PermissionDecisionResult
		err = h.Get(uctx, &out)
	}
	if err != nil {
		// Most often someone decided first with starter approve/deny.
		c.g.cfg.Logger.Info("mcp gateway: decision from elicitation not applied", "workflow_id", c.workflowID, "call_id", p.CallID, "error", err)
	}
}

// sendReports sends the reports not sent yet as progress notifications.
func (c *call) sendReports(ctx context.Context, reports []contract.Report) {
	for _, r := range reports {
		if r.Sequence <= c.sentReport {
			continue
		}
		c.sentReport = r.Sequence
		c.progress(ctx, describeReport(r))
	}
}

func (c *call) progress(ctx context.Context, msg string) {
	if c.token == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.progressed++
	c.lastProgress = time.Now()
	if err := c.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: c.token, Progress: c.progressed, Message: msg}); err != nil {
		c.g.cfg.Logger.Debug("mcp gateway: progress not sent", "error", err)
	}
}

// quietFor is how long no progress notification was sent.
func (c *call) quietFor() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.lastProgress)
}

// describeReport is one line per report: kind, phase, tool and what it says.
func describeReport(r contract.Report) string {
	parts := []string{r.Kind}
	if r.Phase != "" {
		parts = append(parts, r.Phase)
	}
	if t := r.ToolInvocation; t != nil {
		parts = append(parts, fmt.Sprintf("%s (%s)", t.ToolName, t.Status))
	}
	if o := r.OutputChunk; o != nil {
		parts = append(parts, fmt.Sprintf("%s: %s", o.Stream, audit.Preview(o.Text, 200)))
	}
	if r.Error != nil {
		parts = append(parts, audit.Preview(r.Error.LastErrorSummary, 200))
	}
	return strings.Join(parts, " ")
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
		out.Content = append([]mcp.Content{&mcp.TextContent{Text: res.Output.Content}}, g.attachments(ctx, run.GetID(), res.Output.Data)...)
		structured, err := g.declaredStructure(ctx, res.Output.Data)
		if err != nil {
			// A result without it would fail the client's check with no
			// word of why; the run itself completed (fenixrt/status).
			out.IsError = true
			out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("[the tool's structured content is not sent: %v]", err)})
		}
		out.StructuredContent = structured
	case res.Status == contract.StatusCompleted && res.Output != nil:
		out.Content = append([]mcp.Content{&mcp.TextContent{Text: res.Output.Content}}, g.attachments(ctx, run.GetID(), res.Output.Data)...)
		if len(res.Output.Data) > 0 {
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

// maxElicitedArguments bounds the arguments an elicitation question
// shows. An accept approves only a call whose arguments the question
// showed whole: the end of a long command is where an agent would put what
// it wants unread.
const maxElicitedArguments = 4 << 10

// elicitQuestion is what the client's user is asked about p, and whether
// their accept approves the call (mode ElicitAllow, arguments shown whole).
// Everything in it is the agent's or a hook's words, shown Readable.
func elicitQuestion(mode, workflowID string, p workflows.PendingPermission) (string, bool) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a person reads it: && stays &&
	_ = enc.Encode(p.Arguments)
	args := approvals.Readable(strings.TrimSuffix(buf.String(), "\n"))
	tool, by := contract.Printable(p.ToolName), contract.Printable(orDefault(p.RequestedBy, "policy"))
	whole := len(args) <= maxElicitedArguments
	if mode == ElicitAllow && whole {
		return fmt.Sprintf("Fenix: allow tool %s (permission %q, asked by %s) with arguments %s?", tool, p.Permission, by, args), true
	}
	why := "accepting here does not approve it"
	if mode == ElicitAllow {
		why = fmt.Sprintf("its arguments (%d bytes) are too long to show here whole, so accepting here does not approve it", buf.Len()-1)
	}
	return fmt.Sprintf("Fenix: tool %s (permission %q, asked by %s) with arguments %s waits for an operator's approval (`starter approve %s %s`); %s. Decline to deny the call now.",
		tool, p.Permission, by, audit.Preview(args, 500), contract.Printable(workflowID), contract.Printable(p.CallID), why), false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
