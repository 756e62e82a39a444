package claudecode

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenixrt/fenix/workspace"
)

// permissionNames are the names a permission rule may call a tool by: its
// Claude Code names, its Fenix name, and, as Claude Code applies Read rules
// to every tool that reads files and Edit rules to every tool that edits
// them, Read for Glob and Grep and Edit for Write.
func permissionNames(tool string) []string {
	names := append(append([]string{}, ToolNames(tool)...), tool)
	switch tool {
	case "workspace_list", "workspace_search":
		names = append(names, "Read")
	case "workspace_write":
		names = append(names, "Edit")
	}
	return names
}

// namesTool reports whether a rule's tool part names the tool: one of its
// names or, for MCP tools (mcp__<server>__<tool>), the server alone
// ("mcp__server", every tool of it, as Claude Code documents) or a
// pattern whose "*" matches any run of characters ("mcp__server__*",
// "mcp__*", "mcp__server__read_*"). A server's name holds no "__" and does
// not end in "_" (tools/mcp refuses such servers), so a tool's server is
// everything before the first "__" after "mcp__", whatever the tool's own
// name holds.
func namesTool(ruleTool, tool string) bool {
	if ruleTool == "*" {
		return true
	}
	if rest, ok := strings.CutPrefix(ruleTool, "mcp__"); ok {
		if !strings.HasPrefix(tool, "mcp__") {
			return false
		}
		if !strings.Contains(rest, "__") && !strings.Contains(rest, "*") {
			ruleTool += "__*" // a server
		}
		if strings.Contains(ruleTool, "*") {
			return wildcardMatch(ruleTool, tool)
		}
		return ruleTool == tool
	}
	for _, n := range permissionNames(tool) {
		if n == ruleTool {
			return true
		}
	}
	return false
}

// wildcardMatch matches a name against a pattern whose "*" is any run of
// characters.
func wildcardMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(name, p)
		}
		j := strings.Index(name, p)
		if j < 0 {
			return false
		}
		name = name[j+len(p):]
	}
	return name == ""
}

// wholeTool reports whether the rule covers every call of its tool.
func (r permissionRule) wholeTool() bool {
	return r.rule.content == "" || r.rule.content == "*"
}

// matches applies a deny or ask rule to a call. What Fenix cannot analyse
// (a command line it cannot parse, a dynamic program, a specifier it does
// not evaluate for the tool) matches, so a deny or an ask errs on the side
// of stopping the call.
//
// uncertain marks a command line Fenix cannot judge (unparseable, a
// dynamic program, an expansion): Claude Code asks about those rather
// than deny them outright.
func (r permissionRule) matches(c *judgedCall) (matched, uncertain bool) {
	if !namesTool(r.rule.tool, c.tool) && !r.readDenyOnWrite(c.tool) {
		if c.isShell() && r.behavior == behaviorDeny && (r.rule.tool == "Read" || r.rule.tool == "Edit") && !r.wholeTool() {
			return r.matchesShellFiles(c)
		}
		return false, false
	}
	if r.wholeTool() || !specifierKnown(r.rule.tool) {
		return true, false
	}
	if c.isShell() {
		sc, ok := c.shell()
		return bashRuleMatchParsed(r.rule.content, sc, ok)
	}
	if c.isPath() {
		rule := r.rule
		if r.behavior != behaviorAllow {
			rule = rule.atAnyDepth()
		}
		given, resolved, ok := c.paths()
		if rule.pathMatchesIn(given, c.root, c.realRoot) || ok && rule.pathMatchesIn(resolved, c.root, c.realRoot) {
			return true, false
		}
		return false, !ok
	}
	return r.rule.matches([]string{r.rule.tool}, c.tool, c.args, c.root), false
}

// readDenyOnWrite reports whether the rule is a Read deny rule judging a
// write or edit of a file: Claude Code's Read deny rule also blocks the
// Edit and Write tools on its path, creating a file there included.
func (r permissionRule) readDenyOnWrite(tool string) bool {
	return r.behavior == behaviorDeny && r.rule.tool == "Read" && (tool == "workspace_write" || tool == "workspace_edit")
}

// atAnyDepth is a rule's path pattern as a deny or ask rule reads it: a
// relative pattern of one directory segment (secrets/**) matches a
// directory of that name at any depth under the workspace, as Claude Code
// reads deny and ask rules. The allow rules and hooks' if conditions
// read it at the workspace's root (pathMatchesIn).
func (r *ifRule) atAnyDepth() *ifRule {
	segment, ok := strings.CutSuffix(r.content, "/**")
	if !ok || segment == "" || segment == "." || segment == ".." || strings.ContainsAny(segment, "/~") {
		return r
	}
	c := *r
	c.content = "**/" + r.content
	return &c
}

// judgedCall is the call the rules judge; its command line is parsed once
// for all of them.
type judgedCall struct {
	tool      string
	args      map[string]any
	root      string
	parsed    bool
	commands  shellCommands
	parseable bool

	resolvedDone, resolvable bool
	resolved                 string
	// realRootDone and realRootDir are root with its symlinks resolved,
	// once per call (realRoot).
	realRootDone bool
	realRootDir  string
	// resolve, when set, follows a path's symlinks in an open workspace
	// (ReadDenied's caller has one); else the workspace is opened.
	resolve func(string) (string, error)
}

// realRoot is the workspace root with its symlinks resolved, resolved
// once for all the rules that judge the call.
func (c *judgedCall) realRoot() string {
	if !c.realRootDone {
		c.realRootDone, c.realRootDir = true, realDir(c.root)
	}
	return c.realRootDir
}

func (c *judgedCall) isShell() bool { return c.tool == "exec_command" || c.tool == "process_exec" }

// beyondWords says what keeps a shell call from every allow rule beyond
// its words: a variable it sets that changes what runs, or a file its
// output is written to; "" for nothing.
func (c *judgedCall) beyondWords() string {
	if name := c.unsafeEnv(); name != "" {
		return fmt.Sprintf("it sets %s, which can change what runs", name)
	}
	if !c.isShell() {
		return ""
	}
	if sc, ok := c.shell(); ok && sc.writes != "" {
		return fmt.Sprintf("it writes its output to %s", sc.writes)
	}
	return ""
}

// cd is the "cd <dir>" a shell call's cwd argument amounts to, "" for
// none (the workspace root).
func (c *judgedCall) cd() string {
	cwd := str(c.args, "cwd")
	if cwd == "" {
		return ""
	}
	if cleaned, err := workspace.Clean(cwd); err == nil {
		if cleaned == "." {
			return ""
		}
		cwd = cleaned
	}
	return "cd " + cwd
}

// unsafeEnv names the first variable a shell call sets, on its command
// line or through its "env" argument, that allow rules do not look past
// (claudeSafeEnvVars); "" for none or a call of another tool.
func (c *judgedCall) unsafeEnv() string {
	if !c.isShell() {
		return ""
	}
	if name := unsafeCallEnv(c.args); name != "" {
		return name
	}
	if sc, ok := c.shell(); ok {
		return sc.unsafeEnv
	}
	return ""
}

func (c *judgedCall) isPath() bool {
	switch c.tool {
	case "workspace_read", "workspace_write", "workspace_edit", "workspace_list", "workspace_search":
		return true
	}
	return false
}

// paths are the path a call names and the one it reaches through the
// workspace's symlinks; ok is false when that cannot be told (a loop, an
// absolute or escaping link, a workspace that does not open), so the call
// may reach anything.
func (c *judgedCall) paths() (given, resolved string, ok bool) {
	given = str(c.args, "path")
	if !c.resolvedDone {
		c.resolvedDone = true
		if c.resolve != nil && !filepath.IsAbs(given) {
			resolved, err := c.resolve(given)
			c.resolved, c.resolvable = resolved, err == nil
		} else {
			c.resolved, c.resolvable = resolveInWorkspace(c.root, given)
		}
	}
	return given, c.resolved, c.resolvable
}

// resolveInWorkspace follows a relative path's symlinks inside the
// workspace root. An absolute path is left as given: workspace tools
// refuse it, so it reaches nothing.
func resolveInWorkspace(root, p string) (string, bool) {
	if root == "" || filepath.IsAbs(p) {
		return p, true
	}
	ws, err := workspace.Open(root)
	if err != nil {
		return "", false
	}
	defer ws.Close()
	resolved, err := ws.ResolveLinks(p)
	return resolved, err == nil
}

func (c *judgedCall) shell() (shellCommands, bool) {
	if !c.parsed {
		c.commands, c.parseable = parseShellCommands(str(c.args, "command_line"))
		c.parsed = true
	}
	return c.commands, c.parseable
}

// allowedBy finds the allow rules that approve a call, or nil. A command
// line is approved only when every simple command in it is, each by some
// allow rule (so Bash(safe:*) does not approve "safe && other"), and never
// when it holds an expansion, a glob or a brace expansion, or cannot be
// parsed. Allow rules match the words as written after Claude Code's
// process wrappers (see shellCommand.allow).
func (p *Permissions) allowedBy(c *judgedCall) []permissionRule {
	var named []permissionRule
	for _, r := range p.rules {
		if r.behavior != behaviorAllow || !namesTool(r.rule.tool, c.tool) {
			continue
		}
		if r.wholeTool() {
			return []permissionRule{r}
		}
		if specifierKnown(r.rule.tool) {
			named = append(named, r)
		}
	}
	if len(named) == 0 {
		return nil
	}
	if c.isPath() {
		// The path as given and the file it resolves to must both be
		// allowed.
		given, resolved, ok := c.paths()
		if !ok {
			return nil
		}
		var used []permissionRule
		for _, p := range []string{given, resolved} {
			i := slices.IndexFunc(named, func(r permissionRule) bool { return r.rule.pathMatchesIn(p, c.root, c.realRoot) })
			if i < 0 {
				return nil
			}
			if !containsRule(used, named[i]) {
				used = append(used, named[i])
			}
		}
		return used
	}
	if c.tool == "web_fetch" {
		for _, r := range named {
			if matched, known := domainMatch(r.rule.content, str(c.args, "url")); matched && known {
				return []permissionRule{r}
			}
		}
		return nil
	}
	if !c.isShell() {
		for _, r := range named {
			if r.rule.matches([]string{r.rule.tool}, c.tool, c.args, c.root) {
				return []permissionRule{r}
			}
		}
		return nil
	}
	sc, ok := c.shell()
	if !ok || sc.expansion || len(sc.commands) == 0 || c.unsafeEnv() != "" || sc.writes != "" {
		return nil
	}
	var used []permissionRule
	// A working directory other than the workspace root is the "cd" a
	// line would start with: "./scripts/test.sh" or "npm test" there is
	// another script than the one an allow rule names, so, as for
	// "cd dir && ./scripts/test.sh", some allow rule must approve the cd.
	if cd := c.cd(); cd != "" {
		r, ok := cdRule(named, cd)
		if !ok {
			return nil
		}
		used = append(used, r)
	}
	for _, c := range sc.commands {
		if c.nested {
			continue // judged as the script of an allowed command
		}
		if c.allow == "" {
			return nil
		}
		found := false
		for _, r := range named {
			pattern, prefix := bashPattern(r.rule.content)
			if commandMatches(pattern, c.allow, prefix) {
				found = true
				if !containsRule(used, r) {
					used = append(used, r)
				}
				break
			}
		}
		if !found {
			return nil
		}
	}
	return used
}

// cdRule is the first of the named allow rules that approves cd, the
// "cd <dir>" a call's cwd amounts to.
func cdRule(named []permissionRule, cd string) (permissionRule, bool) {
	for _, r := range named {
		if r.wholeTool() {
			return r, true
		}
		pattern, prefix := bashPattern(r.rule.content)
		if commandMatches(pattern, cd, prefix) {
			return r, true
		}
	}
	return permissionRule{}, false
}

// unapprovedCd is the "cd <dir>" a shell call's cwd amounts to when no
// allow rule approves it, else "".
func (p *Permissions) unapprovedCd(c *judgedCall) string {
	cd := c.cd()
	if cd == "" || !c.isShell() {
		return ""
	}
	var named []permissionRule
	for _, r := range p.rules {
		if r.behavior == behaviorAllow && namesTool(r.rule.tool, c.tool) && (r.wholeTool() || specifierKnown(r.rule.tool)) {
			named = append(named, r)
		}
	}
	if _, ok := cdRule(named, cd); ok {
		return ""
	}
	return cd
}

func containsRule(rules []permissionRule, r permissionRule) bool {
	for _, x := range rules {
		if x.rule == r.rule {
			return true
		}
	}
	return false
}

// unknown says what Fenix could not read of a call a deny rule may cover.
func (c *judgedCall) unknown() string {
	if c.isPath() {
		return "where its path leads through symlinks cannot be told"
	}
	if sc, _ := c.shell(); sc.unreadable != "" {
		return sc.unreadable
	}
	return "its command line cannot be read statically"
}
