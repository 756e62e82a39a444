package claudecode

import (
	"regexp"
	"slices"
	"strings"
)

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
	"doas": {short: "Cu"},
	// command and builtin run their arguments (command -v only looks one
	// up, and an option keeps a wrapper from being stripped); zsh's noglob
	// runs its arguments unglobbed.
	"command": {documented: true},
	"exec":    {short: "a"},
	"builtin": {documented: true},
	"noglob":  {documented: true},
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
		if cmds := findCommands(last.argv); len(cmds) > 0 {
			// Each is a strict part of argv, so this ends.
			for _, cmd := range cmds {
				out = append(out, unwrapAll(cmd)...)
			}
			return out
		}
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

// findActions are find's actions that run a command: its words follow,
// up to a ";" or "+" word.
var findActions = []string{"-exec", "-execdir", "-ok", "-okdir"}

// findCommands are the commands a find command line runs, "{}" left as
// written; none for any other program.
func findCommands(argv []shellArg) [][]shellArg {
	if len(argv) == 0 || programName(argv[0]) != "find" {
		return nil
	}
	var cmds [][]shellArg
	for i := 1; i < len(argv); i++ {
		if !slices.Contains(findActions, argv[i].value) {
			continue
		}
		start := i + 1
		for i = start; i < len(argv) && argv[i].value != ";" && argv[i].value != "+"; i++ {
		}
		if i > start {
			cmds = append(cmds, argv[start:i])
		}
	}
	return cmds
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
// wrappers (timeout, time, nice, nohup, stdbuf, the builtins command and
// builtin, zsh's noglob, and xargs without flags),
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
