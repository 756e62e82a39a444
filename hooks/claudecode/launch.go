package claudecode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// notStartedError is a command hook that could not start: its program or
// script is missing or not executable (spawn failed, or the shell exited
// 127 or 126). Claude Code's onFailure covers it: a hook with "block"
// blocks, any other fails open; either way the worker logs it at error
// level naming the file, since a guard that cannot start guards nothing.
type notStartedError struct {
	command string
	// file is the program or script that could not be run, when known.
	file string
	dir  string
	err  error
}

func (e *notStartedError) Error() string {
	what := fmt.Sprintf("command %q could not start", e.command)
	if e.file != "" {
		what += fmt.Sprintf(" (%s)", e.file)
	}
	if e.dir != "" {
		what += " in " + e.dir
	}
	if e.err != nil {
		what += ": " + e.err.Error()
	}
	return what
}

func (e *notStartedError) Unwrap() error { return e.err }

// File is the program or script that could not be run.
func (e *notStartedError) File() string { return e.file }

// shellNotStarted recognizes a shell's own "could not run it" exits:
// 127 (not found) and 126 (found but not executable), with the shell's
// message on stderr.
func shellNotStarted(code int, stderr string) bool {
	if code != 127 && code != 126 {
		return false
	}
	s := strings.ToLower(stderr)
	return strings.Contains(s, "not found") || strings.Contains(s, "no such file") ||
		strings.Contains(s, "permission denied") || strings.Contains(s, "cannot execute")
}

// scriptFiles are the files a command hook runs: each simple command's
// program when it is a path, and its arguments that name scripts (by
// extension). Redirect targets and other paths are data, not launched,
// so a missing one is the command's business. Relative paths resolve
// against dir when it is set, else they are left out.
func scriptFiles(command string, args []string, execForm bool, vars map[string]string, dir string) []string {
	var out []string
	for _, w := range launchedPaths(command, args, execForm, vars) {
		if !filepath.IsAbs(w) {
			if dir == "" {
				continue
			}
			w = filepath.Join(dir, w)
		}
		out = appendNew(out, filepath.Clean(w))
	}
	return out
}

// launchedPaths are the words of a command that name the scripts it
// launches, rendered with vars (relative ones as written).
func launchedPaths(command string, args []string, execForm bool, vars map[string]string) []string {
	var words []string
	if execForm {
		for _, w := range append([]string{command}, args...) {
			words = append(words, expandKnown(w, vars))
		}
		return launchedWords(words, vars)
	}
	for _, rendered := range simpleCommands(command, vars) {
		words = append(words, launchedWords(rendered, vars)...)
	}
	return words
}

// simpleCommands parses a shell-form command into the words of each
// simple command, rendered with vars ("" for a word that does not render);
// nil when it does not parse (sh will say why when it runs).
func simpleCommands(command string, vars map[string]string) [][]string {
	file, err := syntax.NewParser().Parse(strings.NewReader(command), "")
	if err != nil {
		return nil
	}
	var calls [][]string
	syntax.Walk(file, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok {
			var rendered []string
			for _, w := range call.Args {
				s, _ := renderWord(w.Parts, vars)
				rendered = append(rendered, s)
			}
			calls = append(calls, rendered)
		}
		return true
	})
	return calls
}

// launchedWords picks the program (when it is a path) and the script
// arguments out of one simple command's words.
func launchedWords(words []string, vars map[string]string) []string {
	var out []string
	for i, w := range words {
		if w == "" || !looksLikePath(w, vars) {
			continue
		}
		if i == 0 && strings.Contains(w, "/") || hasScriptExtension(w) {
			out = append(out, w)
		}
	}
	return out
}

func hasScriptExtension(w string) bool {
	for _, ext := range scriptExtensions {
		if strings.HasSuffix(w, ext) {
			return true
		}
	}
	return false
}

// missingScript is the first of files that does not exist, "" if none.
func missingScript(files []string) string {
	for _, f := range files {
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			return f
		}
	}
	return ""
}

// programNotStarted is whether a start failed in exec itself — the
// program not found or not executable — rather than in the worker's
// confinement: the hook could not start, as without confinement.
func programNotStarted(err error) bool {
	var pathErr *os.PathError
	return errors.As(err, new(*exec.Error)) || errors.As(err, &pathErr) && pathErr.Op == "fork/exec"
}

// unconfinedError is a command hook the worker's Launcher could not start
// in its domain (keptFromAnswering): run outside it, the hook could be
// made to rewrite what governs the agent.
type unconfinedError struct{ err error }

func (e *unconfinedError) Error() string {
	return "could not be started in the worker's confinement, so it fails closed: " + e.err.Error()
}

func (e *unconfinedError) Unwrap() error { return e.err }

// unrunnable says why the script a hook starts as its program (words[0],
// a path) cannot start — not executable (sh exits 126), or its #! names
// an interpreter that is not there (127) — or "" when it can, or is not
// a script of the hook's. Such a hook fails on every call, which lets
// the call through unless the hook fails closed.
func unrunnable(path string) string {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return ""
	}
	if info.Mode()&0o111 == 0 {
		return "is not executable (mode " + info.Mode().Perm().String() + ")"
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := f.Read(head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return ""
	}
	interpreter := fields[0]
	if filepath.Base(interpreter) == "env" && len(fields) > 1 {
		for _, f := range fields[1:] {
			if strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
				continue
			}
			if _, err := exec.LookPath(f); err != nil {
				return "names the interpreter " + f + " (#!" + strings.Join(fields, " ") + "), which is not on the worker's PATH"
			}
			return ""
		}
		return ""
	}
	if _, err := os.Stat(interpreter); err != nil {
		return "names the interpreter " + interpreter + ", which is not there"
	}
	return ""
}
