package claudecode

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

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
	// unsafeEnv names the first variable the line sets that allow rules do
	// not look past (see claudeSafeEnvVars), "" for none.
	unsafeEnv string
	// writes names the first file the line's redirections write
	// (fileWrite), "" for none.
	writes string
	// redirected are all the files the line's redirections write, "?" for
	// one known only when the line runs.
	redirected []string
	// unreadable says why a line bash reads cannot be read in the grammar
	// of the shell that runs it, "" otherwise.
	unreadable string
}

// maxNesting bounds how deep sh -c and eval scripts are read; a deeper
// one counts as a dynamic program.
const maxNesting = 4

func parseShellCommands(command string) (shellCommands, bool) {
	var sc shellCommands
	ok := sc.add(command, 0, false)
	return sc, ok
}

// shellGrammars are the grammars a line is read in: bash's, which
// Claude Code's rules are written for, and, where /bin/sh is not bash
// (dash on Debian), the POSIX shell's too, since that is what runs an
// exec_command line. The two split some lines differently (dash has no
// $'…' quoting, so `echo $'\' ; cat .env # '` is one echo to bash and an
// echo and a cat to dash); the rules judge the commands of both, and a
// line either cannot read is one Fenix cannot judge.
var shellGrammars = sync.OnceValue(func() []syntax.LangVariant {
	// The shell exec_command runs lines in (tools/procs.Shell).
	if real, err := filepath.EvalSymlinks("/bin/sh"); err == nil && filepath.Base(real) == "bash" {
		return []syntax.LangVariant{syntax.LangBash}
	}
	return []syntax.LangVariant{syntax.LangBash, syntax.LangPOSIX}
})

// add reads a script's commands into sc, in every one of shellGrammars;
// false when it does not parse in one of them.
func (sc *shellCommands) add(script string, depth int, nested bool) bool {
	for _, grammar := range shellGrammars() {
		file, err := syntax.NewParser(syntax.Variant(grammar)).Parse(strings.NewReader(script), "")
		if err != nil {
			if grammar == syntax.LangPOSIX && sc.unreadable == "" {
				sc.unreadable = fmt.Sprintf("/bin/sh, which runs it, reads it otherwise than bash (%v)", err)
			}
			return false
		}
		sc.addFile(script, file, depth, nested)
	}
	return true
}

// addFile reads the commands of a parsed script into sc.
func (sc *shellCommands) addFile(script string, file *syntax.File, depth int, nested bool) {
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp, *syntax.ProcSubst:
			sc.expansion = true
		case *syntax.CallExpr:
			sc.noteAssignments(n.Assigns)
			if len(n.Args) > 0 {
				sc.addCall(script, n, depth, nested)
			}
		case *syntax.DeclClause:
			sc.noteAssignments(n.Args)
		case *syntax.Stmt:
			if sc.writes == "" {
				sc.writes = fileWrite(n.Redirs)
			}
			sc.redirected = append(sc.redirected, fileWrites(n.Redirs)...)
		}
		return true
	})
}

// noteAssignments records the first variable a command line sets that
// allow rules do not look past.
func (sc *shellCommands) noteAssignments(assigns []*syntax.Assign) {
	if sc.unsafeEnv == "" {
		sc.unsafeEnv = unsafeAssignment(assigns)
	}
}

func (sc *shellCommands) addCall(script string, call *syntax.CallExpr, depth int, nested bool) {
	if assigns, ok := declaration(call); ok {
		// export NAME=value read as a POSIX shell's command: what bash
		// reads as a declaration (noteAssignments), not a command.
		sc.noteAssignments(assigns)
		return
	}
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

// declarations are the builtins whose arguments set variables, which a
// POSIX shell's grammar reads as commands and bash's as declarations.
var declarations = map[string]bool{"export": true, "readonly": true, "local": true, "declare": true, "typeset": true}

// declaration is a call of one of declarations whose arguments are all
// static flags, NAME or NAME=value, as the assignments bash would read.
func declaration(call *syntax.CallExpr) ([]*syntax.Assign, bool) {
	if lit := call.Args[0].Lit(); !declarations[lit] {
		return nil, false
	}
	var assigns []*syntax.Assign
	for _, w := range call.Args[1:] {
		a := staticArg(w)
		if a.dynamic || a.glob || isDynamic(w) {
			return nil, false
		}
		if strings.HasPrefix(a.value, "-") {
			continue
		}
		name, value, set := strings.Cut(a.value, "=")
		if !syntax.ValidName(name) {
			return nil, false
		}
		assign := &syntax.Assign{Name: &syntax.Lit{Value: name}, Naked: !set}
		if set {
			assign.Value = &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: value}}}
		}
		assigns = append(assigns, assign)
	}
	return assigns, true
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
