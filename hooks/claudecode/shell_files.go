package claudecode

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Claude Code applies Read and Edit deny rules to the file commands it
// recognizes in Bash, not only to its file tools: `cat .env` falls under
// Read(./.env), and a redirection's target (`echo x > src/gen/a.ts`) is
// a write Edit(/src/gen/**) denies. A script that opens files itself is
// beyond any rule (the sandbox's deny lists hold those).

// fileReaders are the commands whose operands are files they read.
var fileReaders = map[string]bool{"cat": true, "head": true, "tail": true, "sed": true, "less": true, "more": true, "tac": true, "nl": true}

// readerOptionArgs are the readers' options whose argument is the next
// word (head -n 5), not a file.
var readerOptionArgs = map[string][]string{
	"head": {"-n", "-c", "--lines", "--bytes"},
	"tail": {"-n", "-c", "--lines", "--bytes", "--pid", "-s", "--sleep-interval", "--max-unchanged-stats"},
	"sed":  {"-e", "-f", "-l", "--expression", "--file", "--line-length"},
}

// maxShellFileBases bounds the directories a line's relative paths are
// judged in (the call's and each cd's).
const maxShellFileBases = 8

// shellFiles are the files a command line reads and writes as Claude Code
// recognizes them, relative to the workspace or absolute; unknown is set
// when one of them is known only once the line runs ($F, a cd "$D").
type shellFiles struct {
	reads, writes []string
	unknown       bool
}

// files lists the files of a parsed line run in cwd (relative to the
// workspace root). A relative path is judged in the call's directory and
// in every directory a cd of the line names, before or after it, since
// which applies depends on how the line runs; a path from the home (~/)
// is the workspace's, which commands get as HOME.
func (sc shellCommands) files(root, cwd string) shellFiles {
	var out shellFiles
	bases := []string{cwd}
	in := func(p string) []string {
		switch {
		case filepath.IsAbs(p):
			return []string{p}
		case p == "~" || strings.HasPrefix(p, "~/"):
			return []string{path.Clean("." + strings.TrimPrefix(p, "~"))}
		}
		var paths []string
		for _, b := range bases {
			paths = append(paths, path.Join(b, p))
		}
		return paths
	}
	// Every directory a cd names, first.
	for _, cmd := range sc.commands {
		for _, argv := range cmd.readings {
			if len(argv) < 2 || programName(argv[0]) != "cd" {
				continue
			}
			if argv[1].dynamic || argv[1].glob {
				out.unknown = true
				continue
			}
			for _, b := range in(argv[1].value) {
				switch {
				case slices.Contains(bases, b):
				case len(bases) == maxShellFileBases:
					out.unknown = true
				default:
					bases = append(bases, b)
				}
			}
		}
	}
	add := func(into *[]string, a shellArg) {
		switch {
		case a.dynamic:
			out.unknown = true
		case a.glob:
			patterns := []string{a.pattern}
			if !filepath.IsAbs(a.pattern) {
				patterns = nil
				for _, p := range in(a.pattern) {
					patterns = append(patterns, filepath.Join(root, p))
				}
			}
			for _, pattern := range patterns {
				matches, err := filepath.Glob(pattern)
				if err != nil || len(matches) > 1000 {
					out.unknown = true
					return
				}
				for _, m := range matches {
					if rel, err := filepath.Rel(root, m); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
						m = filepath.ToSlash(rel)
					}
					*into = append(*into, m)
				}
			}
		case a.value != "" && a.value != "-":
			*into = append(*into, in(a.value)...)
		}
	}
	for _, target := range sc.redirected {
		if target == "?" {
			out.unknown = true
			continue
		}
		out.writes = append(out.writes, in(target)...)
	}
	for _, cmd := range sc.commands {
		for _, argv := range cmd.readings {
			if len(argv) == 0 {
				continue
			}
			switch name := programName(argv[0]); {
			case name == "tee":
				for _, a := range operands(name, argv) {
					add(&out.writes, a)
				}
			case fileReaders[name]:
				files := operands(name, argv)
				if name == "sed" && !hasScriptOption(argv) && len(files) > 0 {
					files = files[1:] // the first operand is the script
				}
				for _, a := range files {
					add(&out.reads, a)
					if name == "sed" && inPlace(argv) {
						add(&out.writes, a)
					}
				}
			}
		}
	}
	return out
}

// operands are a command's words that are not options nor their
// arguments: everything after "--", and each word not starting with "-".
func operands(name string, argv []shellArg) []shellArg {
	var out []shellArg
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a.value == "--" && !a.dynamic:
			return append(out, argv[i+1:]...)
		case a.dynamic || !strings.HasPrefix(a.value, "-") || a.value == "-":
			out = append(out, a)
		case slices.Contains(readerOptionArgs[name], a.value):
			i++ // its argument
		}
	}
	return out
}

// hasScriptOption reports whether a sed command line names its script
// with -e or -f, so that its first operand is a file.
func hasScriptOption(argv []shellArg) bool {
	return slices.ContainsFunc(argv[1:], func(a shellArg) bool {
		return a.value == "-e" || a.value == "-f" || strings.HasPrefix(a.value, "--expression") || strings.HasPrefix(a.value, "--file")
	})
}

// inPlace reports whether a sed command line edits its files (-i).
func inPlace(argv []shellArg) bool {
	return slices.ContainsFunc(argv[1:], func(a shellArg) bool {
		return strings.HasPrefix(a.value, "--in-place") ||
			strings.HasPrefix(a.value, "-") && !strings.HasPrefix(a.value, "--") && strings.ContainsRune(a.value, 'i')
	})
}

// matchesShellFiles applies a Read or Edit deny rule to the files a shell
// call's line reads and writes: a Read rule to both (it also keeps a
// file from being written), an Edit rule to the writes. A line Fenix
// cannot parse, or a file it cannot name before the line runs, is
// uncertain.
func (r permissionRule) matchesShellFiles(c *judgedCall) (matched, uncertain bool) {
	sc, ok := c.shell()
	if !ok {
		return false, true
	}
	cwd := "."
	if cd := c.cd(); cd != "" {
		cwd = strings.TrimPrefix(cd, "cd ")
	}
	files := sc.files(c.root, cwd)
	judged := files.writes
	if r.rule.tool == "Read" {
		judged = append(slices.Clone(files.reads), files.writes...)
	}
	rule := r.rule.atAnyDepth()
	for _, p := range judged {
		if rule.pathMatchesIn(p, c.root, c.realRoot) {
			return true, false
		}
		// The file it reaches through symlinks, absolute ones included.
		abs := p
		if !filepath.IsAbs(p) && c.root != "" {
			abs = filepath.Join(c.root, p)
		}
		if real := realDir(abs); real != abs && rule.pathMatchesIn(real, c.root, c.realRoot) {
			return true, false
		}
	}
	return false, files.unknown
}
