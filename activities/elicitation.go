package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
)

// UpdateElicitation is the update an MCP tool call's ExecuteTool sends to
// its own run when the server asks the user for input during the call
// (MCP elicitation): the run asks its Elicitation hooks, then a person
// through a pending permission ("elicitation: <server>") answered with
// decide_permission (allow with the form's content, deny), shows the
// answer to its ElicitationResult hooks, and answers.
const UpdateElicitation = "mcp_elicitation"

// StageElicitation and StageElicitationResult are the trace hooks of the
// elicitation hook stages.
const (
	StageElicitation       = "elicitation"
	StageElicitationResult = "elicitation_result"
)

// Bounds of what an elicitation carries into history.
const (
	// MaxElicitationMessageBytes bounds the server's message (longer is
	// cut).
	MaxElicitationMessageBytes = 4 << 10
	// MaxElicitationSchemaBytes bounds the requested schema and an
	// answer's content, as JSON: a larger question is cancelled without
	// reaching the run, a larger answer refused.
	MaxElicitationSchemaBytes = 16 << 10
)

// ElicitationRequest is the update's argument.
type ElicitationRequest struct {
	CallID string `json:"call_id"`
	// Seq numbers the call's questions, so each has its own pending
	// permission.
	Seq             int            `json:"seq"`
	ToolName        string         `json:"tool_name"`
	ServerName      string         `json:"mcp_server_name"`
	Message         string         `json:"message"`
	Mode            string         `json:"mode"`
	RequestedSchema map[string]any `json:"requested_schema,omitempty"`
	URL             string         `json:"url,omitempty"`
	ElicitationID   string         `json:"elicitation_id,omitempty"`
}

// ElicitationAnswer is the update's result.
type ElicitationAnswer struct {
	Action    string         `json:"action"`
	Content   map[string]any `json:"content,omitempty"`
	DecidedBy string         `json:"decided_by,omitempty"`
	Reason    string         `json:"reason,omitempty"`
}

// elicitor is the Elicit of a call's tools.Env: it sends UpdateElicitation
// to the run executing the call and waits for the answer; ctx is the
// call's activity, whose end ends the wait. Nil where there is no run to
// ask (a test environment).
func elicitor(ctx context.Context, call contract.ToolCall) tools.Elicitor {
	c, wfID, runID, ok := askableRun(ctx)
	if !ok {
		return nil
	}
	var seq atomic.Int64
	return func(askCtx context.Context, q tools.Elicitation) (tools.ElicitationAnswer, error) {
		req := ElicitationRequest{CallID: call.CallID, Seq: int(seq.Add(1)), ToolName: q.ToolName, ServerName: q.ServerName,
			Message: q.Message, Mode: q.Mode, RequestedSchema: q.RequestedSchema, URL: q.URL, ElicitationID: q.ElicitationID}
		boundText(&req.Message, MaxElicitationMessageBytes)
		if raw, _ := json.Marshal(q.RequestedSchema); len(raw) > MaxElicitationSchemaBytes {
			return tools.ElicitationAnswer{}, fmt.Errorf("MCP server %q asked with a %d-byte schema, over the %d-byte limit of what a run records", q.ServerName, len(raw), MaxElicitationSchemaBytes)
		}
		var a ElicitationAnswer
		if err := updateRun(askCtx, c, wfID, runID, UpdateElicitation, call.CallID, req, &a); err != nil {
			return tools.ElicitationAnswer{}, err
		}
		return tools.ElicitationAnswer{Action: a.Action, Content: a.Content}, nil
	}
}

// ElicitationHooksInput is the input of RunElicitationHooks: one of the
// two events; a Result carries the form's schema (RequestedSchema), which
// a hook's content must match.
type ElicitationHooksInput struct {
	Elicitation     *hooks.ElicitationEvent       `json:"elicitation,omitempty"`
	Result          *hooks.ElicitationResultEvent `json:"result,omitempty"`
	RequestedSchema map[string]any                `json:"requested_schema,omitempty"`
}

// ElicitationHooksResult is what the hooks answered.
type ElicitationHooksResult struct {
	Summary hooks.ElicitationSummary `json:"summary"`
	Trace   contract.TraceEntry      `json:"trace"`
}

// RunElicitationHooks asks the Elicitation hooks whether to answer an MCP
// server's question in the user's place, or shows the ElicitationResult
// hooks the answer. An accept whose content is over the bound or does not
// match the form is not taken (the hook's decision names why).
func (a *Activities) RunElicitationHooks(ctx context.Context, in ElicitationHooksInput) (ElicitationHooksResult, error) {
	var sum hooks.ElicitationSummary
	var err error
	stage, server, callID, schema := StageElicitation, "", "", in.RequestedSchema
	switch {
	case in.Elicitation != nil:
		ev := *in.Elicitation
		if ev.Session, err = a.hookSession(ctx, hooks.EventElicitation, ev.Session); err != nil {
			return fail[ElicitationHooksResult](err)
		}
		sum = a.hookRegistry().RunElicitation(ctx, ev)
		server, callID, schema = ev.ServerName, ev.CallID, ev.RequestedSchema
	case in.Result != nil:
		ev := *in.Result
		if ev.Session, err = a.hookSession(ctx, hooks.EventElicitationResult, ev.Session); err != nil {
			return fail[ElicitationHooksResult](err)
		}
		sum = a.hookRegistry().RunElicitationResult(ctx, ev)
		stage, server, callID = StageElicitationResult, ev.ServerName, ev.CallID
	default:
		return fail[ElicitationHooksResult](fmt.Errorf("RunElicitationHooks needs an elicitation or a result event"))
	}
	boundElicitationSummary(&sum, server, schema)
	a.recordDecisions(sum.Event, sum.Decisions)
	fields := []any{"mcp_server_name", server, "call_id", callID, "hooks", decisionsOrEmpty(sum.Decisions)}
	if sum.Answer != nil {
		fields = append(fields, "action", sum.Answer.Action, "decided_by", sum.DecidedBy)
	}
	return ElicitationHooksResult{Summary: sum, Trace: contract.Trace(stage, fields...)}, nil
}

// boundElicitationSummary keeps a hook's answer to what history holds
// and to what the server's form takes.
func boundElicitationSummary(sum *hooks.ElicitationSummary, server string, schema map[string]any) {
	boundDecisions(sum.Decisions)
	if sum.Answer == nil {
		return
	}
	boundText(&sum.Answer.Reason, maxHookContextBytes)
	var why string
	if raw, _ := json.Marshal(sum.Answer.Content); len(raw) > MaxElicitationSchemaBytes {
		why = fmt.Sprintf("its answer's content is %d bytes, over the %d-byte limit: not taken", len(raw), MaxElicitationSchemaBytes)
	} else if sum.Answer.Action == hooks.ElicitAccept && sum.Answer.Content != nil {
		if err := tools.CheckElicitationContent(server, schema, sum.Answer.Content); err != nil {
			why = err.Error() + ": not taken"
		}
	}
	if why == "" {
		return
	}
	for i := range sum.Decisions {
		if sum.Decisions[i].Hook == sum.DecidedBy {
			sum.Decisions[i].Error = why
		}
	}
	sum.Answer, sum.DecidedBy = nil, ""
}
