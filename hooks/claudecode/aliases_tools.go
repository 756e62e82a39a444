package claudecode

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

func bashInput(background bool) func(map[string]any, string) map[string]any {
	return func(args map[string]any, _ string) map[string]any {
		out := copyExcept(args, "command_line", "timeout_seconds")
		out["command"] = envAssignments(args["env"]) + str(args, "command_line")
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
	// A command echoed back with the env argument it was shown with
	// drops the assignments again; without it they set the variables
	// themselves.
	if prefix := envAssignments(out["env"]); prefix != "" {
		if line, ok := out["command_line"].(string); ok {
			out["command_line"] = strings.TrimPrefix(line, prefix)
		}
	}
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

// sameInput is the input of a tool whose Claude Code shape is Fenix's
// (WebSearch, the MCP resource tools), copied.
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

// envAssignments shows exec_command's and process_exec's env argument to
// Claude Code dialect hooks as what a Claude Code agent would write for
// the same effect, assignments before the command (`NAME=value ls`): a
// hook that approves or refuses by the command text sees every variable
// the command runs with (an LD_PRELOAD or PATH beside an allowed "ls"),
// not only the words after them. Values are quoted for sh where needed.
func envAssignments(env any) string {
	vars, ok := env.(map[string]any)
	if !ok || len(vars) == 0 {
		return ""
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		value, _ := vars[name].(string)
		b.WriteString(name + "=" + shellWord(value) + " ")
	}
	return b.String()
}

// shellWord is s as one sh word: as it is when it needs no quoting, else
// single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func sameInput(args map[string]any, _ string) map[string]any {
	return copyExcept(args)
}

// listResourcesResponse is ListMcpResourcesTool's output: the resources.
func listResourcesResponse(raw, _ map[string]any, _ string) any {
	return raw["resources"]
}

// readResourceResponse is ReadMcpResourceTool's output: the contents,
// text inline (binary and stored ones by their size and reference).
func readResourceResponse(raw, _ map[string]any, _ string) any {
	items, _ := raw["content"].([]any)
	contents := make([]any, 0, len(items))
	for _, it := range items {
		c, _ := it.(map[string]any)
		out := map[string]any{"uri": str(c, "uri"), "mimeType": str(c, "mime_type")}
		if text := str(c, "text"); text != "" {
			out["text"] = text
		}
		if ref := str(c, "ref"); ref != "" {
			out["ref"], out["bytes"] = ref, c["bytes"]
		}
		contents = append(contents, out)
	}
	return map[string]any{"server": str(raw, "server"), "contents": contents}
}
