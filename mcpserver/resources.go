package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/tools"
	mcptools "github.com/fenixrt/fenix/tools/mcp"
)

// The resources of the MCP servers behind Fenix reach the gateway's
// clients through the workers' resource tools: a resources/list runs
// list_mcp_resources and a resources/read runs read_mcp_resource, each an
// ExecuteAssignment run like a tools/call, so the hooks, permission
// rules, approvals and audit that govern an agent's reads govern a
// client's too.
const (
	methodListResources = "resources/list"
	methodReadResource  = "resources/read"
)

// resourceMethods answers resources/list and resources/read; every other
// method goes on to the SDK.
func (g *Gateway) resourceMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListResourcesRequest:
			if method == methodListResources {
				return g.listResources(ctx, r)
			}
		case *mcp.ReadResourceRequest:
			if method == methodReadResource {
				return g.readResource(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

// resourceTool runs one of the workers' resource tools for a client's
// request, as a tools/call of it would run: the client's session, its
// conversation, its request ID (so its cancellation reaches the run) and
// its progress token.
func (g *Gateway) resourceTool(ctx context.Context, session *mcp.ServerSession, extra *mcp.RequestExtra, meta mcp.Meta, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	d, ok := g.descriptor(tool)
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, internalError("encode the arguments of %s: %v", tool, err)
	}
	return g.call(ctx, d, &mcp.CallToolRequest{Session: session, Extra: extra, Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: raw, Meta: meta}})
}

// refused is a run that ended without the answer: denied by a hook or a
// rule, failed, canceled. Its text is the pipeline's reason.
func refused(what string, res *mcp.CallToolResult) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcp gateway: %s: %s", what, textOf(res))}
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (g *Gateway) listResources(ctx context.Context, r *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	res, err := g.resourceTool(ctx, r.Session, r.Extra, r.Params.GetMeta(), mcptools.ListResourcesTool, map[string]any{})
	switch {
	case err != nil:
		return nil, err
	case res == nil: // no worker serves resources, or -allow leaves them out
		return out, nil
	case res.IsError:
		return nil, refused("listing the MCP servers' resources", res)
	}
	listed, err := listedResources(res)
	if err != nil {
		return nil, internalError("the workers' resource listing does not decode: %v", err)
	}
	hosts := map[string][]string{}
	for _, l := range listed {
		out.Resources = append(out.Resources, &mcp.Resource{URI: l.URI, Name: l.Name, Title: l.Title, Description: l.Description, MIMEType: l.MIMEType, Size: l.Size})
		if !slices.Contains(hosts[l.URI], l.Server) {
			hosts[l.URI] = append(hosts[l.URI], l.Server)
		}
	}
	g.mu.Lock()
	g.resourceHosts = hosts
	g.mu.Unlock()
	return out, nil
}

// listedResources reads list_mcp_resources' narrative: the listing as
// JSON, then its notes (where it stopped, what could not be listed).
func listedResources(res *mcp.CallToolResult) ([]mcptools.ListedResource, error) {
	var listed []mcptools.ListedResource
	text := textOf(res)
	if data, _ := res.StructuredContent.(map[string]any); data != nil && data["total"] == float64(0) {
		return nil, nil
	}
	if err := json.NewDecoder(strings.NewReader(text)).Decode(&listed); err != nil {
		return nil, err
	}
	return listed, nil
}

// serverOf is the MCP server a client's URI belongs to: the one whose
// listing holds it (listing first when none does yet), or the only server
// that lists any.
func (g *Gateway) serverOf(ctx context.Context, r *mcp.ReadResourceRequest) (string, error) {
	uri := r.Params.URI
	lookup := func() ([]string, []string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		var all []string
		for _, servers := range g.resourceHosts {
			for _, s := range servers {
				if !slices.Contains(all, s) {
					all = append(all, s)
				}
			}
		}
		return g.resourceHosts[uri], all
	}
	servers, all := lookup()
	if len(servers) == 0 {
		if _, err := g.listResources(ctx, &mcp.ListResourcesRequest{Session: r.Session, Extra: r.Extra, Params: &mcp.ListResourcesParams{}}); err != nil {
			return "", err
		}
		servers, all = lookup()
	}
	switch {
	case len(servers) == 1:
		return servers[0], nil
	case len(servers) > 1:
		slices.Sort(servers)
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: resource %q is listed by MCP servers %s behind Fenix: it cannot tell which one is meant", uri, strings.Join(servers, " and "))}
	case len(all) == 1:
		// A templated URI (demo://item/42) is in no listing.
		return all[0], nil
	}
	return "", mcp.ResourceNotFoundError(uri)
}

func (g *Gateway) readResource(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := r.Params.URI
	server, err := g.serverOf(ctx, r)
	if err != nil {
		return nil, err
	}
	res, err := g.resourceTool(ctx, r.Session, r.Extra, r.Params.GetMeta(), mcptools.ReadResourceTool, map[string]any{"server": server, "uri": uri})
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return nil, mcp.ResourceNotFoundError(uri)
	case res.IsError && res.Meta[MetaErrorCode] == mcptools.CodeResourceNotFound:
		return nil, mcp.ResourceNotFoundError(uri)
	case res.IsError:
		return nil, refused(fmt.Sprintf("reading resource %q of MCP server %q", uri, server), res)
	}
	out := &mcp.ReadResourceResult{}
	var unsent []string
	for _, c := range res.Content[1:] {
		switch v := c.(type) {
		case *mcp.EmbeddedResource:
			out.Contents = append(out.Contents, v.Resource)
		case *mcp.TextContent:
			unsent = append(unsent, v.Text)
		}
	}
	switch {
	case len(unsent) > 0:
		return nil, internalError("resource %q of MCP server %q was read, but not all of it can be sent: %s", uri, server, strings.Join(unsent, " "))
	case len(out.Contents) == 0:
		// A worker without a context store keeps no contents apart: its
		// narrative is what there is.
		out.Contents = []*mcp.ResourceContents{{URI: uri, Text: textOf(res)}}
	}
	return out, nil
}

// descriptor is the served catalog's descriptor of name.
func (g *Gateway) descriptor(name string) (tools.Descriptor, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	d, ok := g.catalog[name]
	return d, ok
}
