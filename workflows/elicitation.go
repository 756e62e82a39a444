package workflows

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/tools"
)

// An MCP server that asks the user for input during one of its tool
// calls (MCP elicitation) reaches the call's run through the
// activities.UpdateElicitation update its ExecuteTool sends. The run asks
// its Elicitation hooks (a hook may answer for the user, as in Claude
// Code); without an answer it parks a permission ("elicitation:
// <server>") beside the call, answered with decide_permission: allow
// accepts, with the form's content; deny declines; its deadline, a
// cancel or the call's end cancel. The answer is shown to the
// ElicitationResult hooks, which may change it, and goes back to the
// server. As with network questions, the update only arrives from a
// call, so runs recorded before it replay unchanged.

// ElicitationRequester is the RequestedBy of an MCP server's question
// parked for a person.
const ElicitationRequester = "mcp.elicitation"

// A server that asks again and again must not fill its run's history:
// a run holds at most maxOpenElicitations unanswered and maxElicitations
// in all.
const (
	maxOpenElicitations = 4
	maxElicitations     = 32
	maxElicitURLBytes   = 2048
)

// registerElicitation installs the update's handler.
func (s *session) registerElicitation() error {
	return workflow.SetUpdateHandlerWithOptions(s.ctx, activities.UpdateElicitation, s.elicit,
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, req activities.ElicitationRequest) error {
			return s.checkElicitation(req)
		}})
}

func (s *session) checkElicitation(req activities.ElicitationRequest) error {
	schema, _ := json.Marshal(req.RequestedSchema)
	switch {
	case req.CallID == "" || len(req.CallID) > contract.EchoStringBytes:
		return fmt.Errorf("an elicitation needs the call_id of the call it was asked in (at most %d bytes)", contract.EchoStringBytes)
	case req.Seq < 1:
		return fmt.Errorf("an elicitation needs a seq of 1 or more, not %d", req.Seq)
	case req.ServerName == "" || len(req.ServerName) > contract.MaxIDBytes || len(req.ToolName) > contract.MaxIDBytes:
		return fmt.Errorf("an elicitation needs its MCP server's name and tool name (at most %d bytes each)", contract.MaxIDBytes)
	case req.Mode != hooks.ElicitModeForm && req.Mode != hooks.ElicitModeURL:
		return fmt.Errorf("elicitation mode %q is neither %q nor %q", req.Mode, hooks.ElicitModeForm, hooks.ElicitModeURL)
	case req.Mode == hooks.ElicitModeURL && (req.URL == "" || len(req.URL) > maxElicitURLBytes):
		return fmt.Errorf("a URL elicitation needs a url of 1 to %d bytes", maxElicitURLBytes)
	case len(req.Message) > activities.MaxElicitationMessageBytes || len(schema) > activities.MaxElicitationSchemaBytes || len(req.ElicitationID) > contract.MaxIDBytes:
		return fmt.Errorf("an elicitation's message, schema or ID is over its bound (%d, %d and %d bytes)",
			activities.MaxElicitationMessageBytes, activities.MaxElicitationSchemaBytes, contract.MaxIDBytes)
	case s.cancelled:
		return fmt.Errorf("the run is canceling (%s): no question is asked", s.cancelReason)
	case s.endedCommands[req.CallID]:
		return fmt.Errorf("call %q has ended: its server's question comes too late", req.CallID)
	case s.findPending(elicitationID(req)) != nil:
		return fmt.Errorf("question %d of call %q was already asked", req.Seq, req.CallID)
	}
	// All the questions asked count, those hooks answered too.
	open, _ := s.questionsBy(ElicitationRequester)
	all := s.gov.elicitations
	switch {
	case open >= maxOpenElicitations:
		return fmt.Errorf("%d questions of MCP servers in this run are still unanswered: no more are asked until they are", open)
	case all >= maxElicitations:
		return fmt.Errorf("MCP servers asked this run %d questions already, its limit: further questions are cancelled", all)
	}
	return nil
}

// elicitationID is the pending permission's call_id.
func elicitationID(req activities.ElicitationRequest) string {
	return fmt.Sprintf("%s/elicitation/%d", req.CallID, req.Seq)
}

// elicit answers an MCP server's question: hooks, else a person; then the
// result hooks.
func (s *session) elicit(ctx workflow.Context, req activities.ElicitationRequest) (activities.ElicitationAnswer, error) {
	s.gov.elicitations++
	ev := hooks.ElicitationEvent{Session: s.hookSession(), CallID: req.CallID, ToolName: req.ToolName, ServerName: req.ServerName,
		Message: req.Message, Mode: req.Mode, RequestedSchema: req.RequestedSchema, URL: req.URL, ElicitationID: req.ElicitationID}
	answer, ok := s.elicitationHooks(ctx, activities.ElicitationHooksInput{Elicitation: &ev})
	if !ok {
		answer = s.askPerson(ctx, req)
	}
	result := hooks.ElicitationResultEvent{Session: s.hookSession(), CallID: req.CallID, ToolName: req.ToolName, ServerName: req.ServerName,
		Mode: req.Mode, ElicitationID: req.ElicitationID, Action: answer.Action, Content: answer.Content}
	if changed, ok := s.elicitationHooks(ctx, activities.ElicitationHooksInput{Result: &result, RequestedSchema: req.RequestedSchema}); ok {
		if changed.Action == hooks.ElicitAccept && changed.Content == nil && answer.Action == hooks.ElicitAccept {
			// An accept that names no content keeps the answer's.
			changed.Content = answer.Content
		}
		answer = changed
	}
	if answer.Action != hooks.ElicitAccept {
		answer.Content = nil
	}
	return answer, nil
}

// elicitationHooks runs an elicitation hook stage; ok is whether a hook
// answered.
func (s *session) elicitationHooks(ctx workflow.Context, in activities.ElicitationHooksInput) (activities.ElicitationAnswer, bool) {
	stage, event := activities.StageElicitation, "Elicitation"
	if in.Result != nil {
		stage, event = activities.StageElicitationResult, "ElicitationResult"
	}
	res, err := runRepeatable[activities.ElicitationHooksResult](ctx, s, stage, stageOptions(event+" hooks", hookStageTimeout), acts.RunElicitationHooks, in)
	if err != nil {
		s.addTrace(contract.Trace(stage, "hook_stage_error", fenixerr.FromTemporal(err).Message))
		return activities.ElicitationAnswer{}, false
	}
	s.addTrace(res.Trace)
	a := res.Summary.Answer
	if a == nil {
		return activities.ElicitationAnswer{}, false
	}
	return activities.ElicitationAnswer{Action: a.Action, Content: a.Content, DecidedBy: "hook:" + res.Summary.DecidedBy, Reason: a.Reason}, true
}

// askPerson parks the question beside the call until decide_permission,
// its deadline, a cancel or the call's end.
func (s *session) askPerson(ctx workflow.Context, req activities.ElicitationRequest) activities.ElicitationAnswer {
	args := map[string]any{"call_id": req.CallID, "mcp_server_name": req.ServerName, "message": req.Message, "mode": req.Mode}
	if req.RequestedSchema != nil {
		args["requested_schema"] = req.RequestedSchema
	}
	if req.URL != "" {
		args["url"] = req.URL
	}
	p := s.newQuestion(ctx, elicitationID(req), req.ToolName, "elicitation: "+req.ServerName, ElicitationRequester, args)
	s.park(p, req.CallID, "waiting_for_input")
	if s.gov.claudeHooks {
		// Claude Code's Notification hooks hear of its elicitation dialog.
		note := hooks.NotificationEvent{Session: s.hookSession(), NotificationType: hooks.NotificationElicitationDialog,
			Title: "Input needed", ToolName: req.ToolName, CallID: req.CallID,
			Message: fmt.Sprintf("MCP server %s asks: %s", req.ServerName, req.Message)}
		s.lifecycle(ctx, activities.LifecycleHooksInput{Notification: &note})
	}
	_, _ = workflow.AwaitWithTimeout(ctx, p.Deadline.Sub(workflow.Now(ctx)), s.questionOpen(p, req.CallID))
	s.settle(ctx, p, req.CallID, "withdrawn: the call ended before anyone answered", "no answer within %s")
	s.recordQuestion(ctx, p)
	decidedBy := p.decidedBy
	a := activities.ElicitationAnswer{Action: hooks.ElicitCancel, DecidedBy: decidedBy, Reason: p.decision.Reason}
	if decidedBy == "decide_permission" {
		a.DecidedBy = decider(p.decision)
		a.Action = hooks.ElicitDecline
		if p.decision.Decision == DecisionAllow {
			a.Action, a.Content = hooks.ElicitAccept, p.decision.Content
		}
	}
	return a
}

// checkElicitationAnswer is decide_permission's check of content: only an
// elicitation's allow carries it, bounded and matching the server's form.
func checkElicitationAnswer(p *PendingPermission, d PermissionDecision) error {
	if p.RequestedBy != ElicitationRequester {
		if d.Content != nil {
			return fmt.Errorf("decision on %q carries content, but only an MCP server's question (elicitation) takes an answer's content", d.CallID)
		}
		return nil
	}
	if d.Decision != DecisionAllow {
		if d.Content != nil {
			return fmt.Errorf("decision on %q declines but carries content: only an allow answers the form", d.CallID)
		}
		return nil
	}
	if raw, _ := json.Marshal(d.Content); len(raw) > activities.MaxElicitationSchemaBytes {
		return fmt.Errorf("the answer to %q is %d bytes, over the %d-byte limit", d.CallID, len(raw), activities.MaxElicitationSchemaBytes)
	}
	if p.Arguments["mode"] != hooks.ElicitModeForm {
		return nil
	}
	schema, _ := p.Arguments["requested_schema"].(map[string]any)
	server, _ := p.Arguments["mcp_server_name"].(string)
	return tools.CheckElicitationContent(server, schema, d.Content)
}
