package claudecode

import (
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// shellArg is one argument of a simple command as the shell passes it.
type shellArg struct {
	// value is the word after quote removal; "" when dynamic.
	value string
	// dynamic marks a word holding a parameter expansion, command or
	// process substitution or arithmetic: its value exists only when the
	// command runs.
	dynamic bool
	// tail is a dynamic word's static end after its last '/' ("rm" in
	// "$DIR/rm"): the program's name when the word is a program.
	tail string
	// glob marks an unquoted *, ? or [ the shell expands to file names;
	// pattern is then the word as a shell pattern.
	glob    bool
	pattern string
}

// shellCommand is one simple command of a command line.
type shellCommand struct {
	// readings are the argument vectors deny and ask rules judge: the
	// words as bash expands them (braces included) and, where that
	// differs, as sh reads them, each also with every wrapper peeled off
	// (see unwrap).
	readings [][]shellArg
	// allow is the text an allow rule must match: the words as written,
	// after the wrappers Claude Code strips. Empty when no allow rule may
	// approve the command: its words are known only once the shell
	// expands braces or globs.
	allow string
	// nested marks a command read from another's script argument
	// (sh -c, eval): deny and ask rules judge it, allow rules judge the
	// command that runs it.
	nested bool
}

// shellCommands are the simple commands of a command line, those inside
// $(), backticks and script arguments included.
type shellCommands struct {
	commands []shellCommand
	// expansion marks a $(), backticks, $VAR, $(( )) or <() anywhere in
	// the line.
	expansion bool
}

// maxNesting bounds how deep sh -c and eval scripts are read; a deeper
// one counts as a dynamic program.
const maxNesting = 4

func parseShellCommands(command string) (shellCommands, bool) {
	var sc shellCommands
	return sc, sc.add(command, 0, false)
}

// add reads a script's commands into sc; false when it does not parse.
func (sc *shellCommands) add(script string, depth int, nested bool) bool {
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		return false
	}
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp, *syntax.ProcSubst:
			sc.expansion = true
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				sc.addCall(script, n, depth, nested)
			}
		}
		return true
	})
	return true
}

func (sc *shellCommands) addCall(script string, call *syntax.CallExpr, depth int, nested bool) {
	cmd := shellCommand{nested: nested}
	var bashArgs, shArgs []shellArg
	expanded := false // brace expansion changed the words
	globbed := false
	for _, w := range call.Args {
		sh, bash := readWord(w)
		shArgs = append(shArgs, sh)
		bashArgs = append(bashArgs, bash...)
		if len(bash) != 1 || bash[0] != sh {
			expanded = true
		}
		for _, a := range bash {
			globbed = globbed || a.glob
		}
		globbed = globbed || sh.glob
	}
	readings := [][]shellArg{bashArgs}
	if expanded {
		readings = append(readings, shArgs)
	}
	scripts := map[string]bool{}
	for _, argv := range readings {
		for _, r := range unwrapAll(argv) {
			cmd.readings = append(cmd.readings, r.argv)
			if r.script != nil && !scripts[r.script.value] {
				scripts[r.script.value] = true
				sc.addScript(*r.script, depth)
			}
		}
	}
	if !expanded && !globbed {
		words := make([]string, len(call.Args))
		for i, w := range call.Args {
			words[i] = script[w.Pos().Offset():w.End().Offset()]
		}
		cmd.allow = strings.Join(words[documentedWrappers(shArgs):], " ")
	}
	sc.commands = append(sc.commands, cmd)
}

// addScript reads the script a command runs (sh -c's, eval's); one it
// cannot read is a command whose program is unknown.
func (sc *shellCommands) addScript(s shellArg, depth int) {
	if s.dynamic || s.glob || depth+1 > maxNesting || !sc.add(s.value, depth+1, true) {
		sc.commands = append(sc.commands, shellCommand{nested: true, readings: [][]shellArg{{{dynamic: true}}}})
	}
}

// expandConfig expands quotes, escapes and braces and nothing else: it
// reads no environment, runs no command substitution and does not glob,
// and a tilde stays a tilde, as a rule spells it.
var expandConfig = &expand.Config{Env: tildeEnviron{}}

type tildeEnviron struct{}

func (tildeEnviron) Get(name string) expand.Variable {
	if user, ok := strings.CutPrefix(name, "HOME"); ok && (user == "" || user[0] == ' ') {
		return expand.Variable{Set: true, Kind: expand.String, Str: "~" + strings.TrimPrefix(user, " ")}
	}
	return expand.Variable{}
}

func (tildeEnviron) Each(func(string, expand.Variable) bool) {}

// readWord reads one word as sh does (quote removal) and as bash does
// (quote removal after brace expansion, which may make several words).
func readWord(w *syntax.Word) (sh shellArg, bash []shellArg) {
	if isDynamic(w) {
		a := shellArg{dynamic: true, tail: staticTail(w)}
		return a, []shellArg{a}
	}
	sh = staticArg(withoutBraces(w))
	braced := *w // SplitBraces rewrites the parts
	if !syntax.SplitBraces(&braced) {
		return sh, []shellArg{sh}
	}
	for sub, err := range expand.BracesSeq(expandConfig, &braced) {
		if err != nil { // a runaway {1..100000}: no telling what it makes
			return sh, []shellArg{{dynamic: true}}
		}
		bash = append(bash, staticArg(sub))
	}
	return sh, bash
}

// staticArg expands a word without expansions or braces.
func staticArg(w *syntax.Word) shellArg {
	fields, err := expand.Fields(expandConfig, w)
	if err != nil {
		return shellArg{dynamic: true}
	}
	a := shellArg{value: strings.ReplaceAll(strings.Join(fields, " "), braceStandIn, "{")}
	if p, err := expand.Pattern(expandConfig, w); err == nil && pattern.HasMeta(p, 0) {
		a.glob, a.pattern = true, strings.ReplaceAll(p, braceStandIn, "{")
	}
	return a
}

// braceStandIn replaces '{' where sh, which has no brace expansion, reads
// a word; the expander never sees a brace to expand.
const braceStandIn = "\x01"

func withoutBraces(w *syntax.Word) *syntax.Word {
	out := &syntax.Word{Parts: make([]syntax.WordPart, len(w.Parts))}
	for i, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.Contains(lit.Value, "{") {
			c := *lit
			c.Value = strings.ReplaceAll(lit.Value, "{", braceStandIn)
			p = &c
		}
		out.Parts[i] = p
	}
	return out
}

// isDynamic reports whether a word's value depends on the run: an
// expansion, a substitution, or an extended glob Fenix does not match.
func isDynamic(w *syntax.Word) bool {
	dynamic := false
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob:
			dynamic = true
		}
		return !dynamic
	})
	return dynamic
}

// staticTail is the literal end of a dynamic word after its last '/', or
// "" when an expansion comes after the last '/'.
func staticTail(w *syntax.Word) string {
	var tail string
	for i := len(w.Parts) - 1; i >= 0; i-- {
		var s string
		switch p := w.Parts[i].(type) {
		case *syntax.Lit:
			s = p.Value
		case *syntax.SglQuoted:
			s = p.Value
		default:
			return ""
		}
		if j := strings.LastIndexByte(s, '/'); j >= 0 {
			a := staticArg(&syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s[j+1:]}}})
			if a.glob || a.dynamic {
				return ""
			}
			return a.value + tail
		}
		tail = s + tail
	}
	return ""
}

// A wrapper is a command that runs its arguments as a command.
type wrapper struct {
	// short and long are the options that take an argument; flags and
	// longFlags those that take none.
	short, flags    string
	long, longFlags []string
	// operands count the words between the options and the command
	// (timeout's duration).
	operands int
	// assignments: NAME=value words may precede the command (env).
	assignments bool
	// documented marks Claude Code's process wrappers, stripped before
	// allow rules match too; the others only let deny and ask rules see
	// the command they run.
	documented bool
	// scriptShort and scriptLong are the options whose argument is a
	// command line (env -S).
	scriptShort string
	scriptLong  []string
}

var wrappers = map[string]wrapper{
	"timeout": {short: "sk", long: []string{"signal", "kill-after"}, flags: "v", longFlags: []string{"preserve-status", "foreground", "verbose"},
		operands: 1, documented: true},
	"time": {short: "fo", long: []string{"format", "output"}, flags: "pvaq", longFlags: []string{"portability", "verbose", "append", "quiet"},
		documented: true},
	"nice":   {short: "n", long: []string{"adjustment"}, flags: "0123456789", documented: true},
	"nohup":  {documented: true},
	"stdbuf": {short: "ioe", long: []string{"input", "output", "error"}, documented: true},
	// Claude Code strips a bare xargs only (see documentedWrappers).
	"xargs": {short: "aEdILnPs", long: []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}},
	"env": {short: "uCS", long: []string{"unset", "chdir", "split-string"}, assignments: true,
		scriptShort: "S", scriptLong: []string{"split-string"}},
	"sudo": {short: "CDghpRrTtUu", long: []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role",
		"command-timeout", "type", "other-user", "user"}},
	"doas":    {short: "Cu"},
	"command": {},
	"exec":    {short: "a"},
	"builtin": {},
}

// shells run the script of their -c option.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true}

// reading is one argument vector of a command, and the script it runs
// when it is a shell's -c, eval or env -S.
type reading struct {
	argv   []shellArg
	script *shellArg
}

// unwrapAll lists a command and every command found by peeling its
// wrappers off one at a time: "sudo nice rm x" gives itself, "nice rm x"
// and "rm x".
func unwrapAll(argv []shellArg) []reading {
	out := []reading{{argv: argv}}
	for range 16 { // wrappers of wrappers; bounded against "nice nice nice …"
		last := &out[len(out)-1]
		if s, ok := scriptOf(last.argv); ok {
			last.script = &s
			return out
		}
		inner, ok := unwrap(last.argv, false)
		if !ok || len(inner) == 0 {
			return out
		}
		out = append(out, reading{argv: inner})
	}
	return out
}

// unwrap returns the command a wrapper runs. strict refuses an option it
// does not know, which might take an argument.
func unwrap(argv []shellArg, strict bool) ([]shellArg, bool) {
	w, ok := wrappers[programName(argv[0])]
	if !ok {
		return nil, false
	}
	i := 1
	for i < len(argv) {
		a := argv[i]
		if a.dynamic {
			break
		}
		if a.value == "--" {
			i++
			break
		}
		if w.assignments && isAssignment(a.value) {
			i++
			continue
		}
		if !strings.HasPrefix(a.value, "-") || a.value == "-" {
			break
		}
		n, known := optionWords(w, a.value)
		if strict && !known {
			return nil, false
		}
		i += n
	}
	i += w.operands
	if i >= len(argv) {
		return nil, false
	}
	return argv[i:], true
}

// optionWords counts the words an option takes up (1, or 2 with its
// argument) and says whether the wrapper is known to have it.
func optionWords(w wrapper, opt string) (int, bool) {
	if name, ok := strings.CutPrefix(opt, "--"); ok {
		name, _, attached := strings.Cut(name, "=")
		switch {
		case slices.Contains(w.long, name):
			if attached {
				return 1, true
			}
			return 2, true
		case slices.Contains(w.longFlags, name):
			return 1, true
		}
		return 1, false
	}
	for i, r := range opt[1:] {
		switch {
		case strings.ContainsRune(w.short, r):
			if i+2 < len(opt) {
				return 1, true // the argument is attached: -n5, -oL
			}
			return 2, true
		case !strings.ContainsRune(w.flags, r):
			return 1, false
		}
	}
	return 1, true
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(s string) bool { return assignment.MatchString(s) }

// scriptOf returns the command line a command runs as a script: a
// shell's -c argument, eval's arguments, env -S's argument.
func scriptOf(argv []shellArg) (shellArg, bool) {
	name := programName(argv[0])
	switch {
	case name == "eval":
		return joinArgs(argv[1:]), len(argv) > 1
	case shells[name]:
		// -c makes the first operand after the options the script;
		// -o and +o take an option name.
		c := false
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			switch {
			case a.dynamic || a.value == "--" || !strings.HasPrefix(a.value, "-") && !strings.HasPrefix(a.value, "+"):
				if a.value == "--" && i+1 < len(argv) {
					a = argv[i+1]
				}
				return a, c
			case a.value == "-o" || a.value == "+o":
				i++
			case !strings.HasPrefix(a.value, "--") && strings.ContainsRune(a.value[1:], 'c'):
				c = true
			}
		}
		return shellArg{}, false
	}
	w, ok := wrappers[name]
	if !ok || w.scriptShort == "" {
		return shellArg{}, false
	}
	for i := 1; i < len(argv); {
		a := argv[i]
		if a.dynamic || !strings.HasPrefix(a.value, "-") || a.value == "--" {
			return shellArg{}, false
		}
		long, isLong := strings.CutPrefix(a.value, "--")
		long, value, attached := strings.Cut(long, "=")
		switch {
		case isLong && slices.Contains(w.scriptLong, long) && attached:
			return shellArg{value: value}, true
		case isLong && slices.Contains(w.scriptLong, long) && i+1 < len(argv):
			return argv[i+1], true
		case !isLong && strings.HasPrefix(a.value[1:], w.scriptShort) && len(a.value) > 2:
			return shellArg{value: a.value[2:]}, true
		case !isLong && a.value[1:] == w.scriptShort && i+1 < len(argv):
			return argv[i+1], true
		}
		n, _ := optionWords(w, a.value)
		i += n
	}
	return shellArg{}, false
}

func joinArgs(args []shellArg) shellArg {
	var out shellArg
	parts := make([]string, len(args))
	for i, a := range args {
		out.dynamic = out.dynamic || a.dynamic
		out.glob = out.glob || a.glob
		parts[i] = a.value
	}
	out.value = strings.Join(parts, " ")
	return out
}

// documentedWrappers counts the leading words of Claude Code's process
// wrappers (timeout, time, nice, nohup, stdbuf, and xargs without flags),
// which it strips before matching a rule; a wrapper with an option Fenix
// does not know is kept.
func documentedWrappers(argv []shellArg) int {
	skipped := 0
	for len(argv) > 0 {
		name := argv[0].value
		if argv[0].dynamic || argv[0].glob {
			break
		}
		var inner []shellArg
		switch {
		case name == "xargs":
			if len(argv) < 2 || strings.HasPrefix(argv[1].value, "-") {
				return skipped
			}
			inner = argv[1:]
		case wrappers[name].documented:
			var ok bool
			if inner, ok = unwrap(argv, true); !ok {
				return skipped
			}
		default:
			return skipped
		}
		skipped += len(argv) - len(inner)
		argv = inner
	}
	return skipped
}

// programName is the name a program word runs: its last path element.
func programName(a shellArg) string {
	if a.dynamic || a.glob {
		return ""
	}
	return baseName(a.value)
}

func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}
