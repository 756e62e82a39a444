package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcptools "github.com/fenixrt/fenix/tools/mcp"
)

// The prompts of the MCP servers behind Fenix reach the gateway's clients
// as the resources do (resources.go): prompts/list runs the workers'
// list_mcp_prompts and prompts/get runs get_mcp_prompt, governed runs
// both. A prompt is served under its own name, or as
// mcp__<server>__<name> where two servers offer the same name.
const (
	methodListPrompts = "prompts/list"
	methodGetPrompt   = "prompts/get"
)

// promptHost is the server and name a served prompt name stands for.
type promptHost struct{ server, name string }

// promptNames are the names the listing's prompts are served under.
func promptNames(listed []mcptools.ListedPrompt) []string {
	offered := map[string]int{}
	for _, p := range listed {
		offered[p.Name]++
	}
	names := make([]string, len(listed))
	for i, p := range listed {
		names[i] = p.Name
		if offered[p.Name] > 1 {
			names[i] = mcptools.ToolName(p.Server, p.Name)
		}
	}
	return names
}

func (g *Gateway) listPrompts(ctx context.Context, r *mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	out := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
	listed, err := g.promptListing(ctx, r.Session, r.Extra, r.Params.GetMeta())
	if err != nil {
		return nil, err
	}
	for i, name := range promptNames(listed) {
		p := listed[i]
		served := &mcp.Prompt{Name: name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			served.Arguments = append(served.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		out.Prompts = append(out.Prompts, served)
	}
	return out, nil
}

// promptListing runs list_mcp_prompts for a client's request and
// remembers which served name is which server's prompt.
func (g *Gateway) promptListing(ctx context.Context, session *mcp.ServerSession, extra *mcp.RequestExtra, meta mcp.Meta) ([]mcptools.ListedPrompt, error) {
	res, err := g.resourceTool(ctx, session, extra, meta, mcptools.ListPromptsTool, map[string]any{})
	switch {
	case err != nil:
		return nil, err
	case res == nil: // no worker serves prompts, or -allow leaves them out
		return nil, nil
	case res.IsError:
		return nil, refused("listing the MCP servers' prompts", res)
	}
	var listed []mcptools.ListedPrompt
	if data, _ := res.StructuredContent.(map[string]any); data["total"] != float64(0) {
		if err := json.NewDecoder(strings.NewReader(textOf(res))).Decode(&listed); err != nil {
			return nil, internalError("the workers' prompt listing does not decode: %v", err)
		}
	}
	hosts := map[string]promptHost{}
	for i, name := range promptNames(listed) {
		hosts[name] = promptHost{server: listed[i].Server, name: listed[i].Name}
	}
	g.mu.Lock()
	g.promptHosts = hosts
	g.mu.Unlock()
	return listed, nil
}

func (g *Gateway) getPrompt(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	host, err := g.promptHost(ctx, r.Session, r.Extra, r.Params.Name)
	if err != nil {
		return nil, err
	}
	args := map[string]any{"server": host.server, "name": host.name}
	if len(r.Params.Arguments) > 0 {
		args["arguments"] = r.Params.Arguments
	}
	res, err := g.resourceTool(ctx, r.Session, r.Extra, r.Params.GetMeta(), mcptools.GetPromptTool, args)
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: no worker serves prompt %q", r.Params.Name)}
	case res.IsError && slices.Contains([]any{mcptools.CodePromptRefused, "validation_error"}, res.Meta[MetaErrorCode]):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcp gateway: " + textOf(res)}
	case res.IsError:
		return nil, refused(fmt.Sprintf("getting prompt %q of MCP server %q", host.name, host.server), res)
	}
	data, _ := res.StructuredContent.(map[string]any)
	out := &mcp.GetPromptResult{}
	out.Description, _ = data["description"].(string)
	messages, err := g.promptMessages(ctx, data)
	if err != nil {
		return nil, internalError("prompt %q of MCP server %q: %v", host.name, host.server, err)
	}
	if messages == nil {
		// Neither inline nor stored (a worker without a context store, a
		// long prompt): its narrative is what there is.
		return &mcp.GetPromptResult{Description: out.Description, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: res.Content[0].(*mcp.TextContent).Text}}}}, nil
	}
	for _, m := range messages {
		c, err := g.promptContent(ctx, m.Content)
		if err != nil {
			return nil, internalError("prompt %q of MCP server %q: %v", host.name, host.server, err)
		}
		out.Messages = append(out.Messages, &mcp.PromptMessage{Role: mcp.Role(m.Role), Content: c})
	}
	return out, nil
}

// promptMessages are get_mcp_prompt's messages: in its data, or in the
// context store by the reference its data holds. Nil when neither.
func (g *Gateway) promptMessages(ctx context.Context, data map[string]any) ([]mcptools.PromptMessage, error) {
	var raw []byte
	if v, ok := data[mcptools.MetaPromptMessages]; ok {
		raw, _ = json.Marshal(v)
	} else if ref, _ := data[mcptools.MetaPromptMessagesRef].(string); ref != "" {
		b, err := g.stored(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("its messages: %w", err)
		}
		raw = b
	} else {
		return nil, nil
	}
	var messages []mcptools.PromptMessage
	if err := json.Unmarshal(raw, &messages); err != nil {
		return nil, fmt.Errorf("its messages do not decode: %w", err)
	}
	return messages, nil
}

// promptContent is one message's content as MCP content, its bytes read
// from the context store where the worker kept them.
func (g *Gateway) promptContent(ctx context.Context, c mcptools.Content) (mcp.Content, error) {
	data := []byte(c.Text)
	if c.Ref != "" {
		b, err := g.stored(ctx, c.Ref)
		if err != nil {
			return nil, fmt.Errorf("its %s content: %w", c.Type, err)
		}
		data = b
	}
	switch c.Type {
	case "image":
		return &mcp.ImageContent{Data: data, MIMEType: c.MIMEType}, nil
	case "audio":
		return &mcp.AudioContent{Data: data, MIMEType: c.MIMEType}, nil
	case "resource_link":
		link := &mcp.ResourceLink{URI: c.URI, Name: c.Name, MIMEType: c.MIMEType, Description: c.Text}
		return link, nil
	case "resource":
		r := &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType}
		if c.Ref != "" && c.Text == "" { // binaryItem keeps no text
			r.Blob = data
		} else {
			r.Text = string(data)
		}
		return &mcp.EmbeddedResource{Resource: r}, nil
	}
	return &mcp.TextContent{Text: string(data)}, nil
}
