package claudecode

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A hook runs on every call it matches, so what starts before its first
// line is paid per call. Version managers (pyenv, rbenv, nodenv, goenv,
// asdf, jenv) put a shell script named after the interpreter in a
// "shims" directory on PATH; it starts bash and the manager, which then
// execs the interpreter. Under pyenv that is 0.31 s before python starts
// against 40 ms for python itself (README, Hook processes). The loader
// warns about such a command so the user can name the interpreter.

// shellShim reports whether the program name resolves on PATH to a shell
// script in a directory named "shims", and where.
func shellShim(name string) (string, bool) {
	path, err := exec.LookPath(name)
	if err != nil || filepath.Base(filepath.Dir(path)) != "shims" {
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := f.Read(head)
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) || !bytes.Contains(line, []byte("sh")) {
		return "", false
	}
	return path, true
}

// launchedPrograms are the programs a command runs by bare name (found on
// PATH): the first word of each simple command, past `env`, `exec` and
// `command` and their flags and assignments.
func launchedPrograms(command string, args []string, execForm bool) []string {
	calls := [][]string{append([]string{command}, args...)}
	if !execForm {
		calls = simpleCommands(command, nil)
	}
	var out []string
	for _, words := range calls {
		for _, w := range words {
			if w == "env" || w == "exec" || w == "command" || strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
				continue
			}
			if w != "" && !strings.Contains(w, "/") {
				out = appendNew(out, w)
			}
			break
		}
	}
	return out
}

// warnShims warns about each program of a command hook that starts
// through a version manager's shell shim.
func (src *Source) warnShims(where, command string, args []string, execForm bool) {
	for _, name := range launchedPrograms(command, args, execForm) {
		if shim, ok := shellShim(name); ok {
			src.warn("%s: %q is a version manager's shell shim on the worker's PATH (%s): it starts bash and the manager before the interpreter on every call the hook runs for (pyenv's shim: 0.31 s, python itself: 40 ms); name the interpreter by its path in the command, e.g. the path `pyenv which %s` prints", where, name, shim, name)
		}
	}
}
