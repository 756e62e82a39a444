package claudecode

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// What keeps a command line from every allow rule beyond its words: a
// variable that changes what runs, and output written to a file. A rule
// names a command; these make the line do something else than the rule's
// words say, so, as in Claude Code, the line is approved only by asking.

// claudeSafeEnvVars are the variables Claude Code lets an allow rule look
// past when a command line sets them (`NODE_ENV=test npm test`): none of
// them can load or run code. A command line that sets any other (PATH,
// LD_PRELOAD, NODE_OPTIONS, BASH_ENV, GIT_EXTERNAL_DIFF, …) before a
// command, on its own (`PATH=./bin; ls`) or with export and its kin, runs
// something other than what the rule names, so no allow rule approves it;
// deny and ask rules still judge the command behind the assignment.
var claudeSafeEnvVars = map[string]bool{
	"GOEXPERIMENT": true, "GOOS": true, "GOARCH": true, "CGO_ENABLED": true, "GO111MODULE": true,
	"RUST_BACKTRACE": true, "RUST_LOG": true,
	"NODE_ENV":         true,
	"PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true,
	"ANTHROPIC_API_KEY": true,
	"LANG":              true, "LANGUAGE": true, "LC_ALL": true, "LC_CTYPE": true, "LC_TIME": true, "CHARSET": true,
	"TERM": true, "COLORTERM": true, "NO_COLOR": true, "FORCE_COLOR": true, "TZ": true,
	"LS_COLORS": true, "LSCOLORS": true, "GREP_COLOR": true, "GREP_COLORS": true, "GCC_COLORS": true,
}

// unsafeAssignment names the first variable assigns set that is not in
// claudeSafeEnvVars, or "". Flags of export and its kin (`-x`) and names
// exported without a value set nothing.
func unsafeAssignment(assigns []*syntax.Assign) string {
	for _, a := range assigns {
		switch {
		case a.Name == nil:
			continue // a declaration's flag
		case a.Naked && a.Value == nil && a.Array == nil:
			continue // export NAME: the value stays
		case a.Index != nil || a.Array != nil || !claudeSafeEnvVars[a.Name.Value]:
			return a.Name.Value
		}
	}
	return ""
}

// unsafeCallEnv names the first variable of a call's "env" argument that
// is not in claudeSafeEnvVars, or "": the argument sets them as the
// command line's assignments would.
func unsafeCallEnv(args map[string]any) string {
	var names []string
	switch env := args["env"].(type) {
	case map[string]any:
		for name := range env {
			names = append(names, name)
		}
	case map[string]string:
		for name := range env {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if !claudeSafeEnvVars[name] {
			return name
		}
	}
	return ""
}

// notAFile are redirection targets that write no file.
var notAFile = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true}

// fileWrite names the first file a statement's redirections write, or "":
// output to /dev/null (or the command's own streams) and to another
// descriptor (2>&1) writes none.
func fileWrite(redirs []*syntax.Redirect) string {
	if files := fileWrites(redirs); len(files) > 0 {
		return files[0]
	}
	return ""
}

// fileWrites names every file a statement's redirections write, as
// fileWrite names the first.
func fileWrites(redirs []*syntax.Redirect) []string {
	var files []string
	for _, r := range redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		case syntax.DplOut:
			// >&2 and >&- move or close a descriptor; bash's >&word with a
			// name is &>word.
			if target := wordText(r.Word); target == "-" || isDigits(target) {
				continue
			}
		default:
			continue
		}
		if target := wordText(r.Word); !notAFile[target] {
			files = append(files, target)
		}
	}
	return files
}

// wordText is a redirection target as written, quotes removed where the
// word is plain; "?" for an expanded one (which marks the line anyway).
func wordText(w *syntax.Word) string {
	if w == nil {
		return "?"
	}
	if lit := w.Lit(); lit != "" {
		return lit
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if len(p.Parts) == 1 {
				if lit, ok := p.Parts[0].(*syntax.Lit); ok {
					b.WriteString(lit.Value)
					continue
				}
			}
			return "?"
		default:
			return "?"
		}
	}
	return b.String()
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
