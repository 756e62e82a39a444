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

// An MCP server that offers completions suggests the values of a prompt's
// argument, or of a resource template's variable, as the user types them
// (completion/complete). complete_mcp_argument asks it, governed and
// pinned to this host as the prompt and resource tools are: the MCP
// gateway's completion/complete runs it, so a client's suggestions pass
// the hooks, permission rules and audit an agent's reads do (a
// suggestion can name what the server holds: a table, a repository).
const CompleteArgumentTool = "complete_mcp_argument"

// Bounds of a completion: the protocol's 100 values, each cut, and the
// context the client sends along.
const (
	maxCompletionValues     = 100
	maxCompletionValueBytes = 1024
	maxCompletionContext    = 64 << 10
)

// CodeCompletionRefused is the error code of a completion the server
// refused as invalid: an unknown prompt or template, an unknown argument.
const CodeCompletionRefused = "completion_refused"

// MetaCompletionValues is complete_mcp_argument's metadata key of the
// suggested values (with "total" and "has_more").
const MetaCompletionValues = "values"

// CompleteArgs are complete_mcp_argument's arguments: the prompt or the
// resource template whose argument is being filled in, exactly one.
type CompleteArgs struct {
	Server      string            `json:"server" jsonschema:"minLength=1,maxLength=200,description=The MCP server (its name in .mcp.json) that offers the prompt or the resource template"`
	Prompt      string            `json:"prompt,omitempty" jsonschema:"maxLength=1024,description=The prompt whose argument is being filled in (as list_mcp_prompts gives it)"`
	URITemplate string            `json:"uri_template,omitempty" jsonschema:"maxLength=8192,description=The resource template whose variable is being filled in (as the resource listing gives it)"`
	Argument    string            `json:"argument" jsonschema:"minLength=1,maxLength=1024,description=The argument or template variable"`
	Value       string            `json:"value" jsonschema:"maxLength=8192,description=What has been typed of it so far"`
	Context     map[string]string `json:"context,omitempty" jsonschema:"description=The values of the other arguments already filled in"`
}

// CompleteResult is complete_mcp_argument's raw result.
type CompleteResult struct {
	Server string   `json:"server"`
	Values []string `json:"values"`
	// Total is how many values the server says match (0 when it does not
	// say); HasMore that there are more than it sent.
	Total   int  `json:"total,omitempty"`
	HasMore bool `json:"has_more,omitempty"`
}

// completionTools are the Manager's completion tool.
func (m *Manager) completionTools() []tools.Definition {
	return []tools.Definition{tools.Define(m.toolSpec(CompleteArgumentTool,
		"Suggest values for an argument of an MCP server's prompt or a variable of its resource template, from what has been typed so far."),
		m.complete, func(a CompleteArgs, r CompleteResult) tools.Projection {
			return projectCompletion(a, r)
		})}
}

func (m *Manager) complete(ctx context.Context, _ *tools.Env, a CompleteArgs) (CompleteResult, error) {
	ref := &sdk.CompleteReference{Type: "ref/prompt", Name: a.Prompt}
	switch {
	case (a.Prompt == "") == (a.URITemplate == ""):
		return CompleteResult{}, fenixerr.Validation("%s takes a prompt or a uri_template, exactly one", CompleteArgumentTool).WithTool(CompleteArgumentTool)
	case a.URITemplate != "":
		ref = &sdk.CompleteReference{Type: "ref/resource", URI: a.URITemplate}
	}
	s, err := m.namedServer(CompleteArgumentTool, a.Server)
	if err != nil {
		return CompleteResult{}, err
	}
	session, err := s.sessionFor(completionsFeature)
	if err != nil {
		return CompleteResult{}, fenixerr.As(err).WithTool(CompleteArgumentTool)
	}
	params := &sdk.CompleteParams{Ref: ref, Argument: sdk.CompleteParamsArgument{Name: a.Argument, Value: a.Value}}
	if len(a.Context) > 0 {
		size := 0
		for k, v := range a.Context {
			size += len(k) + len(v)
		}
		if size > maxCompletionContext {
			return CompleteResult{}, fenixerr.PayloadTooLarge("the context of a completion is %d bytes, over the %d it takes", size, maxCompletionContext).WithTool(CompleteArgumentTool)
		}
		params.Context = &sdk.CompleteContext{Arguments: a.Context}
	}
	res, err := session.Complete(ctx, params)
	if ctx.Err() != nil {
		return CompleteResult{}, ctx.Err()
	}
	what := completing(a)
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && wire.Code == jsonrpc.CodeInvalidParams {
		return CompleteResult{}, fenixerr.Validation("MCP server %q refused to complete %s: %v", s.cfg.Name, what, err).WithTool(CompleteArgumentTool).WithCode(CodeCompletionRefused)
	}
	if err != nil {
		return CompleteResult{}, fenixerr.Runtime("MCP server %q failed completion/complete of %s: %v", s.cfg.Name, what, err).WithTool(CompleteArgumentTool).WithCode("mcp_call_failed")
	}
	out := CompleteResult{Server: s.cfg.Name, Values: []string{}, Total: res.Completion.Total, HasMore: res.Completion.HasMore}
	for i, v := range res.Completion.Values {
		if i == maxCompletionValues {
			out.HasMore = true
			break
		}
		out.Values = append(out.Values, cut(v, maxCompletionValueBytes))
	}
	return out, nil
}

// completing names what a completion fills in.
func completing(a CompleteArgs) string {
	if a.Prompt != "" {
		return fmt.Sprintf("argument %q of prompt %q", a.Argument, a.Prompt)
	}
	return fmt.Sprintf("variable %q of resource template %q", a.Argument, a.URITemplate)
}

// projectCompletion shows the values one per line; the gateway reads
// them from the metadata.
func projectCompletion(a CompleteArgs, r CompleteResult) tools.Projection {
	content := fmt.Sprintf("MCP server %q suggests no value of %s for %q.", r.Server, completing(a), a.Value)
	if len(r.Values) > 0 {
		content = fmt.Sprintf("Values of %s:\n%s", completing(a), strings.Join(r.Values, "\n"))
	}
	if r.HasMore {
		content += "\n[there are more; type more of the value to narrow them]"
	}
	meta := map[string]any{"server": r.Server, MetaCompletionValues: r.Values, "has_more": r.HasMore}
	if r.Total > 0 {
		meta["total"] = r.Total
	}
	return tools.Projection{Content: content, Metadata: meta}
}
