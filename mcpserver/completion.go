package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcptools "github.com/fenixrt/fenix/tools/mcp"
)

const methodComplete = "completion/complete"

// completion/complete (the values a client suggests while its user fills
// in a prompt's argument or a resource template's variable) runs the
// workers' complete_mcp_argument, a governed run as a resources/read is,
// with the server that offers the prompt or the template. Where no
// worker serves it (no server behind Fenix offers completions, or -allow
// leaves it out) the answer is no suggestion, which the protocol allows.
func (g *Gateway) complete(ctx context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	none := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if _, ok := g.descriptor(mcptools.CompleteArgumentTool); !ok {
		return none, nil
	}
	ref := r.Params.Ref
	args := map[string]any{"argument": r.Params.Argument.Name, "value": r.Params.Argument.Value}
	if c := r.Params.Context; c != nil && len(c.Arguments) > 0 {
		args["context"] = c.Arguments
	}
	switch ref.Type {
	case "ref/prompt":
		host, err := g.promptHost(ctx, r.Session, r.Extra, ref.Name)
		if err != nil {
			return nil, err
		}
		args["server"], args["prompt"] = host.server, host.name
	case "ref/resource":
		server, err := g.templateServer(ctx, r.Session, r.Extra, ref.URI)
		if err != nil {
			return nil, err
		}
		args["server"], args["uri_template"] = server, ref.URI
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: a completion's ref is ref/prompt or ref/resource, not %q", ref.Type)}
	}
	res, err := g.resourceTool(ctx, r.Session, r.Extra, r.Params.GetMeta(), mcptools.CompleteArgumentTool, args)
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return none, nil
	case res.IsError && slices.Contains([]any{mcptools.CodeCompletionRefused, "validation_error"}, res.Meta[MetaErrorCode]):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcp gateway: " + textOf(res)}
	case res.IsError:
		return nil, refused(fmt.Sprintf("completing argument %q", r.Params.Argument.Name), res)
	}
	data, _ := res.StructuredContent.(map[string]any)
	values, _ := data[mcptools.MetaCompletionValues].([]any)
	out := none
	for _, v := range values {
		if s, ok := v.(string); ok {
			out.Completion.Values = append(out.Completion.Values, s)
		}
	}
	out.Completion.HasMore, _ = data["has_more"].(bool)
	if total, ok := data["total"].(float64); ok {
		out.Completion.Total = int(total)
	}
	return out, nil
}

// promptHost is the server and name a served prompt name stands for,
// listing the prompts when the last listing does not know it.
func (g *Gateway) promptHost(ctx context.Context, session *mcp.ServerSession, extra *mcp.RequestExtra, name string) (promptHost, error) {
	lookup := func() (promptHost, bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		h, ok := g.promptHosts[name]
		return h, ok
	}
	if host, ok := lookup(); ok {
		return host, nil
	}
	if _, err := g.promptListing(ctx, session, extra, nil); err != nil {
		return promptHost{}, err
	}
	if host, ok := lookup(); ok {
		return host, nil
	}
	return promptHost{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: no MCP server behind Fenix offers prompt %q", name)}
}

// templateServer is the server that lists the resource template uri,
// listing the resources when the last listing does not hold it.
func (g *Gateway) templateServer(ctx context.Context, session *mcp.ServerSession, extra *mcp.RequestExtra, uri string) (string, error) {
	lookup := func() []string {
		g.mu.Lock()
		defer g.mu.Unlock()
		var servers []string
		for _, t := range g.templateHosts {
			if t.uriTemplate == uri && !slices.Contains(servers, t.server) {
				servers = append(servers, t.server)
			}
		}
		return servers
	}
	servers := lookup()
	if len(servers) == 0 {
		if _, err := g.listing(ctx, session, extra, nil); err != nil {
			return "", err
		}
		servers = lookup()
	}
	switch len(servers) {
	case 0:
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: no MCP server behind Fenix lists resource template %q", uri)}
	case 1:
		return servers[0], nil
	}
	slices.Sort(servers)
	return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: resource template %q belongs to MCP servers %s behind Fenix: it cannot tell which one is meant", uri, strings.Join(servers, " and "))}
}
