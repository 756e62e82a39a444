package claudecode

import (
	"github.com/fenixrt/fenix/hooks"

	"encoding/json"
	"path/filepath"
	"strings"
)

// Dialect says whose tool names and argument shapes a hook settings file
// speaks. A Claude Code file's matchers say "Bash" and its scripts read
// tool_input.command and an absolute tool_input.file_path; a Fenix file's
// say "exec_command" and read command_line and a workspace-relative path.
// Everything else (events, outputs, exit codes, matcher syntax) is the same
// in both.
type Dialect string

const (
	DialectClaude Dialect = "claude"
	DialectFenix  Dialect = "fenix"
)

// toolAlias is how one Fenix tool looks to a Claude Code hook.
type toolAlias struct {
	// names are the Claude Code names a matcher may use; the first is the
	// tool_name hooks receive.
	names    []string
	toClaude func(args map[string]any, root string) map[string]any
	// fromClaude maps an updatedInput back to Fenix arguments. Claude-only
	// fields Fenix cannot honour and that only affect presentation are
	// dropped; anything else unknown is kept, so the tool's schema refuses
	// it with an error naming the field.
	fromClaude func(in map[string]any, root string) map[string]any
	response   func(raw map[string]any, args map[string]any, root string) any
	// outputText turns a Claude-shaped updatedToolOutput into the text the
	// model sees.
	outputText func(v any) string
}

// toolAliases maps Fenix tools to Claude Code's. Tools that are not listed
// (calculator, memory_*, process_list, …) keep their Fenix names and
// shapes in both dialects, like MCP tools do in Claude Code.
var toolAliases = map[string]toolAlias{
	"exec_command":       {names: []string{"Bash"}, toClaude: bashInput(false), fromClaude: bashArgs, response: bashResponse, outputText: bashText},
	"process_exec":       {names: []string{"Bash"}, toClaude: bashInput(true), fromClaude: processArgs, response: processResponse, outputText: bashText},
	"workspace_read":     {names: []string{"Read"}, toClaude: readInput, fromClaude: readArgs, response: readResponse, outputText: readText},
	"workspace_write":    {names: []string{"Write"}, toClaude: writeInput, fromClaude: writeArgs, response: writeResponse},
	"workspace_edit":     {names: []string{"Edit", "MultiEdit"}, toClaude: editInput, fromClaude: editArgs, response: editResponse},
	"workspace_list":     {names: []string{"Glob"}, toClaude: globInput, fromClaude: globArgs, response: globResponse},
	"workspace_search":   {names: []string{"Grep"}, toClaude: grepInput, fromClaude: grepArgs, response: grepResponse},
	"web_fetch":          {names: []string{"WebFetch"}, toClaude: fetchInput, fromClaude: fetchArgs, response: fetchResponse, outputText: fieldText("result")},
	"web_search":         {names: []string{"WebSearch"}, toClaude: sameInput, fromClaude: sameInput, response: searchResponse},
	"spawn_subagent":     {names: []string{"Agent", "Task"}, toClaude: agentInput, fromClaude: agentArgs, response: agentResponse, outputText: agentText},
	"list_mcp_resources": {names: []string{"ListMcpResourcesTool"}, toClaude: sameInput, fromClaude: sameInput, response: listResourcesResponse},
	"read_mcp_resource":  {names: []string{"ReadMcpResourceTool"}, toClaude: sameInput, fromClaude: sameInput, response: readResourceResponse},
}

// ToolNames lists a Fenix tool's Claude Code names, or nil when it
// has none.
func ToolNames(fenixTool string) []string {
	return toolAliases[fenixTool].names
}

// FenixToolsFor lists the Fenix tools a Claude Code tool name stands for.
func FenixToolsFor(claudeName string) []string {
	var out []string
	for _, fenix := range sortedAliasKeys() {
		for _, n := range toolAliases[fenix].names {
			if n == claudeName {
				out = append(out, fenix)
			}
		}
	}
	return out
}

func sortedAliasKeys() []string {
	return []string{"exec_command", "list_mcp_resources", "process_exec", "read_mcp_resource", "spawn_subagent", "web_fetch", "web_search",
		"workspace_edit", "workspace_list", "workspace_read", "workspace_search", "workspace_write"}
}

// toolNamesFor is what a matcher in the dialect compares: the Claude Code
// names of an aliased tool, else its Fenix name.
func toolNamesFor(d Dialect, tool string) []string {
	if d == DialectClaude {
		if a, ok := toolAliases[tool]; ok {
			return a.names
		}
	}
	return []string{tool}
}

// hookToolName is the tool_name a hook of the dialect receives.
func hookToolName(d Dialect, tool string) string {
	return toolNamesFor(d, tool)[0]
}

// hookToolInput is the tool_input a hook of the dialect receives.
func hookToolInput(d Dialect, tool string, args map[string]any, root string) map[string]any {
	if d == DialectClaude {
		if a, ok := toolAliases[tool]; ok && args != nil {
			return a.toClaude(args, root)
		}
	}
	if args == nil {
		return map[string]any{}
	}
	return args
}

// fenixArgs maps a hook's updatedInput back to the tool's arguments.
func fenixArgs(d Dialect, tool string, updated map[string]any, root string) map[string]any {
	if d == DialectClaude {
		if a, ok := toolAliases[tool]; ok {
			return a.fromClaude(hooks.CloneArgs(updated), root)
		}
	}
	return updated
}

// hookToolResponse is the tool_response a hook of the dialect receives:
// Claude Code's structured output for aliased tools, else the raw result.
func hookToolResponse(d Dialect, tool string, raw json.RawMessage, args map[string]any, content, root string) json.RawMessage {
	if d == DialectClaude && tool == "spawn_subagent" && len(raw) == 0 {
		// A subagent's result is its final answer, not a tool's raw JSON.
		out, _ := json.Marshal(agentResponse(map[string]any{"content": content}, args, root))
		return out
	}
	if len(raw) == 0 || !json.Valid(raw) {
		out, _ := json.Marshal(content)
		return out
	}
	if d != DialectClaude {
		return raw
	}
	a, ok := toolAliases[tool]
	if !ok {
		return raw
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return raw
	}
	out, err := json.Marshal(a.response(m, args, root))
	if err != nil {
		return raw
	}
	return out
}

// outputContent turns an updatedToolOutput into the content the model sees.
func outputContent(d Dialect, tool string, v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	if text, ok := mcpContentText(v); ok && strings.HasPrefix(tool, "mcp__") {
		return text, nil
	}
	if d == DialectClaude {
		if a, ok := toolAliases[tool]; ok && a.outputText != nil {
			if text := a.outputText(v); text != "" {
				return text, nil
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// mcpContentText is an MCP tool's replacement output as the model reads
// a result: the text of its content blocks, one per line, given as the
// blocks ([{"type": "text", "text": …}]) or as a result ({"content":
// [...]}). A block of another kind, or anything else, is not text.
func mcpContentText(v any) (string, bool) {
	if result, ok := v.(map[string]any); ok {
		v = result["content"]
	}
	blocks, ok := v.([]any)
	if !ok || len(blocks) == 0 {
		return "", false
	}
	texts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		block, ok := b.(map[string]any)
		text, isText := block["text"].(string)
		if !ok || block["type"] != "text" || !isText {
			return "", false
		}
		texts = append(texts, text)
	}
	return strings.Join(texts, "\n"), true
}

// absPath makes a workspace-relative path absolute, as Claude Code's file
// tools expect. A path that climbs out is not cleaned: a hook sees
// "<root>/../x" for "../x", the path as the agent wrote it, so its own
// ".." check still fires (the workspace's confinement decides either
// way). One that stays in is, as the workspace cleans the path it opens:
// a guard that allows writes under src/ is shown src/../.gitconfig as the
// .gitconfig it is.
func absPath(root, rel string) string {
	if rel == "" || rel == "." {
		if root != "" {
			return root
		}
		return "."
	}
	if root == "" || filepath.IsAbs(rel) {
		return rel
	}
	if cleaned := filepath.Clean(filepath.FromSlash(rel)); cleaned != ".." && !strings.HasPrefix(cleaned, ".."+string(filepath.Separator)) {
		return filepath.Join(root, cleaned)
	}
	return strings.TrimSuffix(root, string(filepath.Separator)) + string(filepath.Separator) + filepath.FromSlash(rel)
}

// relPath maps an absolute path inside the workspace back to a relative
// one. A path outside the workspace stays absolute, so the workspace
// refuses it with an error that names it.
func relPath(root, p string) string {
	if root == "" || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(rel)
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func num(m map[string]any, k string) (float64, bool) {
	f, ok := m[k].(float64)
	if !ok {
		if i, isInt := m[k].(int); isInt {
			return float64(i), true
		}
	}
	return f, ok
}

// copyExcept copies m without the named keys.
func copyExcept(m map[string]any, drop ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range drop {
		delete(out, k)
	}
	return out
}

// rename moves key from to key to when present.
func rename(m map[string]any, from, to string) {
	if v, ok := m[from]; ok {
		delete(m, from)
		m[to] = v
	}
}
