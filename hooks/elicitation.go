package hooks

import "context"

// An MCP server may ask the user for input in the middle of one of its
// tool calls (MCP elicitation, "elicitation/create"): a form whose fields
// a JSON schema describes, or a URL to visit. Fenix's worker puts the
// question to the call's run, which asks its Elicitation hooks first (as
// Claude Code does: a hook may answer for the user), then a person through
// the run's inbox, and shows the answer to its ElicitationResult hooks
// before it goes back to the server.

// The elicitation events.
const (
	// EventElicitation fires when an MCP server asks for input during a
	// call; a hook may answer in the user's place.
	EventElicitation Event = "elicitation"
	// EventElicitationResult fires with the answer, before the server
	// gets it; a hook may change or refuse it.
	EventElicitationResult Event = "elicitation_result"
)

// Elicitation actions, the MCP words.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// Elicitation modes.
const (
	ElicitModeForm = "form"
	ElicitModeURL  = "url"
)

// ElicitationEvent is an MCP server's question.
type ElicitationEvent struct {
	Session
	// CallID and ToolName are the call the server asked during
	// (ToolName is the registry's, mcp__<server>__<tool>).
	CallID     string `json:"call_id"`
	ToolName   string `json:"tool_name"`
	ServerName string `json:"mcp_server_name"`
	Message    string `json:"message"`
	// Mode is ElicitModeForm or ElicitModeURL.
	Mode            string         `json:"mode"`
	RequestedSchema map[string]any `json:"requested_schema,omitempty"`
	URL             string         `json:"url,omitempty"`
	ElicitationID   string         `json:"elicitation_id,omitempty"`
}

// ElicitationResultEvent is the answer about to go back to the server.
type ElicitationResultEvent struct {
	Session
	CallID        string `json:"call_id"`
	ToolName      string `json:"tool_name"`
	ServerName    string `json:"mcp_server_name"`
	Mode          string `json:"mode"`
	ElicitationID string `json:"elicitation_id,omitempty"`
	// Action is ElicitAccept, ElicitDecline or ElicitCancel; Content is
	// the accepted form's values.
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// ElicitationAction is a hook's answer: an empty Action has no opinion
// (the question goes on to a person; the answer stands).
type ElicitationAction struct {
	Action  string         `json:"action,omitempty"`
	Content map[string]any `json:"content,omitempty"`
	Reason  string         `json:"reason,omitempty"`
}

// ElicitationHook is implemented by hooks that answer MCP servers'
// questions; the registry asks only them.
type ElicitationHook interface {
	Elicitation(ctx context.Context, ev ElicitationEvent) (ElicitationAction, error)
	ElicitationResult(ctx context.Context, ev ElicitationResultEvent) (ElicitationAction, error)
}

// ElicitationSummary is what the hooks of an elicitation event decided.
type ElicitationSummary struct {
	Event Event `json:"event"`
	// Answer is the hooks' answer, nil when none had an opinion.
	Answer *ElicitationAction `json:"answer,omitempty"`
	// DecidedBy names the hook whose answer stands.
	DecidedBy string         `json:"decided_by,omitempty"`
	Decisions []HookDecision `json:"decisions"`
}

// RunElicitation asks the hooks whether to answer the server in the
// user's place. A decline or a cancel from any hook wins over an accept,
// as the more careful answer; among equals the first hook's stands.
func (r *Registry) RunElicitation(ctx context.Context, ev ElicitationEvent) ElicitationSummary {
	return runElicitationHooks(r, EventElicitation, ev, func(h ElicitationHook) (ElicitationAction, error) {
		hookEv := ev
		hookEv.RequestedSchema = CloneArgs(ev.RequestedSchema)
		return h.Elicitation(ctx, hookEv)
	})
}

// RunElicitationResult shows the hooks the answer; the summary's Answer
// replaces it when some hook changed it (by the rule of RunElicitation).
func (r *Registry) RunElicitationResult(ctx context.Context, ev ElicitationResultEvent) ElicitationSummary {
	return runElicitationHooks(r, EventElicitationResult, ev, func(h ElicitationHook) (ElicitationAction, error) {
		hookEv := ev
		hookEv.Content = CloneArgs(ev.Content)
		return h.ElicitationResult(ctx, hookEv)
	})
}

func runElicitationHooks(r *Registry, ev Event, payload any, ask func(ElicitationHook) (ElicitationAction, error)) ElicitationSummary {
	res := ElicitationSummary{Event: ev, Decisions: []HookDecision{}}
	subs, run := runHooks(r, ev, payload, func(e entry) func() (ElicitationAction, error) {
		h, ok := e.hook.(ElicitationHook)
		if !ok {
			return func() (ElicitationAction, error) { return ElicitationAction{}, nil }
		}
		return func() (ElicitationAction, error) { return ask(h) }
	}, func(entry, any) ElicitationAction {
		// A panicking hook refuses rather than answers for the user.
		return ElicitationAction{Action: ElicitDecline, Reason: "the hook panicked"}
	})
	for i, e := range subs {
		action, d := run.get(i)
		if _, ok := e.hook.(ElicitationHook); !ok {
			continue // asked nothing: not in the decisions
		}
		d.Kind = KindRan
		switch action.Action {
		case "":
		case ElicitAccept, ElicitDecline, ElicitCancel:
			d.Reason = action.Action
			if action.Reason != "" {
				d.Reason += ": " + action.Reason
			}
			if res.Answer == nil || (res.Answer.Action == ElicitAccept && action.Action != ElicitAccept) {
				a := action
				a.Content = CloneArgs(action.Content)
				res.Answer, res.DecidedBy = &a, e.name
			}
		default:
			d.Error = joinErr(d.Error, "hook returned unknown elicitation action "+action.Action)
		}
		res.Decisions = append(res.Decisions, d)
	}
	return res
}
