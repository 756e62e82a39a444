package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// Claude Code gives its agent two tools for the resources MCP servers
// expose (ListMcpResourcesTool, ReadMcpResourceTool) once a connected
// server offers resources. Fenix serves the same two, governed as every
// tool is (hooks and permission rules match them by either name) and
// pinned to this host, whose servers they read.
const (
	ListResourcesTool = "list_mcp_resources"
	ReadResourceTool  = "read_mcp_resource"
)

// MetaResourceTemplates is the listing's metadata key of the servers'
// resource templates ([]ListedTemplate).
const MetaResourceTemplates = "resource_templates"

// CodeResourceNotFound is the error code of a read whose server says it
// has no such resource, which the MCP gateway answers as "not found".
const CodeResourceNotFound = "resource_not_found"

// codeResourceNotFound20250618 is the JSON-RPC code of "resource not
// found" before SEP-2164 made it -32602 (invalid params, the only
// param of a read being its URI):
// servers on older SDKs still send it.
const codeResourceNotFound20250618 = -32002

// Bounds of what the resource tools bring into a result.
const (
	// maxResourcePages bounds the resources/list pages read per server.
	maxResourcePages = 20
	// maxListedBytes bounds the listing (descriptions cut first).
	maxListedBytes = 128 << 10
	// maxResourceDescription bounds one resource's description.
	maxResourceDescription = 1024
	// maxResourceContents bounds the contents of one resources/read.
	maxResourceContents = 64
)

// ListResourcesArgs are list_mcp_resources' arguments.
type ListResourcesArgs struct {
	Server string `json:"server,omitempty" jsonschema:"maxLength=200,description=Only the resources of this MCP server (its name in .mcp.json); all servers when empty"`
}

// ListedResource is one resource a server exposes.
type ListedResource struct {
	Server      string `json:"server"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// ListedTemplate is one resource template a server exposes: the URIs it
// reads beyond those it lists (RFC 6570, docs://item/{id}).
type ListedTemplate struct {
	Server      string `json:"server"`
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// ListResourcesResult is list_mcp_resources' raw result.
type ListResourcesResult struct {
	Resources []ListedResource `json:"resources"`
	// Templates are the servers' resource templates, for the MCP gateway's
	// resources/templates/list (Claude Code's tool shows its model none).
	Templates []ListedTemplate `json:"templates,omitempty"`
	// Truncated is set when the listing was cut to its bound (pages or
	// bytes); Total counts what is listed.
	Truncated bool `json:"truncated,omitempty"`
	Total     int  `json:"total"`
	// Failed names, by server, why a server offering resources could not
	// be listed (the others still are).
	Failed map[string]string `json:"failed,omitempty"`
}

// ReadResourceArgs are read_mcp_resource's arguments.
type ReadResourceArgs struct {
	Server string `json:"server" jsonschema:"minLength=1,maxLength=200,description=The MCP server (its name in .mcp.json) that exposes the resource"`
	URI    string `json:"uri" jsonschema:"minLength=1,maxLength=8192,description=The resource's URI as list_mcp_resources gives it"`
}

// resourceTools are the Manager's two resource tools.
func (m *Manager) resourceTools() []tools.Definition {
	list := tools.Define(m.toolSpec(ListResourcesTool,
		"List the resources (documents, schemas, records) the connected MCP servers expose, with their URIs, for read_mcp_resource."),
		m.listResources, func(_ ListResourcesArgs, r ListResourcesResult) tools.Projection {
			return projectListing(r)
		})
	read := tools.Define(m.toolSpec(ReadResourceTool,
		"Read a resource an MCP server exposes, by its server and URI (see list_mcp_resources)."),
		m.readResource, func(a ReadResourceArgs, r CallResult) tools.Projection {
			p := projectCall(r)
			p.Metadata["uri"] = a.URI
			return p
		})
	return []tools.Definition{list, read}
}

// namedServer is the configured server called name.
func (m *Manager) namedServer(tool, name string) (*server, error) {
	set := m.current()
	if s, ok := set.servers[NormalizeName(name)]; ok {
		return s, nil
	}
	return nil, fenixerr.Validation("%s: no MCP server %q on this worker (servers: %s)", tool, name, strings.Join(set.order, ", ")).WithTool(tool).WithCode("unknown_mcp_server")
}

func (m *Manager) listResources(ctx context.Context, _ *tools.Env, a ListResourcesArgs) (ListResourcesResult, error) {
	out := ListResourcesResult{Resources: []ListedResource{}}
	budget := maxListedBytes
	failed, truncated, err := m.listFrom(ctx, ListResourcesTool, a.Server, resourcesFeature, func(s *server) (bool, error) {
		truncated, err := s.listResources(ctx, &out, &budget)
		if err == nil && !truncated {
			// A server without templates answers "method not found".
			truncated = s.listTemplates(ctx, &out, &budget)
		}
		return truncated, err
	})
	if err != nil {
		return ListResourcesResult{}, err
	}
	out.Failed, out.Truncated, out.Total = failed, truncated, len(out.Resources)
	return out, nil
}

// listResources appends the server's resources to out within budget
// bytes, and says whether it stopped at a bound.
func (s *server) listResources(ctx context.Context, out *ListResourcesResult, budget *int) (truncated bool, err error) {
	session, err := s.sessionFor(resourcesFeature)
	if err != nil {
		return false, err
	}
	return pages(func(cursor string) (string, bool, error) {
		res, err := session.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return "", false, fmt.Errorf("resources/list: %w", err)
		}
		for _, r := range res.Resources {
			if r == nil {
				continue
			}
			item := ListedResource{Server: s.cfg.Name, URI: r.URI, Name: r.Name, Title: r.Title,
				Description: cut(r.Description, maxResourceDescription), MIMEType: r.MIMEType, Size: r.Size}
			if !spend(budget, len(item.Server)+len(item.URI)+len(item.Name)+len(item.Title)+len(item.Description)+len(item.MIMEType)+96) {
				return "", true, nil
			}
			out.Resources = append(out.Resources, item)
		}
		return res.NextCursor, false, nil
	})
}

// listTemplates appends the server's resource templates to out within
// budget bytes, and says whether it stopped at a bound. A server that
// cannot list them has none to show.
func (s *server) listTemplates(ctx context.Context, out *ListResourcesResult, budget *int) (truncated bool) {
	session, err := s.sessionFor(resourcesFeature)
	if err != nil {
		return false
	}
	truncated, _ = pages(func(cursor string) (string, bool, error) {
		res, err := session.ListResourceTemplates(ctx, &sdk.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return "", false, err
		}
		for _, r := range res.ResourceTemplates {
			if r == nil {
				continue
			}
			item := ListedTemplate{Server: s.cfg.Name, URITemplate: r.URITemplate, Name: r.Name, Title: r.Title,
				Description: cut(r.Description, maxResourceDescription), MIMEType: r.MIMEType}
			if !spend(budget, len(item.Server)+len(item.URITemplate)+len(item.Name)+len(item.Title)+len(item.Description)+len(item.MIMEType)+96) {
				return "", true, nil
			}
			out.Templates = append(out.Templates, item)
		}
		return res.NextCursor, false, nil
	})
	return truncated
}

func (m *Manager) readResource(ctx context.Context, _ *tools.Env, a ReadResourceArgs) (CallResult, error) {
	s, err := m.namedServer(ReadResourceTool, a.Server)
	if err != nil {
		return CallResult{}, err
	}
	session, err := s.sessionFor(resourcesFeature)
	if err != nil {
		return CallResult{}, fenixerr.As(err).WithTool(ReadResourceTool)
	}
	res, err := session.ReadResource(ctx, &sdk.ReadResourceParams{URI: a.URI})
	if ctx.Err() != nil {
		return CallResult{}, ctx.Err()
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && (wire.Code == jsonrpc.CodeInvalidParams || wire.Code == codeResourceNotFound20250618) {
		return CallResult{}, fenixerr.Runtime("MCP server %q has no resource %q: %v", s.cfg.Name, a.URI, err).WithTool(ReadResourceTool).WithCode(CodeResourceNotFound)
	}
	if err != nil {
		return CallResult{}, fenixerr.Runtime("MCP server %q failed resources/read %q: %v", s.cfg.Name, a.URI, err).WithTool(ReadResourceTool).WithCode("mcp_call_failed")
	}
	out := CallResult{Server: s.cfg.Name, Tool: "resources/read", Content: []Content{}}
	for i, c := range res.Contents {
		if c == nil {
			continue
		}
		if i == maxResourceContents {
			out.Content = append(out.Content, Content{Type: "text", Text: fmt.Sprintf("[%d more contents of %s left out]", len(res.Contents)-i, a.URI)})
			break
		}
		item := Content{Type: "resource", URI: c.URI, MIMEType: c.MIMEType}
		if c.Blob != nil {
			item, err = binaryItem(ctx, s.m.opts, item, c.Blob)
		} else {
			item, err = textItem(ctx, s.m.opts, item, c.Text)
			if err == nil && item.Ref == "" && c.Text != "" && s.m.opts.Contexts != nil {
				// The narrative joins the texts; the gateway's resources/read
				// answers with each content apart.
				clean, _ := s.m.opts.Redactor.String(c.Text)
				item.Copy, err = s.m.opts.Contexts.Put(ctx, []byte(clean))
			}
		}
		if err != nil {
			return CallResult{}, fenixerr.As(err).WithTool(ReadResourceTool)
		}
		out.Content = append(out.Content, item)
	}
	return out, nil
}

// projectListing shows the model the listing as JSON, as Claude Code's
// tool does, with what could not be listed.
func projectListing(r ListResourcesResult) tools.Projection {
	content := listingNarrative(r.Resources, r.Total, r.Truncated, r.Failed, "No MCP server on this worker exposes resources.", "resources")
	servers := map[string]bool{}
	for _, res := range r.Resources {
		servers[res.Server] = true
	}
	meta := map[string]any{"total": r.Total, "servers": len(servers), "truncated": r.Truncated}
	if len(r.Templates) > 0 {
		meta[MetaResourceTemplates] = r.Templates
	}
	return tools.Projection{Content: content, Metadata: meta}
}
