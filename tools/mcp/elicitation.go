package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/tools"
)

// A server may ask the user for input in the middle of a tool call
// (MCP elicitation, "elicitation/create"). The protocol does not say
// which of a session's calls asked, so the worker answers through the
// call in flight on that session: with exactly one, its run is asked
// (tools.Env.Elicit); with none, or several (a question could reach the
// wrong run's person), the question is cancelled and the server goes on
// as its user had dismissed it.

// elicitCapabilities is what the worker offers: forms and URLs.
var elicitCapabilities = &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}

// inflightCall is a call the server's session is serving.
type inflightCall struct {
	ctx  context.Context
	env  *tools.Env
	tool string // the registry's name
	logs callLogs
}

// inflight holds a server's calls in flight.
type inflight struct {
	mu    sync.Mutex
	calls map[*inflightCall]bool
}

func (f *inflight) add(c *inflightCall) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[*inflightCall]bool{}
	}
	f.calls[c] = true
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.calls, c)
	}
}

// only returns the one call in flight, and how many there are.
func (f *inflight) only() (*inflightCall, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.calls {
		if len(f.calls) == 1 {
			return c, 1
		}
	}
	return nil, len(f.calls)
}

// elicit answers the server's question through the call that asked.
func (s *server) elicit(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	cancel := &sdk.ElicitResult{Action: "cancel"}
	call, n := s.inflight.only()
	switch {
	case n == 0:
		s.logger().Warn("MCP server asked for input outside of any call; cancelled", "message", req.Params.Message)
		return cancel, nil
	case n > 1:
		s.logger().Warn("MCP server asked for input while several calls were in flight to it; cancelled, as the question could reach another run's person",
			"calls", n, "message", req.Params.Message)
		return cancel, nil
	case call.env.Elicit == nil:
		s.logger().Warn("MCP server asked for input during a call with no run to ask; cancelled", "tool", call.tool)
		return cancel, nil
	}
	q := tools.Elicitation{ServerName: s.cfg.Name, ToolName: call.tool, Message: req.Params.Message, Mode: req.Params.Mode,
		URL: req.Params.URL, ElicitationID: req.Params.ElicitationID}
	if q.Mode == "" {
		q.Mode = "form"
		if q.URL != "" {
			q.Mode = "url"
		}
	}
	if req.Params.RequestedSchema != nil {
		raw, err := json.Marshal(req.Params.RequestedSchema)
		if err == nil {
			err = json.Unmarshal(raw, &q.RequestedSchema)
		}
		if err != nil {
			return nil, fmt.Errorf("MCP server %q asked with a requested schema that is not a JSON object: %v", s.cfg.Name, err)
		}
	}
	a, err := call.env.Elicit(call.ctx, q)
	if err != nil {
		s.logger().Warn("MCP server's question got no answer from the call's run; cancelled", "tool", call.tool, "error", err)
		return cancel, nil
	}
	return &sdk.ElicitResult{Action: a.Action, Content: a.Content}, nil
}
