package mcpserver

// Questions a call's run has for the client's user: a permission its
// policy asks for, and an MCP server's own question asked during a tool.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/approvals"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// waitingMessage is the progress line of a call parked for permission.
func waitingMessage(workflowID string, p workflows.PendingPermission) string {
	return fmt.Sprintf("waiting for approval: tool %s needs permission %q; run `starter approve %s %s` or `starter deny %s %s` (deadline %s)",
		p.ToolName, p.Permission, workflowID, p.CallID, workflowID, p.CallID, p.Deadline.Format(time.RFC3339))
}

// canElicit says whether the client may be asked: it supports
// elicitation and the gateway is not set never to ask.
func (c *call) canElicit() bool {
	if c.g.cfg.ElicitApproval == ElicitOff {
		return false
	}
	p := c.req.Session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// question is what a call's client is asked about a pending permission,
// and what its answer does: asked by elicitation/create (elicit) or, on
// protocol 2026-07-28, which sends no request to the client while serving
// one, returned as an input request the client answers with its retry
// (multiround.go).
type question struct {
	params *mcp.ElicitParams
	answer func(ctx context.Context, res *mcp.ElicitResult, err error)
}

// elicit asks the client's user.
func (c *call) elicit(ctx context.Context, p workflows.PendingPermission) {
	q, ok := c.question(ctx, p)
	if !ok {
		return
	}
	res, err := c.req.Session.Elicit(ctx, q.params)
	q.answer(ctx, res, err)
}

// question is what the client's user is asked about p; false when it
// cannot be asked (the call is left to an operator, which the progress
// says).
func (c *call) question(ctx context.Context, p workflows.PendingPermission) (question, bool) {
	if p.RequestedBy == workflows.ElicitationRequester {
		return c.forwardedQuestion(ctx, p)
	}
	return c.approvalQuestion(p), true
}

// approvalQuestion asks for a permission. Decline denies; accept allows
// only in ElicitAllow mode, and otherwise leaves the call to an operator,
// as a dismissed or failed question does.
func (c *call) approvalQuestion(p workflows.PendingPermission) question {
	message, allow := elicitQuestion(c.g.cfg.ElicitApproval, c.workflowID, p)
	params := &mcp.ElicitParams{
		Mode:    "form",
		Message: message,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"reason": map[string]any{"type": "string", "title": "Reason", "description": "Optional note recorded with the decision"},
			},
		},
	}
	return question{params: params, answer: func(ctx context.Context, res *mcp.ElicitResult, err error) {
		if err != nil || res == nil || (res.Action != "accept" && res.Action != "decline") || (res.Action == "accept" && !allow) {
			why := "the client dismissed the question"
			switch {
			case err != nil:
				why = "asking the client failed: " + err.Error()
			case res == nil:
				why = "the client did not answer the question"
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
	}}
}

// forwardedQuestion puts an MCP server's question, asked during a tool
// the call runs, to the client's user as the server asked it (its
// message, form or URL): the answer is the user's input, not an approval
// of anything, so it is forwarded in every mode but off. Accept answers
// the form, decline declines; a dismissed question stays for an operator.
func (c *call) forwardedQuestion(ctx context.Context, p workflows.PendingPermission) (question, bool) {
	server, _ := p.Arguments["mcp_server_name"].(string)
	message, _ := p.Arguments["message"].(string)
	params := &mcp.ElicitParams{Mode: "form", Message: fmt.Sprintf("MCP server %s (through Fenix) asks: %s", contract.Printable(server), message)}
	if url, _ := p.Arguments["url"].(string); p.Arguments["mode"] == "url" {
		caps := c.req.Session.InitializeParams().Capabilities.Elicitation
		if caps.URL == nil {
			c.progress(ctx, "MCP server "+server+" asks you to open "+url+"; the client takes no URL questions; "+waitingMessage(c.workflowID, p))
			return question{}, false
		}
		params.Mode, params.URL = "url", url
		params.ElicitationID, _ = p.Arguments["elicitation_id"].(string)
	} else {
		params.RequestedSchema = p.Arguments["requested_schema"]
		if params.RequestedSchema == nil {
			params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
	}
	return question{params: params, answer: func(ctx context.Context, res *mcp.ElicitResult, err error) {
		if err != nil || res == nil || (res.Action != "accept" && res.Action != "decline") {
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
	}}, true
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
