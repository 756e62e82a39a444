package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// The prompts MCP servers offer (templated messages a user picks, which
// Claude Code shows as slash commands) are served by two tools while a
// connected server offers prompts, governed and pinned to this host as
// the resource tools are: the MCP gateway's prompts/list and prompts/get
// run them, and an agent granted them may use them too.
const (
	ListPromptsTool = "list_mcp_prompts"
	GetPromptTool   = "get_mcp_prompt"
)

// Bounds of what the prompt tools bring into a result.
const (
	// maxListedPromptBytes bounds the prompt listing (descriptions cut
	// first).
	maxListedPromptBytes = 128 << 10
	// maxPromptMessages bounds the messages of one prompts/get.
	maxPromptMessages = 64
	// maxPromptArgumentBytes bounds the arguments of one prompts/get.
	maxPromptArgumentBytes = 64 << 10
)

// get_mcp_prompt's metadata keys of the prompt's messages as the server
// gave them (their content items as a tool's: text inline, binary by
// context-store reference), for the MCP gateway: inline when they encode
// within inlinePromptMessages, else by a context-store reference to
// their JSON (the narrative holds their text already; history need not
// hold it twice).
const (
	MetaPromptMessages    = "messages"
	MetaPromptMessagesRef = "messages_ref"
	inlinePromptMessages  = 64 << 10
)

// ListPromptsArgs are list_mcp_prompts' arguments.
type ListPromptsArgs struct {
	Server string `json:"server,omitempty" jsonschema:"maxLength=200,description=Only the prompts of this MCP server (its name in .mcp.json); all servers when empty"`
}

// ListedPrompt is one prompt a server offers.
type ListedPrompt struct {
	Server      string           `json:"server"`
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// ListPromptsResult is list_mcp_prompts' raw result.
type ListPromptsResult struct {
	Prompts   []ListedPrompt `json:"prompts"`
	Truncated bool           `json:"truncated,omitempty"`
	Total     int            `json:"total"`
	// Failed names, by server, why a server offering prompts could not be
	// listed (the others still are).
	Failed map[string]string `json:"failed,omitempty"`
}

// GetPromptArgs are get_mcp_prompt's arguments.
type GetPromptArgs struct {
	Server    string            `json:"server" jsonschema:"minLength=1,maxLength=200,description=The MCP server (its name in .mcp.json) that offers the prompt"`
	Name      string            `json:"name" jsonschema:"minLength=1,maxLength=1024,description=The prompt's name as list_mcp_prompts gives it"`
	Arguments map[string]string `json:"arguments,omitempty" jsonschema:"description=The prompt's arguments by name"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// GetPromptResult is get_mcp_prompt's raw result.
type GetPromptResult struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	// Omitted counts the messages past the bound that were left out.
	Omitted int `json:"omitted,omitempty"`
	// MessagesRef is the context-store reference of the messages' JSON
	// when it is over inlinePromptMessages.
	MessagesRef string `json:"messages_ref,omitempty"`
}

// promptTools are the Manager's two prompt tools.
func (m *Manager) promptTools() []tools.Definition {
	list := tools.Define(m.toolSpec(ListPromptsTool,
		"List the prompts (templated messages) the connected MCP servers offer, with their arguments, for get_mcp_prompt."),
		m.listPrompts, func(_ ListPromptsArgs, r ListPromptsResult) tools.Projection {
			return tools.Projection{Content: listingNarrative(r.Prompts, r.Total, r.Truncated, r.Failed, "No MCP server on this worker offers prompts.", "prompts"),
				Metadata: map[string]any{"total": r.Total, "truncated": r.Truncated}}
		})
	get := tools.Define(m.toolSpec(GetPromptTool,
		"Get a prompt an MCP server offers, filled in with its arguments (see list_mcp_prompts)."),
		m.getPrompt, func(_ GetPromptArgs, r GetPromptResult) tools.Projection {
			return projectPrompt(r)
		})
	return []tools.Definition{list, get}
}

func (m *Manager) listPrompts(ctx context.Context, _ *tools.Env, a ListPromptsArgs) (ListPromptsResult, error) {
	out := ListPromptsResult{Prompts: []ListedPrompt{}}
	budget := maxListedPromptBytes
	failed, truncated, err := m.listFrom(ctx, ListPromptsTool, a.Server, promptsFeature, func(s *server) (bool, error) {
		return s.listPrompts(ctx, &out, &budget)
	})
	if err != nil {
		return ListPromptsResult{}, err
	}
	out.Failed, out.Truncated, out.Total = failed, truncated, len(out.Prompts)
	return out, nil
}

// listPrompts appends the server's prompts to out within budget bytes,
// and says whether it stopped at a bound.
func (s *server) listPrompts(ctx context.Context, out *ListPromptsResult, budget *int) (truncated bool, err error) {
	session, err := s.sessionFor(promptsFeature)
	if err != nil {
		return false, err
	}
	return pages(func(cursor string) (string, bool, error) {
		res, err := session.ListPrompts(ctx, &sdk.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return "", false, fmt.Errorf("prompts/list: %w", err)
		}
		for _, p := range res.Prompts {
			if p == nil {
				continue
			}
			item := ListedPrompt{Server: s.cfg.Name, Name: p.Name, Title: p.Title, Description: cut(p.Description, maxResourceDescription)}
			size := len(item.Server) + len(item.Name) + len(item.Title) + len(item.Description) + 64
			for _, arg := range p.Arguments {
				if arg == nil {
					continue
				}
				a := PromptArgument{Name: arg.Name, Title: arg.Title, Description: cut(arg.Description, maxResourceDescription), Required: arg.Required}
				item.Arguments = append(item.Arguments, a)
				size += len(a.Name) + len(a.Title) + len(a.Description) + 48
			}
			if !spend(budget, size) {
				return "", true, nil
			}
			out.Prompts = append(out.Prompts, item)
		}
		return res.NextCursor, false, nil
	})
}

func (m *Manager) getPrompt(ctx context.Context, _ *tools.Env, a GetPromptArgs) (GetPromptResult, error) {
	s, err := m.namedServer(GetPromptTool, a.Server)
	if err != nil {
		return GetPromptResult{}, err
	}
	session, err := s.sessionFor(promptsFeature)
	if err != nil {
		return GetPromptResult{}, fenixerr.As(err).WithTool(GetPromptTool)
	}
	if raw, _ := json.Marshal(a.Arguments); len(raw) > maxPromptArgumentBytes {
		return GetPromptResult{}, fenixerr.PayloadTooLarge("the arguments of prompt %q are %d bytes, over the %d a prompt takes", a.Name, len(raw), maxPromptArgumentBytes).WithTool(GetPromptTool)
	}
	res, err := session.GetPrompt(ctx, &sdk.GetPromptParams{Name: a.Name, Arguments: a.Arguments})
	if ctx.Err() != nil {
		return GetPromptResult{}, ctx.Err()
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && wire.Code == jsonrpc.CodeInvalidParams {
		return GetPromptResult{}, fenixerr.Validation("MCP server %q refused prompt %q: %v", s.cfg.Name, a.Name, err).WithTool(GetPromptTool).WithCode(CodePromptRefused)
	}
	if err != nil {
		return GetPromptResult{}, fenixerr.Runtime("MCP server %q failed prompts/get %q: %v", s.cfg.Name, a.Name, err).WithTool(GetPromptTool).WithCode("mcp_call_failed")
	}
	out := GetPromptResult{Server: s.cfg.Name, Name: a.Name, Description: cut(res.Description, maxResourceDescription), Messages: []PromptMessage{}}
	for i, msg := range res.Messages {
		if msg == nil || msg.Content == nil {
			continue
		}
		if i == maxPromptMessages {
			out.Omitted = len(res.Messages) - i
			break
		}
		item, err := projectContent(ctx, s.m.opts, msg.Content)
		if err != nil {
			return GetPromptResult{}, fenixerr.As(err).WithTool(GetPromptTool)
		}
		out.Messages = append(out.Messages, PromptMessage{Role: string(msg.Role), Content: item})
	}
	if raw, _ := json.Marshal(out.Messages); len(raw) > inlinePromptMessages && s.m.opts.Contexts != nil {
		if out.MessagesRef, err = s.m.opts.Contexts.Put(ctx, raw); err != nil {
			return GetPromptResult{}, fenixerr.Runtime("storing the %d-byte messages of prompt %q: %v", len(raw), a.Name, err).WithTool(GetPromptTool)
		}
	}
	return out, nil
}

// CodePromptRefused is the error code of a prompts/get the server refused
// as invalid: an unknown prompt, a required argument missing.
const CodePromptRefused = "prompt_refused"

// projectPrompt shows the prompt's messages, each after its role; the
// messages as the server gave them are in the metadata for the gateway,
// which answers prompts/get with them.
func projectPrompt(r GetPromptResult) tools.Projection {
	var b strings.Builder
	if r.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", r.Description)
	}
	items := make([]Content, 0, len(r.Messages))
	for _, msg := range r.Messages {
		fmt.Fprintf(&b, "%s: %s\n", msg.Role, narrate(msg.Content))
		items = append(items, msg.Content)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "[%d more messages left out]\n", r.Omitted)
	}
	meta := map[string]any{"server": r.Server, "prompt": r.Name}
	if raw, _ := json.Marshal(r.Messages); len(raw) <= inlinePromptMessages {
		meta[MetaPromptMessages] = r.Messages
	} else if r.MessagesRef != "" {
		meta[MetaPromptMessagesRef] = r.MessagesRef
	}
	if r.Description != "" {
		meta["description"] = r.Description
	}
	tools.Attach(meta, attachments(items)...)
	return tools.Projection{Content: strings.TrimSuffix(b.String(), "\n"), Metadata: meta}
}
