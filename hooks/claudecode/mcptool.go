package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/fenixrt/fenix/hooks"
)

// MCPCaller calls a tool of a configured MCP server for mcp_tool hook
// handlers (Claude Code's fifth handler type). text is the result's text
// items joined by newlines, non-text items as "[type]"; an error covers a
// server that is not connected, an unknown tool and a result with isError.
type MCPCaller interface {
	CallMCPTool(ctx context.Context, server, tool string, args map[string]any) (text string, err error)
}

// MCPToolHookConfig configures an mcp_tool hook.
type MCPToolHookConfig struct {
	ExternalHookConfig
	Server string
	Tool   string
	// Input is the tool's arguments; string values may hold ${path}
	// references into the event JSON (${tool_input.file_path}, ${cwd},
	// ${session_id}, ${tool_name}).
	Input  map[string]any
	Caller MCPCaller
}

// NewMCPToolHook builds an mcp_tool hook: the tool's text output is read
// like a command hook's stdout (a JSON decision, or plain text); a failed
// call is a hook error, non-blocking unless the hook fails closed.
func NewMCPToolHook(cfg MCPToolHookConfig) (*ExternalHook, error) {
	if strings.TrimSpace(cfg.Server) == "" || strings.TrimSpace(cfg.Tool) == "" {
		return nil, fmt.Errorf("mcp_tool hook for %s needs \"server\" and \"tool\"", cfg.Event)
	}
	if cfg.Caller == nil {
		return nil, fmt.Errorf("mcp_tool hook %s/%s for %s: this worker has no MCP servers configured (add them to .mcp.json or -mcp-config)", cfg.Server, cfg.Tool, cfg.Event)
	}
	return newExternalHook(cfg.ExternalHookConfig, &mcpToolTransport{server: cfg.Server, tool: cfg.Tool, input: cfg.Input, caller: cfg.Caller})
}

type mcpToolTransport struct {
	server, tool string
	input        map[string]any
	caller       MCPCaller
}

func (t *mcpToolTransport) kind() string     { return "mcp_tool" }
func (t *mcpToolTransport) describe() string { return t.server + "/" + t.tool }
func (t *mcpToolTransport) identity() string {
	input, _ := json.Marshal(t.input)
	return "mcp_tool\x00" + t.server + "\x00" + t.tool + "\x00" + string(input)
}

func (t *mcpToolTransport) call(ctx context.Context, _ *ExternalHook, _ hooks.Session, payload []byte) (outcome, error) {
	var event map[string]any
	if err := json.Unmarshal(payload, &event); err != nil {
		return outcome{}, fmt.Errorf("mcp_tool %s: decoding the event: %w", t.describe(), err)
	}
	args, _ := substituteInput(t.input, event).(map[string]any)
	text, err := t.caller.CallMCPTool(ctx, t.server, t.tool, args)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		return outcome{}, fmt.Errorf("mcp_tool %s: %w", t.describe(), err)
	}
	return outcome{stdout: []byte(text)}, nil
}

var inputRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\}`)

// substituteInput resolves ${path} references in string values. A string
// that is one reference takes the referenced value as is (a number stays
// a number); references inside text are formatted; missing paths are
// empty.
func substituteInput(v any, event map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = substituteInput(e, event)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substituteInput(e, event)
		}
		return out
	case string:
		if m := inputRef.FindStringSubmatch(x); m != nil && m[0] == x {
			if val, ok := lookupPath(event, m[1]); ok {
				return val
			}
			return ""
		}
		return inputRef.ReplaceAllStringFunc(x, func(ref string) string {
			val, ok := lookupPath(event, inputRef.FindStringSubmatch(ref)[1])
			if !ok || val == nil {
				return ""
			}
			if s, isString := val.(string); isString {
				return s
			}
			raw, _ := json.Marshal(val)
			return string(raw)
		})
	default:
		return v
	}
}

func lookupPath(event map[string]any, path string) (any, bool) {
	var cur any = event
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}
