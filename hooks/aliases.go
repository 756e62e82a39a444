package hooks

import (
	"encoding/json"
	"fmt"
	"math"
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
	"exec_command":     {names: []string{"Bash"}, toClaude: bashInput(false), fromClaude: bashArgs, response: bashResponse, outputText: bashText},
	"process_exec":     {names: []string{"Bash"}, toClaude: bashInput(true), fromClaude: processArgs, response: processResponse, outputText: bashText},
	"workspace_read":   {names: []string{"Read"}, toClaude: readInput, fromClaude: readArgs, response: readResponse, outputText: readText},
	"workspace_write":  {names: []string{"Write"}, toClaude: writeInput, fromClaude: writeArgs, response: writeResponse},
	"workspace_edit":   {names: []string{"Edit", "MultiEdit"}, toClaude: editInput, fromClaude: editArgs, response: editResponse},
	"workspace_list":   {names: []string{"Glob"}, toClaude: globInput, fromClaude: globArgs, response: globResponse},
	"workspace_search": {names: []string{"Grep"}, toClaude: grepInput, fromClaude: grepArgs, response: grepResponse},
	"web_fetch":        {names: []string{"WebFetch"}, toClaude: fetchInput, fromClaude: fetchArgs, response: fetchResponse, outputText: fieldText("result")},
	"web_search":       {names: []string{"WebSearch"}, toClaude: searchInput, fromClaude: searchArgs, response: searchResponse},
	"spawn_subagent":   {names: []string{"Agent", "Task"}, toClaude: agentInput, fromClaude: agentArgs, response: agentResponse, outputText: agentText},
}

// ClaudeToolNames lists a Fenix tool's Claude Code names, or nil when it
// has none.
func ClaudeToolNames(fenixTool string) []string {
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
	return []string{"exec_command", "process_exec", "spawn_subagent", "web_fetch", "web_search",
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
			return a.fromClaude(cloneArgs(updated), root)
		}
	}
	return updated
}

// hookToolResponse is the tool_response a hook of the dialect receives:
// Claude Code's structured output for aliased tools, else the raw result.
func hookToolResponse(d Dialect, tool string, raw json.RawMessage, args map[string]any, content, root string) json.RawMessage {
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

// absPath makes a workspace-relative path absolute, as Claude Code's file
// tools expect.
func absPath(root, rel string) string {
	if rel == "" {
		rel = "."
	}
	if root == "" || filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(root, filepath.FromSlash(rel))
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

func bashInput(background bool) func(map[string]any, string) map[string]any {
	return func(args map[string]any, _ string) map[string]any {
		out := copyExcept(args, "command_line", "timeout_seconds")
		out["command"] = str(args, "command_line")
		if s, ok := num(args, "timeout_seconds"); ok {
			out["timeout"] = s * 1000
		}
		if background {
			out["run_in_background"] = true
		}
		return out
	}
}

func bashArgs(in map[string]any, _ string) map[string]any {
	out := copyExcept(in, "description", "run_in_background", "dangerouslyDisableSandbox")
	rename(out, "command", "command_line")
	if ms, ok := num(out, "timeout"); ok {
		delete(out, "timeout")
		if ms > 0 {
			out["timeout_seconds"] = math.Ceil(ms / 1000)
		}
	}
	return out
}

func processArgs(in map[string]any, root string) map[string]any {
	out := bashArgs(in, root)
	// A background run has no overall timeout; Claude's is meaningless here.
	delete(out, "timeout_seconds")
	return out
}

func bashResponse(raw, _ map[string]any, _ string) any {
	status := str(raw, "status")
	return map[string]any{
		"stdout":      str(raw, "stdout"),
		"stderr":      str(raw, "stderr"),
		"interrupted": status != "" && status != "exited",
		"isImage":     false,
		"exit_code":   raw["exit_status"],
		"status":      status,
	}
}

func processResponse(raw, _ map[string]any, _ string) any {
	return map[string]any{
		"stdout":           str(raw, "output"),
		"stderr":           "",
		"interrupted":      false,
		"isImage":          false,
		"backgroundTaskId": str(raw, "process_run_id"),
		"status":           str(raw, "status"),
	}
}

func bashText(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	out, errOut := str(m, "stdout"), str(m, "stderr")
	switch {
	case out != "" && errOut != "":
		return out + "\n" + errOut
	case out != "":
		return out
	}
	return errOut
}

func readInput(args map[string]any, root string) map[string]any {
	out := copyExcept(args, "path")
	out["file_path"] = absPath(root, str(args, "path"))
	return out
}

func readArgs(in map[string]any, root string) map[string]any {
	out := copyExcept(in)
	if p, ok := out["file_path"].(string); ok {
		delete(out, "file_path")
		out["path"] = relPath(root, p)
	}
	return out
}

func readResponse(raw, args map[string]any, root string) any {
	content := str(raw, "content")
	lines := strings.Count(content, "\n")
	if content != "" && !strings.HasSuffix(content, "\n") {
		lines++
	}
	return map[string]any{
		"type": "text",
		"file": map[string]any{
			"filePath":   absPath(root, str(args, "path")),
			"content":    content,
			"numLines":   lines,
			"startLine":  1,
			"totalLines": lines,
		},
	}
}

func readText(v any) string {
	m, _ := v.(map[string]any)
	file, _ := m["file"].(map[string]any)
	return str(file, "content")
}

func writeInput(args map[string]any, root string) map[string]any {
	return readInput(args, root)
}

func writeArgs(in map[string]any, root string) map[string]any {
	return readArgs(in, root)
}

func writeResponse(raw, args map[string]any, root string) any {
	kind := "update"
	if created, _ := raw["created"].(bool); created {
		kind = "create"
	}
	return map[string]any{"type": kind, "filePath": absPath(root, str(args, "path")), "success": true}
}

func editInput(args map[string]any, root string) map[string]any {
	return readInput(args, root)
}

func editArgs(in map[string]any, root string) map[string]any {
	return readArgs(in, root)
}

func editResponse(raw, args map[string]any, root string) any {
	replaceAll, _ := args["replace_all"].(bool)
	return map[string]any{
		"filePath":     absPath(root, str(args, "path")),
		"oldString":    str(args, "old_string"),
		"newString":    str(args, "new_string"),
		"replaceAll":   replaceAll,
		"replacements": raw["replacements"],
		"success":      true,
	}
}

func globInput(args map[string]any, root string) map[string]any {
	out := copyExcept(args, "path", "recursive")
	out["pattern"] = "*"
	if rec, _ := args["recursive"].(bool); rec {
		out["pattern"] = "**/*"
	}
	out["path"] = absPath(root, str(args, "path"))
	return out
}

// globArgs keeps the directory and whether to recurse: Fenix lists a
// directory, it has no glob to narrow the listing with.
func globArgs(in map[string]any, root string) map[string]any {
	out := copyExcept(in, "pattern")
	if p, ok := out["path"].(string); ok {
		out["path"] = relPath(root, p)
	}
	if pattern := str(in, "pattern"); strings.Contains(pattern, "**") || strings.Contains(pattern, "/") {
		out["recursive"] = true
	}
	return out
}

func globResponse(raw, _ map[string]any, root string) any {
	entries, _ := raw["entries"].([]any)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && str(m, "type") != "dir" {
			names = append(names, absPath(root, str(m, "path")))
		}
	}
	truncated, _ := raw["truncated"].(bool)
	return map[string]any{"filenames": names, "numFiles": len(names), "truncated": truncated}
}

func grepInput(args map[string]any, root string) map[string]any {
	out := copyExcept(args, "path", "case_insensitive", "max_results")
	out["path"] = absPath(root, str(args, "path"))
	out["output_mode"] = "content"
	if ci, _ := args["case_insensitive"].(bool); ci {
		out["-i"] = true
	}
	if n, ok := num(args, "max_results"); ok {
		out["head_limit"] = n
	}
	return out
}

// grepArgs reads Claude's pattern as a regular expression unless the hook
// kept Fenix's "regex" flag.
func grepArgs(in map[string]any, root string) map[string]any {
	out := copyExcept(in, "output_mode", "-n", "-A", "-B", "-C")
	if p, ok := out["path"].(string); ok {
		out["path"] = relPath(root, p)
	}
	rename(out, "-i", "case_insensitive")
	rename(out, "head_limit", "max_results")
	if _, ok := out["regex"]; !ok {
		out["regex"] = true
	}
	return out
}

func grepResponse(raw, _ map[string]any, root string) any {
	matches, _ := raw["matches"].([]any)
	var lines []string
	files := map[string]bool{}
	var filenames []string
	for _, m := range matches {
		mm, ok := m.(map[string]any)
		if !ok {
			continue
		}
		p := absPath(root, str(mm, "path"))
		line, _ := num(mm, "line")
		lines = append(lines, fmt.Sprintf("%s:%d:%s", p, int(line), str(mm, "text")))
		if !files[p] {
			files[p] = true
			filenames = append(filenames, p)
		}
	}
	return map[string]any{"mode": "content", "numFiles": len(filenames), "filenames": filenames,
		"content": strings.Join(lines, "\n"), "numLines": len(lines)}
}

func fetchInput(args map[string]any, _ string) map[string]any {
	out := copyExcept(args)
	if _, ok := out["prompt"]; !ok {
		out["prompt"] = ""
	}
	return out
}

func fetchArgs(in map[string]any, _ string) map[string]any {
	return copyExcept(in, "prompt")
}

func fetchResponse(raw, _ map[string]any, _ string) any {
	code, _ := num(raw, "status_code")
	return map[string]any{"url": str(raw, "final_url"), "code": int(code), "codeText": str(raw, "status"),
		"result": str(raw, "content"), "bytes": raw["bytes"]}
}

func fieldText(key string) func(any) string {
	return func(v any) string {
		m, _ := v.(map[string]any)
		return str(m, key)
	}
}

func searchInput(args map[string]any, _ string) map[string]any {
	return copyExcept(args)
}

func searchArgs(in map[string]any, _ string) map[string]any {
	return copyExcept(in)
}

func searchResponse(raw, _ map[string]any, _ string) any {
	return map[string]any{"query": str(raw, "query"), "results": raw["results"]}
}

func agentInput(args map[string]any, _ string) map[string]any {
	out := copyExcept(args, "task", "profile")
	task := str(args, "task")
	out["prompt"] = task
	out["description"] = firstLine(task, 60)
	if p := str(args, "profile"); p != "" {
		out["subagent_type"] = p
	}
	return out
}

func agentArgs(in map[string]any, _ string) map[string]any {
	out := copyExcept(in, "description")
	rename(out, "prompt", "task")
	rename(out, "subagent_type", "profile")
	return out
}

func agentResponse(raw, _ map[string]any, _ string) any {
	text := str(raw, "content")
	if text == "" {
		text = str(raw, "output")
	}
	return map[string]any{"status": "completed", "content": []any{map[string]any{"type": "text", "text": text}}}
}

func agentText(v any) string {
	m, _ := v.(map[string]any)
	blocks, _ := m["content"].([]any)
	var parts []string
	for _, b := range blocks {
		if bm, ok := b.(map[string]any); ok && str(bm, "type") == "text" {
			parts = append(parts, str(bm, "text"))
		}
	}
	return strings.Join(parts, "\n")
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = s[:max]
	}
	return s
}
