package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

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
	methodListResources         = "resources/list"
	methodListResourceTemplates = "resources/templates/list"
	methodReadResource          = "resources/read"
)

// resourceMethods answers the resource and prompt methods (prompts.go);
// every other method goes on to the SDK, which hands completion/complete
// to complete (completion.go) and resources/subscribe and unsubscribe to
// subscriptions.go. A list request may come without params; a read, a
// get, a completion or a subscription without them is refused. A panic in
// answering one request is that request's internal error: the SDK would
// let it end the gateway, and every session with it.
func (g *Gateway) resourceMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (result mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				g.cfg.Logger.Error("mcp gateway: answering a request panicked", "method", method, "panic", p)
				result, err = nil, internalError("%s failed: %v", method, p)
			}
		}()
		defer func() {
			if err == nil {
				result = settled(req, result)
			}
		}()
		missing := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: %s needs params", method)}
		switch r := req.(type) {
		case *mcp.ListResourcesRequest:
			if method == methodListResources {
				if r.Params == nil {
					r.Params = &mcp.ListResourcesParams{}
				}
				return g.listResources(ctx, r)
			}
		case *mcp.ListResourceTemplatesRequest:
			if method == methodListResourceTemplates {
				if r.Params == nil {
					r.Params = &mcp.ListResourceTemplatesParams{}
				}
				return g.listResourceTemplates(ctx, r)
			}
		case *mcp.ReadResourceRequest:
			if method == methodReadResource {
				if r.Params == nil {
					return nil, missing
				}
				return g.readResource(ctx, r)
			}
		case *mcp.ListPromptsRequest:
			if method == methodListPrompts {
				if r.Params == nil {
					r.Params = &mcp.ListPromptsParams{}
				}
				return g.listPrompts(ctx, r)
			}
		case *mcp.GetPromptRequest:
			if method == methodGetPrompt {
				if r.Params == nil {
					return nil, missing
				}
				return g.getPrompt(ctx, r)
			}
		case *mcp.CompleteRequest:
			if r.Params == nil {
				return nil, missing
			}
		case *mcp.SubscribeRequest:
			if r.Params == nil {
				return nil, missing
			}
		case *mcp.UnsubscribeRequest:
			if r.Params == nil {
				return nil, missing
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

// resourceHost is a server's resource template as the gateway matches
// URIs against it.
type resourceHost struct {
	server, uriTemplate string
	template            *regexp.Regexp
}

// listing runs list_mcp_resources for a client's request and remembers
// which server lists which URI and template. Nil, nil when no worker
// serves resources (or -allow leaves them out).
func (g *Gateway) listing(ctx context.Context, session *mcp.ServerSession, extra *mcp.RequestExtra, meta mcp.Meta) (*resourceListing, error) {
	res, err := g.resourceTool(ctx, session, extra, meta, mcptools.ListResourcesTool, map[string]any{})
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return nil, nil
	case res.IsError:
		return nil, refused("listing the MCP servers' resources", res)
	}
	l, err := decodeListing(res)
	if err != nil {
		return nil, internalError("the workers' resource listing does not decode: %v", err)
	}
	hosts := map[string][]string{}
	for _, r := range l.Resources {
		if !slices.Contains(hosts[r.URI], r.Server) {
			hosts[r.URI] = append(hosts[r.URI], r.Server)
		}
	}
	var templates []resourceHost
	for _, t := range l.Templates {
		tmpl, err := uritemplate.New(t.URITemplate)
		if err != nil {
			g.cfg.Logger.Warn("mcp gateway: a resource template does not parse; reads through it need the server named by a listing", "server", t.Server, "template", t.URITemplate, "error", err)
			continue
		}
		templates = append(templates, resourceHost{server: t.Server, uriTemplate: t.URITemplate, template: tmpl.Regexp()})
	}
	g.mu.Lock()
	g.resourceHosts, g.templateHosts = hosts, templates
	g.mu.Unlock()
	return l, nil
}

// resourceListing is list_mcp_resources' answer as the gateway reads it.
type resourceListing struct {
	Resources []mcptools.ListedResource
	Templates []mcptools.ListedTemplate
}

// decodeListing reads list_mcp_resources' result: the listing is its
// narrative's JSON (then notes: where it stopped, what could not be
// listed), the templates are in its data.
func decodeListing(res *mcp.CallToolResult) (*resourceListing, error) {
	l := &resourceListing{}
	data, _ := res.StructuredContent.(map[string]any)
	if raw, ok := data[mcptools.MetaResourceTemplates]; ok {
		encoded, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(encoded, &l.Templates)
		}
		if err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
	}
	if data["total"] == float64(0) {
		return l, nil
	}
	if err := json.NewDecoder(strings.NewReader(textOf(res))).Decode(&l.Resources); err != nil {
		return nil, err
	}
	return l, nil
}

func (g *Gateway) listResources(ctx context.Context, r *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	l, err := g.listing(ctx, r.Session, r.Extra, r.Params.GetMeta())
	if err != nil || l == nil {
		return out, err
	}
	for _, res := range l.Resources {
		out.Resources = append(out.Resources, &mcp.Resource{URI: res.URI, Name: res.Name, Title: res.Title, Description: res.Description, MIMEType: res.MIMEType, Size: res.Size})
	}
	return out, nil
}

func (g *Gateway) listResourceTemplates(ctx context.Context, r *mcp.ListResourceTemplatesRequest) (*mcp.ListResourceTemplatesResult, error) {
	out := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}
	l, err := g.listing(ctx, r.Session, r.Extra, r.Params.GetMeta())
	if err != nil || l == nil {
		return out, err
	}
	for _, t := range l.Templates {
		out.ResourceTemplates = append(out.ResourceTemplates, &mcp.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
	}
	return out, nil
}

// serverOf is the MCP server a client's URI belongs to: the one whose
// listing holds it, else the one whose template matches it (listing first
// when none does yet), else the only server that lists any.
func (g *Gateway) serverOf(ctx context.Context, session *mcp.ServerSession, extra *mcp.RequestExtra, uri string) (string, error) {
	lookup := func() (servers, all []string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		add := func(list *[]string, s string) {
			if !slices.Contains(*list, s) {
				*list = append(*list, s)
			}
		}
		for _, listed := range g.resourceHosts {
			for _, s := range listed {
				add(&all, s)
			}
		}
		for _, t := range g.templateHosts {
			add(&all, t.server)
		}
		if listed := g.resourceHosts[uri]; len(listed) > 0 {
			return slices.Clone(listed), all
		}
		for _, t := range g.templateHosts {
			if t.template.MatchString(uri) {
				add(&servers, t.server)
			}
		}
		return servers, all
	}
	servers, all := lookup()
	if len(servers) == 0 {
		if _, err := g.listing(ctx, session, extra, nil); err != nil {
			return "", err
		}
		servers, all = lookup()
	}
	switch {
	case len(servers) == 1:
		return servers[0], nil
	case len(servers) > 1:
		slices.Sort(servers)
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: resource %q belongs to MCP servers %s behind Fenix: it cannot tell which one is meant", uri, strings.Join(servers, " and "))}
	case len(all) == 1:
		// A URI of a template the server does not list.
		return all[0], nil
	}
	return "", mcp.ResourceNotFoundError(uri)
}

func (g *Gateway) readResource(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := r.Params.URI
	server, err := g.serverOf(ctx, r.Session, r.Extra, uri)
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
