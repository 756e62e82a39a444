package claudecode

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/net/idna"
	"mvdan.cc/sh/v3/pattern"
)

// ifRule is a handler's "if" field: one Claude Code permission rule, such
// as "Bash(git *)" or "Edit(*.ts)", that narrows when the handler runs on a
// tool event. Like Claude Code's, the filter is best-effort and errs on the
// side of running the hook: a command it cannot parse, or a tool whose
// rule content it does not understand, runs the hook.
type ifRule struct {
	text    string
	tool    string
	content string
	// projectDir anchors "/path" patterns (the settings file's project).
	projectDir string
	// realProjectDir and realHome are the project and the home directory
	// with their symlinks resolved, at load (see pathMatches).
	realProjectDir, realHome string
}

var ruleSyntax = regexp.MustCompile(`^\s*([A-Za-z0-9_*.-]+)\s*(?:\((.*)\))?\s*$`)

func parseIfRule(text, projectDir string) (*ifRule, error) {
	m := ruleSyntax.FindStringSubmatch(text)
	if m == nil {
		return nil, fmt.Errorf("\"if\" %q is not a permission rule like Bash(git *) or Edit(*.ts)", text)
	}
	r := &ifRule{text: text, tool: m[1], content: strings.TrimSpace(m[2]), projectDir: projectDir}
	switch {
	case strings.HasPrefix(r.content, "~/"):
		home, _ := os.UserHomeDir()
		r.realHome = realDir(home)
	case strings.HasPrefix(r.content, "/") && !strings.HasPrefix(r.content, "//"):
		r.realProjectDir = realDir(projectDir)
	}
	return r, nil
}

// matches reports whether a call of tool with args matches the rule. names
// are every name the tool goes by (its Claude Code aliases and its Fenix
// name); root is the workspace root.
func (r *ifRule) matches(names []string, tool string, args map[string]any, root string) bool {
	named := false
	for _, n := range names {
		if n == r.tool {
			named = true
		}
	}
	if !named {
		return false
	}
	if r.content == "" || r.content == "*" {
		return true
	}
	switch tool {
	case "exec_command", "process_exec":
		return bashRuleMatches(r.content, str(args, "command_line"))
	case "workspace_read", "workspace_write", "workspace_edit", "workspace_list", "workspace_search":
		return r.pathMatches(str(args, "path"), root)
	case "web_fetch":
		return domainMatches(r.content, str(args, "url"))
	case "spawn_subagent":
		ok, err := doublestar.Match(r.content, str(args, "profile"))
		return ok || err != nil
	}
	// Rule content Fenix cannot evaluate for this tool: run the hook.
	return true
}

// bashRuleMatches checks each simple command of a shell command line
// against a Bash rule's pattern, with leading VAR=value assignments
// stripped and commands inside $() and backticks included. A command it
// cannot parse, or whose program is dynamic, matches; so does one with
// expansions when the pattern names more than the program.
func bashRuleMatches(pattern, command string) bool {
	matched, uncertain := bashRuleMatch(pattern, command)
	return matched || uncertain
}

// bashRuleMatch tells a command that certainly matches a Bash rule's
// pattern from one Fenix cannot judge: unparseable, a dynamic program, or
// an expansion where the pattern names more than the program.
func bashRuleMatch(pattern, command string) (matched, uncertain bool) {
	sc, ok := parseShellCommands(command)
	return bashRuleMatchParsed(pattern, sc, ok)
}

// bashRuleMatchParsed is bashRuleMatch on a command line already parsed
// (ok false: it could not be). Every reading of every command counts (see
// shellCommand): bash's and sh's words, with and without wrappers, and a
// program path's name. A program Fenix cannot name (an expansion, or a
// glob the rule's program does not fit) is uncertain unless another
// command matches.
func bashRuleMatchParsed(pattern string, sc shellCommands, ok bool) (matched, uncertain bool) {
	pattern, prefixRule := bashPattern(pattern)
	if !ok {
		return false, true
	}
	ruleProgram, _, _ := strings.Cut(pattern, " ")
	for _, c := range sc.commands {
		for _, argv := range c.readings {
			m, u := readingMatches(pattern, prefixRule, ruleProgram, argv)
			if m {
				return true, false
			}
			uncertain = uncertain || u
		}
	}
	if uncertain {
		return false, true
	}
	// A pattern "specifies more than the command name" when it has more
	// than one word besides wildcards ("git push *", not "rm *").
	words := 0
	for _, f := range strings.Fields(pattern) {
		if f != "*" {
			words++
		}
	}
	return false, sc.expansion && words > 1
}

// readingMatches applies a deny or ask rule's pattern to one argument
// vector, under each name its program may have: as written and, for a
// path, its last element. A dynamic word in an argument matches as "".
func readingMatches(pattern string, prefix bool, ruleProgram string, argv []shellArg) (matched, uncertain bool) {
	rest := make([]string, len(argv)-1)
	for i, a := range argv[1:] {
		rest[i] = a.value
	}
	var names []string
	switch p := argv[0]; {
	case p.dynamic:
		uncertain = true
		if p.tail != "" {
			names = append(names, p.tail)
		}
	case p.glob:
		switch {
		case ruleProgram == "" || strings.Contains(ruleProgram, "*"):
			uncertain = true
		case globMatches(p.pattern, ruleProgram) || globMatches(baseName(p.pattern), ruleProgram):
			names = append(names, ruleProgram)
		}
	default:
		names = append(names, p.value)
		if base := baseName(p.value); base != p.value && base != "" {
			names = append(names, base)
		}
	}
	for _, name := range names {
		if commandMatches(pattern, strings.Join(append([]string{name}, rest...), " "), prefix) {
			return true, false
		}
	}
	return false, uncertain
}

// globMatches reports whether a shell glob (as expand.Pattern renders
// it) matches a name; a glob it cannot read matches, as it may.
func globMatches(glob, name string) bool {
	re, err := pattern.Regexp(glob, pattern.Filenames|pattern.EntireString)
	if err != nil {
		return true
	}
	ok, err := regexp.MatchString(re, name)
	return ok || err != nil
}

// bashPattern splits the legacy prefix form "git push:*" into its prefix
// and true.
func bashPattern(pattern string) (string, bool) {
	pattern = strings.TrimSpace(pattern)
	if p, ok := strings.CutSuffix(pattern, ":*"); ok {
		return p, true
	}
	return pattern, false
}

// commandMatches applies a Bash rule pattern, where "*" matches any run of
// characters, to one simple command.
func commandMatches(pattern, command string, prefix bool) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*")
	if prefix {
		re += "(\\s.*)?$"
	} else {
		re += "$"
	}
	// "git *" also matches a bare "git", as Claude Code's word patterns do.
	if strings.HasSuffix(pattern, " *") && command == strings.TrimSuffix(pattern, " *") {
		return true
	}
	compiled, ok := patternCache.Load(re)
	if !ok {
		c, err := regexp.Compile(re)
		if err != nil {
			return true
		}
		compiled, _ = patternCache.LoadOrStore(re, c)
	}
	return compiled.(*regexp.Regexp).MatchString(command)
}

// patternCache holds the compiled Bash rule patterns: a worker's rules are
// few and fixed, and every tool call applies them.
var patternCache sync.Map

// pathMatches applies a Read or Edit rule to a workspace path as the
// gitignore specification reads a pattern: "//abs" is absolute, "~/p" is
// under the home directory, "/p" is under the project directory, "./p"
// and "p" are under the workspace (Fenix's working directory); a pattern
// with no slash but a trailing one matches at any depth below it, one
// with a slash is anchored; a trailing slash matches directories only;
// and a pattern that matches a directory covers everything beneath it.
//
// The directories a pattern is anchored at and the workspace root are
// compared as named and, when a symlink on the way makes them other
// names, as the directories they are: a workspace reached as
// /home/me/app, a link to /srv/app, holds the project /srv/app's
// "/secrets" and "//srv/app/secrets" (Claude Code follows symlinks too).
func (r *ifRule) pathMatches(rel, root string) bool {
	return r.pathMatchesIn(rel, root, func() string { return realDir(root) })
}

// pathMatchesIn is pathMatches with the workspace root's resolved form
// from realRoot, asked only when the names alone do not match (a caller
// judging many paths in one workspace resolves it once).
func (r *ifRule) pathMatchesIn(rel, root string, realRoot func() string) bool {
	pattern, dirOnly := strings.CutSuffix(r.content, "/")
	named, namedTarget := r.anchor(pattern, root, root, rel, false)
	if pathPatternMatches(named, namedTarget, dirOnly) {
		return true
	}
	resolvedRoot := root
	if root != "" {
		resolvedRoot = realRoot()
	}
	real, realTarget := r.anchor(pattern, root, resolvedRoot, rel, true)
	if real == named && realTarget == namedTarget {
		return false
	}
	return pathPatternMatches(real, realTarget, dirOnly)
}

// anchor makes a rule's pattern (its trailing slash cut) absolute and
// the path it judges too, with the directories they are anchored at as
// named or, when real, with their symlinks resolved (the workspace root
// as resolved is given; the project's and the home's were at load).
func (r *ifRule) anchor(pattern, root, resolvedRoot, rel string, real bool) (string, string) {
	base := root
	if real {
		base = resolvedRoot
	}
	switch {
	case strings.HasPrefix(pattern, "//"):
		pattern = pattern[1:]
		if real {
			pattern = realLiteralPrefix(pattern)
		}
	case strings.HasPrefix(pattern, "~/"):
		home, _ := os.UserHomeDir()
		if real && r.realHome != "" {
			home = r.realHome
		}
		pattern = joinPattern(home, pattern[2:])
	case strings.HasPrefix(pattern, "/"):
		project := r.projectDir
		switch {
		case project == "":
			project = base
		case real && r.realProjectDir != "":
			project = r.realProjectDir
		}
		pattern = joinPattern(project, pattern[1:])
	case strings.HasPrefix(pattern, "./"):
		pattern = joinPattern(base, pattern[2:])
	case !strings.Contains(pattern, "/"):
		pattern = joinPattern(base, "**/"+pattern)
	default:
		pattern = joinPattern(base, pattern)
	}
	if rel == "" {
		rel = "."
	}
	return pattern, path.Clean(filepath.ToSlash(absPath(base, rel)))
}

// pathPatternMatches matches an absolute pattern against an absolute
// path and each directory above it.
func pathPatternMatches(pattern, target string, dirOnly bool) bool {
	for p, first := target, true; ; first = false {
		if !(dirOnly && first) || isDir(p) {
			ok, err := doublestar.Match(pattern, p)
			if ok || err != nil {
				return true
			}
			if first {
				// "dir/**" also covers the directory itself.
				if ok, _ := doublestar.Match(pattern, p+"/"); ok {
					return true
				}
			}
		}
		parent := path.Dir(p)
		if parent == p || parent == "." {
			return false
		}
		p = parent
	}
}

// realDir is the directory d with its symlinks resolved; where d does not
// exist (yet), its deepest existing ancestor is resolved and the rest
// kept. d as given when nothing resolves.
func realDir(d string) string {
	if d == "" {
		return d
	}
	rest := ""
	for p := filepath.Clean(d); ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return d
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// realLiteralPrefix resolves the symlinks of an absolute glob's leading
// directories that hold no pattern characters: "/home/me/app/**/*.pem",
// with /home/me/app a link to /srv/app, is "/srv/app/**/*.pem".
func realLiteralPrefix(pattern string) string {
	parts := strings.Split(pattern, "/")
	n := 0
	for n < len(parts)-1 && !strings.ContainsAny(parts[n], `*?[]{}\`) {
		n++
	}
	if n <= 1 {
		return pattern
	}
	prefix := strings.Join(parts[:n], "/")
	real := realDir(prefix)
	if real == prefix {
		return pattern
	}
	return joinPattern(real, strings.Join(parts[n:], "/"))
}

// joinPattern anchors a rule's pattern at a directory, whose own name is
// matched literally.
func joinPattern(dir, pattern string) string {
	if dir == "" {
		return pattern
	}
	return strings.TrimSuffix(escapeGlob(filepath.ToSlash(dir)), "/") + "/" + pattern
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isDir(p string) bool {
	info, err := os.Stat(filepath.FromSlash(p))
	return err == nil && info.IsDir()
}

// domainMatches applies "domain:host" (or "domain:*.host") to a URL; a
// URL without a host Fenix can read matches, as it may go anywhere.
func domainMatches(content, rawURL string) bool {
	matched, known := domainMatch(content, rawURL)
	return matched || !known
}

// domainMatch compares a URL's host with a rule's domain, both
// normalized as a resolver sees them: lowercase, without a trailing dot,
// in IDNA ASCII form. userinfo, port and percent-encoding are the URL
// parser's. As Claude Code documents, "domain:example.com" names that
// host only; "domain:*.example.com" names its subdomains. known is false
// for a URL whose host cannot be read, or a specifier other than
// domain:; matched is then false.
func domainMatch(content, rawURL string) (matched, known bool) {
	domain, ok := strings.CutPrefix(content, "domain:")
	if !ok {
		return false, false // a specifier Fenix cannot read
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return false, false
	}
	host, ok := normalHost(u.Hostname())
	if !ok {
		return false, false
	}
	if suffix, wild := strings.CutPrefix(domain, "*."); wild {
		suffix, ok := normalHost(suffix)
		return ok && strings.HasSuffix(host, "."+suffix), true
	}
	domain, ok = normalHost(domain)
	return ok && host == domain, true
}

// normalHost is a host name as DNS compares it.
func normalHost(h string) (string, bool) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" {
		return "", false
	}
	if net.ParseIP(h) != nil {
		return h, true
	}
	ascii, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", false
	}
	return ascii, true
}
