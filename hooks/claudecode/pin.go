package claudecode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/hooks"
)

// ScriptStore is worker-owned, content-addressed storage for the scripts
// command hooks run, outside every workspace. At load each script a
// settings file's commands launch is copied here together with its
// directory (the helpers it imports come along), and the command is
// rewritten to run the copy: what the worker runs is not what the agent
// can write, so rewriting, hard-linking or moving the project's
// .claude/hooks/ changes nothing until the operator reloads the hooks.
// $CLAUDE_PROJECT_DIR still names the project, which scripts inspect.
//
// The store is mode 0700; each copied directory and its subdirectories
// are 0500, its files 0400 (0500 when executable), named by the SHA-256
// of the tree (relative names, executable bits and bytes).
type ScriptStore struct {
	dir string
}

// OpenScriptStore creates (or tightens) the store directory.
func OpenScriptStore(dir string) (*ScriptStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hook script store %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hook script store %s: %w", dir, err)
	}
	return &ScriptStore{dir: dir}, nil
}

// Dir is the store's directory.
func (s *ScriptStore) Dir() string { return s.dir }

// put copies the tree into the store, once per content.
func (s *ScriptStore) put(t *pinnedTree) error {
	final := filepath.Join(s.dir, t.hash[:32])
	t.stored = final
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(s.dir, ".pin-")
	if err != nil {
		return fmt.Errorf("hook script store: %w", err)
	}
	defer os.RemoveAll(tmp)
	var dirs []string
	for _, f := range t.files {
		path := filepath.Join(tmp, filepath.FromSlash(f.rel))
		if dir := filepath.Dir(path); dir != tmp {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("hook script store: %w", err)
			}
			dirs = append(dirs, dir)
		}
		mode := os.FileMode(0o400)
		if f.exec {
			mode = 0o500
		}
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			return fmt.Errorf("hook script store: %w", err)
		}
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("hook script store: %w", err)
		}
	}
	for _, rel := range t.packages {
		path := filepath.Join(tmp, filepath.FromSlash(rel))
		if dir := filepath.Dir(path); dir != tmp {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("hook script store: %w", err)
			}
			dirs = append(dirs, dir)
		}
		if err := os.Symlink(t.packageDir(rel), path); err != nil {
			return fmt.Errorf("hook script store: %w", err)
		}
	}
	// Deepest first, so a parent is still writable while its children
	// are tightened.
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, d := range append(dirs, tmp) {
		if err := os.Chmod(d, 0o500); err != nil {
			return fmt.Errorf("hook script store: %w", err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(final); statErr == nil {
			return nil // another load stored the same content
		}
		return fmt.Errorf("hook script store: %w", err)
	}
	return nil
}

// pinner pins one settings file's scripts.
type pinner struct {
	src   *Source
	store *ScriptStore
	// accepted is set when loading the accepted policy
	// (LoadOptions.Snapshot): the scripts come from its stored copies,
	// and nothing is read where the settings file points.
	accepted *SnapshotFile
	trees    []*pinnedTree
	// absent are the scripts commands launch that did not exist at load:
	// there was nothing to pin, and what appears there later (an agent
	// can write the project) is not run (see commandTransport.absent).
	absent []string
}

// treeFor reads (and stores) the directory of script, once per directory
// unless a later script of it was left out the first time.
func (p *pinner) treeFor(script string) (*pinnedTree, error) {
	dir, name := filepath.Dir(script), filepath.Base(script)
	if p.accepted != nil {
		return p.acceptedTree(dir, name)
	}
	alone := dir == p.src.Paths.ProjectDir || dir == p.src.Paths.PluginRoot
	launched := []string{name}
	at := -1
	for i, t := range p.trees {
		if t.source != dir {
			continue
		}
		if t.has(name) {
			return t, nil
		}
		at, launched = i, append(slices.Clone(t.launched), name)
	}
	t, err := readTree(dir, launched, alone)
	var tooLarge *pinTooLargeError
	if errors.As(err, &tooLarge) && !p.owns(dir) {
		// A program outside the project and plugin, in a directory of
		// many (~/.local/bin): pinned alone, without its neighbours.
		t, err = readTree(dir, launched, true)
	}
	if err != nil {
		return nil, err
	}
	if err := p.addBesideLinkTargets(t); err != nil {
		return nil, err
	}
	for _, rel := range t.packages {
		p.src.warn("%s: %s is linked into the pinned copy, not copied: the hooks there load their packages from it, so whoever can write it can change what they import", p.src.Path, t.packageDir(rel))
		// The file tools at least may not: the guard imports from it.
		p.src.Protected = appendNew(p.src.Protected, t.packageDir(rel))
	}
	if p.store != nil {
		if err := p.store.put(t); err != nil {
			return nil, err
		}
		p.warnSelfLocating(t)
	}
	if at >= 0 {
		p.trees[at] = t
	} else {
		p.trees = append(p.trees, t)
	}
	return t, nil
}

// selfLocation is where a script names its own location: $0 or
// BASH_SOURCE under dirname, python's __file__, node's __dirname or
// import.meta.
var selfLocation = regexp.MustCompile(`dirname\s+"?\$(\{BASH_SOURCE|BASH_SOURCE|\{?0)|\b__file__\b|\b__dirname\b|import\.meta\.(url|dirname)`)

// Ways a line leaves a script's own directory, or writes.
var (
	upFromIt       = regexp.MustCompile(`\.\./|/\.\.\b|\.parent\.parent|\.parents\[|path\.join\([^)]*'\.\.'`)
	selfAssignment = regexp.MustCompile(`^\s*(?:export\s+|local\s+|const\s+|let\s+|var\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=`)
)

// writesTo is whether line writes to the path in variable name (shell,
// python or node), or, for name "", to a path it builds in place.
func writesTo(line, name string) bool {
	ref := `\$\{?` + name + `\b|\b` + name + `\b`
	if name == "" {
		ref = `\$\(dirname|__file__|__dirname`
	}
	for _, form := range []string{
		`>>?\s*"?(` + ref + `)`,                                       // echo x >> "$LOG"
		`\b(tee|touch|mkdir|cp|mv)\b[^|;&]*(` + ref + `)`,             // tee -a "$LOG"
		`(` + ref + `)[^\n]*\.(write_text|write_bytes|mkdir|touch)\(`, // STATE.write_text(…)
		`open\(\s*(` + ref + `)[^)]*,\s*['"][wax]`,                    // open(STATE, "w")
		`(writeFileSync|appendFileSync|writeFile|appendFile)\(\s*(` + ref + `)`,
	} {
		if regexp.MustCompile(form).MatchString(line) {
			return true
		}
	}
	return false
}

// selfLocatingTrouble is the first line of script that goes up from its
// own directory, or writes beside itself (directly or through a variable
// it set from its location), "" for none: reading what lies beside it
// works in the pinned copy, these do not.
func selfLocatingTrouble(script []byte) string {
	lines := strings.Split(string(script), "\n")
	var names []string
	for _, line := range lines {
		if !selfLocation.MatchString(line) {
			continue
		}
		if upFromIt.MatchString(line) || writesTo(line, "") {
			return strings.TrimSpace(line)
		}
		if m := selfAssignment.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	for _, line := range lines {
		for _, name := range names {
			if writesTo(line, name) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}

// warnSelfLocating warns of each launched script of t that works out a
// path from where it lies and writes there or goes up from it: it runs
// from its pinned copy, read-only in the worker's data directory, so a
// log or a state file written beside it fails (and a hook that fails
// without blocking lets the call through), and a path up from it
// (`$(dirname "$0")/../..`) does not reach the project. What it reads
// beside itself was pinned with it, and works.
func (p *pinner) warnSelfLocating(t *pinnedTree) {
	for _, f := range t.files {
		if !slices.Contains(t.launched, f.rel) {
			continue
		}
		if line := selfLocatingTrouble(f.data); line != "" {
			p.src.warn("%s: %s works out a path from its own location and writes there or goes up from it (%s): it runs from its pinned copy in %s, read-only, so what it writes beside itself fails and a path up from it does not reach the project; have it use $CLAUDE_PROJECT_DIR for those",
				p.src.Path, filepath.Join(t.source, filepath.FromSlash(f.rel)), audit.Preview(line, 120), t.stored)
		}
	}
}

// addBesideLinkTargets adds, for each launched script of t that is a
// link, the files beside its target that t does not have: Python and
// Node find a script's modules where the script really lives, as does a
// shell script that finds itself with readlink -f "$0", and the pinned
// copy runs from t's directory. The target's directory is read as a
// script directory of its own would be; one past the limits (a ~/bin of
// many programs) adds nothing. Its node_modules are not linked: the copy
// has t's.
func (p *pinner) addBesideLinkTargets(t *pinnedTree) error {
	added := false
	for _, name := range t.launched {
		link := filepath.Join(t.source, name)
		if info, err := os.Lstat(link); err != nil || info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(link)
		if err != nil {
			continue
		}
		dir := filepath.Dir(target)
		if real, err := filepath.EvalSymlinks(t.source); err == nil && real == dir {
			continue
		}
		if dir == p.src.Paths.ProjectDir || dir == p.src.Paths.PluginRoot {
			continue // a project's root is not a script directory
		}
		beside, err := readTree(dir, []string{filepath.Base(target)}, false)
		if errors.As(err, new(*pinTooLargeError)) {
			continue
		}
		if err != nil {
			return err
		}
		for _, f := range beside.files {
			if !t.has(f.rel) {
				t.files = append(t.files, f)
				added = true
			}
		}
	}
	if added {
		total := 0
		for _, f := range t.files {
			total += len(f.data)
		}
		if len(t.files) > maxPinnedFiles || total > maxPinnedBytes {
			return &pinTooLargeError{dir: t.source}
		}
		t.sortAndHash()
	}
	return nil
}

// owns reports whether dir is the project's or the plugin's, where every
// script a hook launches is pinned with its directory.
func (p *pinner) owns(dir string) bool {
	for _, root := range []string{p.src.Paths.ProjectDir, p.src.Paths.PluginRoot} {
		if root == "" {
			continue
		}
		if rel, err := filepath.Rel(root, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// systemProgramDirs hold the system's programs, which the worker runs
// where they are (an agent that can rewrite them can rewrite the worker).
var systemProgramDirs = []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin",
	"/usr/libexec", "/opt/homebrew/bin", "/opt/homebrew/sbin"}

// systemProgramDir reports whether dir, as the command names it, is one
// of systemProgramDirs or in the Nix store. Links are not followed: a
// link in the project that leads to /usr/bin is the project's, and the
// agent may point it elsewhere.
func systemProgramDir(dir string) bool {
	dir = filepath.Clean(dir)
	return slices.Contains(systemProgramDirs, dir) || strings.HasPrefix(dir, "/nix/store/")
}

// storedPath maps a project path into the store, when a pinned tree
// holds it.
func (p *pinner) storedPath(path string) (string, bool) {
	for _, t := range p.trees {
		rel, err := filepath.Rel(t.source, path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || !t.has(filepath.ToSlash(rel)) {
			continue
		}
		if t.stored == "" {
			return path, true
		}
		return filepath.Join(t.stored, rel), true
	}
	return "", false
}

// resolve turns a rendered word into an absolute path, "" when it is
// workspace-relative (no project directory to resolve it against).
func (p *pinner) resolve(w string) string {
	if filepath.IsAbs(w) {
		return filepath.Clean(w)
	}
	if p.src.Paths.ProjectDir == "" {
		return ""
	}
	return filepath.Join(p.src.Paths.ProjectDir, w)
}

// pinLaunched reads the script a launched word names (when it exists and
// is a regular file) into a tree.
func (p *pinner) pinLaunched(w string) error {
	path := p.resolve(w)
	if path == "" {
		return nil
	}
	if systemProgramDir(filepath.Dir(path)) {
		return nil // the system's program (/usr/bin/env, /usr/bin/python3): it runs where it is
	}
	if p.store != nil && strings.HasPrefix(path, p.store.Dir()+string(filepath.Separator)) {
		return nil // pinned at load (a workspace's pins start from the loaded command)
	}
	if slices.Contains(p.absent, path) {
		return nil // absent at load stays absent
	}
	if p.accepted != nil {
		switch {
		case slices.Contains(p.accepted.Absent, path):
			p.absent = appendNew(p.absent, path)
			return nil
		case !p.acceptedHas(path):
			return nil // not a regular file when the policy was accepted: it runs where it is, as it did
		}
		_, err := p.treeFor(path)
		return err
	}
	info, err := os.Lstat(path)
	if err == nil && info.Mode()&fs.ModeSymlink != 0 {
		// A link is pinned as what it leads to (the link's name holds the
		// target's bytes): left where it is, the agent could replace it.
		// One that leads nowhere is absent, like a missing script. One
		// that leads to the system's program (a virtualenv's bin/python)
		// runs through the link, as the program needs to find what is
		// beside the link.
		target, linkErr := filepath.EvalSymlinks(path)
		switch {
		case linkErr != nil:
			err = fs.ErrNotExist
		case systemProgramDir(filepath.Dir(target)):
			p.src.warn("%s: hook program %s is a link to %s; it runs through the link, not pinned: whoever can write %s can change what runs", p.src.Path, path, target, filepath.Dir(path))
			return nil
		default:
			info, err = os.Stat(path)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) && p.store != nil:
		p.absent = appendNew(p.absent, path)
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil || !info.Mode().IsRegular():
		p.src.warn("%s: hook script %s is not a regular file; it runs where it is, not pinned", p.src.Path, path)
		return nil
	}
	_, err = p.treeFor(path)
	return err
}

// warnUnrunnable warns when the program of one simple command of a hook
// (words, rendered) is a script that cannot start (unrunnable): the
// operator hears of it at load, not from the first call it lets through.
func (p *pinner) warnUnrunnable(words []string, vars map[string]string) {
	if len(words) == 0 || !strings.Contains(words[0], "/") || !looksLikePath(words[0], vars) {
		return
	}
	path := p.resolve(words[0])
	if path == "" {
		return
	}
	if why := unrunnable(path); why != "" {
		p.src.warn("%s: hook script %s %s: the hook cannot start, and every call it matches goes on as if it were not there unless it fails closed (\"onFailure\": \"block\")", p.src.Path, path, why)
	}
}

// command pins what a command hook launches and rewrites every path word
// inside a pinned tree to its stored copy.
func (p *pinner) command(command string, args []string, execForm bool) (string, []string, error) {
	vars := p.src.Paths.placeholders()
	if execForm {
		words := make([]string, 0, len(args)+1)
		for _, w := range append([]string{command}, args...) {
			words = append(words, expandKnown(w, vars))
		}
		for _, w := range launchedWords(words, vars) {
			if err := p.pinLaunched(w); err != nil {
				return "", nil, err
			}
		}
		p.warnUnrunnable(words, vars)
		out := slices.Clone(append([]string{command}, args...))
		for i, w := range words {
			if path := p.resolve(w); path != "" && looksLikePath(w, vars) {
				if stored, ok := p.storedPath(path); ok {
					out[i] = stored
				}
			}
		}
		return out[0], out[1:], nil
	}
	vars = shellVars(vars, p.src.env)
	file, err := syntax.NewParser().Parse(strings.NewReader(command), "")
	if err != nil {
		return command, args, nil // NewCommandHook runs it as written; sh reports the error
	}
	var calls []*syntax.CallExpr
	syntax.Walk(file, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok {
			calls = append(calls, call)
		}
		return true
	})
	for _, call := range calls {
		var rendered []string
		for _, w := range call.Args {
			s, _ := renderWord(w.Parts, vars)
			rendered = append(rendered, s)
		}
		for _, w := range launchedWords(rendered, vars) {
			if err := p.pinLaunched(w); err != nil {
				return "", nil, err
			}
		}
		p.warnUnrunnable(rendered, vars)
	}
	changed := false
	for _, call := range calls {
		for _, w := range call.Args {
			s, ok := renderWord(w.Parts, vars)
			if !ok || !looksLikePath(s, vars) {
				continue
			}
			path := p.resolve(s)
			if path == "" {
				continue
			}
			if stored, ok := p.storedPath(path); ok && stored != path && !strings.Contains(stored, "'") {
				w.Parts = []syntax.WordPart{&syntax.SglQuoted{Value: stored}}
				changed = true
			}
		}
	}
	if !changed {
		return command, args, nil
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, file); err != nil {
		return "", nil, fmt.Errorf("rewriting command %q to its pinned scripts: %w", command, err)
	}
	return strings.TrimSuffix(b.String(), "\n"), args, nil
}

// scripts lists every pinned file for the policy fingerprint: named
// relative to the project or plugin root (else as found), so the same
// scripts deployed elsewhere are the same policy.
func (p *pinner) scripts() []hooks.PolicySource {
	var out []hooks.PolicySource
	root := p.src.Paths.ProjectDir
	if root == "" {
		root = p.src.Paths.PluginRoot
	}
	if root == "" {
		root = p.src.Paths.Dir
	}
	for _, t := range p.trees {
		for _, f := range t.files {
			name := filepath.Join(t.source, filepath.FromSlash(f.rel))
			if rel, err := filepath.Rel(root, name); err == nil && !strings.HasPrefix(rel, "..") {
				name = filepath.ToSlash(rel)
			}
			out = append(out, hooks.PolicySource{Path: name, Data: f.data, Script: true})
		}
	}
	return out
}

// Prune removes the store's copies that keep does not name (copies, and
// copies left half-made by a load that did not finish), so a store does
// not grow with every load of changed scripts. Only the worker's start
// calls it, before any hook runs: a copy in use is one the policy it
// loaded names.
func (s *ScriptStore) Prune(keep []string) (removed int, err error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("hook script store %s: %w", s.dir, err)
	}
	for _, e := range entries {
		path := filepath.Join(s.dir, e.Name())
		if slices.Contains(keep, path) {
			continue
		}
		// The copies are read-only: open each directory to remove its
		// entries.
		_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		if rmErr := os.RemoveAll(path); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("hook script store: %w", rmErr))
			continue
		}
		removed++
	}
	return removed, err
}
