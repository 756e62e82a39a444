package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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
func (m *Manager) resourceTools() map[string]tools.Definition {
	owner := func(map[string]any) string { return m.resourceID("") }
	list := tools.Define(tools.Spec{
		Name:           ListResourcesTool,
		Description:    "List the resources (documents, schemas, records) the connected MCP servers expose, with their URIs, for read_mcp_resource.",
		RegistryBacked: true,
		ReadOnly:       true,
		Timeout:        m.opts.CallTimeout,
		Heartbeat:      heartbeat,
		Owner:          owner,
	}, m.listResources, func(_ ListResourcesArgs, r ListResourcesResult) tools.Projection {
		return projectListing(r)
	})
	read := tools.Define(tools.Spec{
		Name:           ReadResourceTool,
		Description:    "Read a resource an MCP server exposes, by its server and URI (see list_mcp_resources).",
		RegistryBacked: true,
		ReadOnly:       true,
		Timeout:        m.opts.CallTimeout,
		Heartbeat:      heartbeat,
		Owner:          owner,
	}, m.readResource, func(a ReadResourceArgs, r CallResult) tools.Projection {
		p := projectCall(r)
		p.Metadata["uri"] = a.URI
		return p
	})
	return map[string]tools.Definition{ListResourcesTool: list, ReadResourceTool: read}
}

// resourceServers are the servers offering resources now, in order.
func (m *Manager) resourceServers() []*server {
	set := m.current()
	var out []*server
	for _, n := range set.order {
		if _, err := set.servers[n].resourceSession(); err == nil {
			out = append(out, set.servers[n])
		}
	}
	return out
}

// resourceSession is the server's session when it is connected and
// offers resources.
func (s *server) resourceSession() (*sdk.ClientSession, error) {
	s.mu.Lock()
	session, lastErr := s.session, s.lastError
	s.mu.Unlock()
	if session == nil {
		return nil, fenixerr.New(fenixerr.TypeToolUnavailable, "MCP server %q is not connected: %s; it is retried with backoff", s.cfg.Name, lastErr).WithCode("mcp_server_unavailable")
	}
	if init := session.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Resources == nil {
		return nil, fenixerr.Validation("MCP server %q offers no resources", s.cfg.Name).WithCode("mcp_no_resources")
	}
	return session, nil
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
	servers := m.resourceServers()
	if a.Server != "" {
		s, err := m.namedServer(ListResourcesTool, a.Server)
		if err != nil {
			return ListResourcesResult{}, err
		}
		if _, err := s.resourceSession(); err != nil {
			return ListResourcesResult{}, fenixerr.As(err).WithTool(ListResourcesTool)
		}
		servers = []*server{s}
	}
	out := ListResourcesResult{Resources: []ListedResource{}}
	budget := maxListedBytes
	for _, s := range servers {
		truncated, err := s.listResources(ctx, &out, &budget)
		if err == nil && !truncated {
			// A server without templates answers "method not found".
			truncated = s.listTemplates(ctx, &out, &budget)
		}
		if ctx.Err() != nil {
			return ListResourcesResult{}, ctx.Err()
		}
		if err != nil {
			if out.Failed == nil {
				out.Failed = map[string]string{}
			}
			out.Failed[s.cfg.Name] = err.Error()
		}
		if truncated {
			out.Truncated = true
			break
		}
	}
	out.Total = len(out.Resources)
	return out, nil
}

// listResources appends the server's resources to out within budget
// bytes, and says whether it stopped at a bound.
func (s *server) listResources(ctx context.Context, out *ListResourcesResult, budget *int) (truncated bool, err error) {
	session, err := s.resourceSession()
	if err != nil {
		return false, err
	}
	params := &sdk.ListResourcesParams{}
	for page := 0; ; page++ {
		if page == maxResourcePages {
			return true, nil
		}
		res, err := session.ListResources(ctx, params)
		if err != nil {
			return false, fmt.Errorf("resources/list: %w", err)
		}
		for _, r := range res.Resources {
			if r == nil {
				continue
			}
			item := ListedResource{Server: s.cfg.Name, URI: r.URI, Name: r.Name, Title: r.Title,
				Description: cut(r.Description, maxResourceDescription), MIMEType: r.MIMEType, Size: r.Size}
			size := len(item.Server) + len(item.URI) + len(item.Name) + len(item.Title) + len(item.Description) + len(item.MIMEType) + 96
			if size > *budget {
				return true, nil
			}
			*budget -= size
			out.Resources = append(out.Resources, item)
		}
		if res.NextCursor == "" {
			return false, nil
		}
		params = &sdk.ListResourcesParams{Cursor: res.NextCursor}
	}
}

// listTemplates appends the server's resource templates to out within
// budget bytes, and says whether it stopped at a bound. A server that
// cannot list them has none to show.
func (s *server) listTemplates(ctx context.Context, out *ListResourcesResult, budget *int) (truncated bool) {
	session, err := s.resourceSession()
	if err != nil {
		return false
	}
	params := &sdk.ListResourceTemplatesParams{}
	for page := 0; ; page++ {
		if page == maxResourcePages {
			return true
		}
		res, err := session.ListResourceTemplates(ctx, params)
		if err != nil {
			return false
		}
		for _, r := range res.ResourceTemplates {
			if r == nil {
				continue
			}
			item := ListedTemplate{Server: s.cfg.Name, URITemplate: r.URITemplate, Name: r.Name, Title: r.Title,
				Description: cut(r.Description, maxResourceDescription), MIMEType: r.MIMEType}
			size := len(item.Server) + len(item.URITemplate) + len(item.Name) + len(item.Title) + len(item.Description) + len(item.MIMEType) + 96
			if size > *budget {
				return true
			}
			*budget -= size
			out.Templates = append(out.Templates, item)
		}
		if res.NextCursor == "" {
			return false
		}
		params = &sdk.ListResourceTemplatesParams{Cursor: res.NextCursor}
	}
}

func (m *Manager) readResource(ctx context.Context, _ *tools.Env, a ReadResourceArgs) (CallResult, error) {
	s, err := m.namedServer(ReadResourceTool, a.Server)
	if err != nil {
		return CallResult{}, err
	}
	session, err := s.resourceSession()
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
				item.Copy, err = s.m.opts.Contexts.Put(ctx, []byte(c.Text))
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
	raw, _ := json.Marshal(r.Resources)
	content := string(raw)
	if r.Total == 0 {
		content = "No MCP server on this worker exposes resources."
	}
	if r.Truncated {
		content += fmt.Sprintf("\n[the listing stops at %d resources; name a server to list its own]", r.Total)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Failed)) {
		content += fmt.Sprintf("\n[MCP server %q could not be listed: %s]", name, r.Failed[name])
	}
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
