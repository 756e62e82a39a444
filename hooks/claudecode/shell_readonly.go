package claudecode

import (
	"path"
	"slices"
	"strings"
)

// Claude Code runs a built-in set of read-only Bash commands without
// asking in every mode, so dontAsk does not deny them: ls, cat, echo,
// pwd, head, tail, grep, find, wc, which, diff, stat, du, cd into the
// working directory, and read-only forms of git. Fenix recognizes the
// same set, judged as strictly as it can tell: a line is read-only when
// each of its commands is, with nothing expanded when it runs, no
// variable set that changes what runs, and no output written to a file.

// readOnlyPrograms are the commands read-only whatever their flags.
var readOnlyPrograms = map[string]bool{"ls": true, "cat": true, "echo": true, "pwd": true, "head": true, "tail": true,
	"grep": true, "wc": true, "which": true, "diff": true, "stat": true, "du": true}

// findWrites are find's actions that run a command or write a file.
var findWrites = []string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}

// readOnlyGit are git's subcommands that only read, with the options
// that would make them write or run a program refused (gitReadOnly).
var readOnlyGit = []string{"status", "log", "diff", "show", "rev-parse", "ls-files", "blame"}

// listingGit are git's subcommands that only read when they list: with
// no argument, or only these options (a name would create or rename).
var listingGit = map[string][]string{
	"branch": {"--show-current", "--list", "-l", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose"},
	"remote": {"-v", "--verbose"},
}

// readOnlyLine reports whether a shell call's line is made of read-only
// commands only.
func (c *judgedCall) readOnlyLine() bool {
	sc, ok := c.shell()
	if !ok || sc.expansion || len(sc.commands) == 0 || c.unsafeEnv() != "" || len(sc.redirected) > 0 {
		return false
	}
	cds, gits := false, false
	for _, cmd := range sc.commands {
		if cmd.nested || len(cmd.readings) != 1 || len(cmd.readings[0]) == 0 {
			return false // a script argument, braces, or a wrapper to peel
		}
		argv := cmd.readings[0]
		if argv[0].dynamic || argv[0].glob {
			return false
		}
		switch name := argv[0].value; {
		case readOnlyPrograms[name]:
		case name == "find":
			if slices.ContainsFunc(argv[1:], func(a shellArg) bool { return a.dynamic || a.glob || slices.Contains(findWrites, a.value) }) {
				return false
			}
		case name == "cd":
			if len(argv) != 2 || !withinWorkspace(argv[1]) {
				return false
			}
			cds = true
		case name == "git":
			if !gitReadOnly(argv) {
				return false
			}
			gits = true
		default:
			return false
		}
	}
	// git in another directory runs that directory's hooks and config.
	return !(cds && gits)
}

// withinWorkspace reports whether a cd's static, relative target stays
// in the workspace.
func withinWorkspace(a shellArg) bool {
	if a.dynamic || a.glob || a.value == "" || path.IsAbs(a.value) || strings.HasPrefix(a.value, "~") || a.value == "-" {
		return false
	}
	cleaned := path.Clean(a.value)
	return cleaned != ".." && !strings.HasPrefix(cleaned, "../")
}

// gitReadOnly reports whether a git command line is one of readOnlyGit
// with no global option before it and none that writes a file (--output)
// or runs an external diff program.
func gitReadOnly(argv []shellArg) bool {
	if len(argv) < 2 {
		return false
	}
	if options, ok := listingGit[argv[1].value]; ok {
		return !slices.ContainsFunc(argv[2:], func(a shellArg) bool { return a.dynamic || !slices.Contains(options, a.value) })
	}
	if !slices.Contains(readOnlyGit, argv[1].value) {
		return false
	}
	return !slices.ContainsFunc(argv[2:], func(a shellArg) bool {
		return a.dynamic || a.glob || strings.HasPrefix(a.value, "--output") || a.value == "-o" ||
			strings.HasPrefix(a.value, "--ext-diff") || strings.HasPrefix(a.value, "--textconv")
	})
}
