package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// SourceKind says where a hook settings file sits, which decides its
// default dialect and its $CLAUDE_PROJECT_DIR / $CLAUDE_PLUGIN_ROOT.
type SourceKind string

const (
	// SourceProject is <project>/.claude/settings.json.
	SourceProject SourceKind = "project"
	// SourceLocal is <project>/.claude/settings.local.json.
	SourceLocal SourceKind = "local"
	// SourcePlugin is <plugin>/hooks/hooks.json.
	SourcePlugin SourceKind = "plugin"
	// SourceFile is a hook settings file anywhere else.
	SourceFile SourceKind = "file"
)

// Source is one loaded hook settings file.
type Source struct {
	Path    string
	Kind    SourceKind
	Dialect Dialect
	// DialectReason says how the dialect was chosen, for the worker log.
	DialectReason string
	// Data is the file as read.
	Data  []byte
	Paths HookPaths
	Hooks []AgentHook
	// Warnings list what the file holds that Fenix does not run.
	Warnings []string
	// Protected are absolute paths tools must never write: the file, its
	// .claude/ directory or plugin root, and every file its hooks reference
	// by an absolute path.
	Protected []string
	// ProtectedRelative are workspace-relative paths its hooks reference
	// (commands run in the workspace, so "python3 scripts/guard.py" runs
	// the workspace's scripts/guard.py).
	ProtectedRelative []string
	// mcp runs mcp_tool handlers (LoadOptions.MCP).
	mcp MCPCaller
}

// SourceInfo is what a registry records about a source it loaded.
type SourceInfo struct {
	Path     string     `json:"path"`
	Kind     SourceKind `json:"kind"`
	Dialect  Dialect    `json:"dialect"`
	Hooks    int        `json:"hooks"`
	Warnings []string   `json:"warnings,omitempty"`
	// Data is the file's content when it was loaded.
	Data              []byte   `json:"-"`
	Protected         []string `json:"-"`
	ProtectedRelative []string `json:"-"`
}

// Info summarizes the source.
func (s *Source) Info() SourceInfo {
	return SourceInfo{Path: s.Path, Kind: s.Kind, Dialect: s.Dialect, Hooks: len(s.Hooks), Warnings: s.Warnings,
		Data: s.Data, Protected: s.Protected, ProtectedRelative: s.ProtectedRelative}
}

// AddSource registers a source's hooks, in order, and records the source:
// for protection and as a policy source of PolicyFingerprint.
func (r *Registry) AddSource(src *Source) {
	for _, h := range src.Hooks {
		r.Add(h)
	}
	r.sources = append(r.sources, src.Info())
	r.RecordSource(src.Path, src.Data)
}

// Sources lists the hook settings files the registry loaded, in order.
func (r *Registry) Sources() []SourceInfo {
	return append([]SourceInfo(nil), r.sources...)
}

// ProtectedPaths lists what tools must never write because loaded hooks
// run it or configure it: absolute paths, and paths relative to every
// workspace.
func (r *Registry) ProtectedPaths() (absolute, relative []string) {
	for _, s := range r.sources {
		absolute = append(absolute, s.Protected...)
		relative = append(relative, s.ProtectedRelative...)
	}
	return absolute, relative
}

// WantsTranscript reports whether a hook subscribed to ev reads the
// transcript file, so the worker writes it only when someone reads it.
func (r *Registry) WantsTranscript(ev Event) bool {
	for _, e := range r.subscribers(ev) {
		if t, ok := e.hook.(interface{ UsesTranscript() bool }); ok && t.UsesTranscript() {
			return true
		}
	}
	return false
}

// sourceKindOf classifies a settings file by where it sits.
func sourceKindOf(path string) (SourceKind, HookPaths) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	dir := filepath.Dir(abs)
	paths := HookPaths{Dir: dir}
	base := filepath.Base(abs)
	if filepath.Base(dir) == ".claude" {
		paths.ProjectDir = filepath.Dir(dir)
		switch base {
		case "settings.json":
			return SourceProject, paths
		case "settings.local.json":
			return SourceLocal, paths
		}
		return SourceFile, paths
	}
	if base == "hooks.json" && filepath.Base(dir) == "hooks" {
		paths.PluginRoot = filepath.Dir(dir)
		return SourcePlugin, paths
	}
	return SourceFile, paths
}

// pluginName is the plugin's manifest name, else its directory's name.
func pluginName(root string) string {
	var manifest struct {
		Name string `json:"name"`
	}
	if raw, err := os.ReadFile(filepath.Join(root, ".claude-plugin", "plugin.json")); err == nil {
		if json.Unmarshal(raw, &manifest) == nil && manifest.Name != "" {
			return safeName(manifest.Name)
		}
	}
	return safeName(filepath.Base(root))
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// scriptExtensions mark a word without a slash as a file a hook runs.
var scriptExtensions = []string{".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php"}

// referencedFiles finds the files a command hook references: every word
// of the command line (and exec-form program and args) that names a path,
// after substituting the placeholders this source knows. Absolute paths
// come back as they are; relative ones are relative to where the command
// runs, the workspace.
func referencedFiles(command string, args []string, execForm bool, vars map[string]string) (absolute, relative []string) {
	var words []string
	if execForm {
		words = append([]string{command}, args...)
		for i, w := range words {
			words[i] = expandKnown(w, vars)
		}
	} else {
		file, err := syntax.NewParser().Parse(strings.NewReader(command), "")
		if err != nil {
			return nil, nil
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.CallExpr:
				for _, w := range n.Args {
					if s, ok := renderWord(w.Parts, vars); ok {
						words = append(words, s)
					}
				}
			case *syntax.Redirect:
				if n.Word != nil {
					if s, ok := renderWord(n.Word.Parts, vars); ok {
						words = append(words, s)
					}
				}
			}
			return true
		})
	}
	for _, w := range words {
		if !looksLikePath(w) {
			continue
		}
		if filepath.IsAbs(w) {
			absolute = append(absolute, filepath.Clean(w))
		} else {
			relative = append(relative, filepath.ToSlash(filepath.Clean(w)))
		}
	}
	return absolute, relative
}

func looksLikePath(w string) bool {
	if w == "" || strings.HasPrefix(w, "-") || strings.Contains(w, "://") || strings.ContainsAny(w, " \t\n$`*?") {
		return false
	}
	if strings.Contains(w, "/") {
		return !strings.HasPrefix(w, "/dev/")
	}
	for _, ext := range scriptExtensions {
		if strings.HasSuffix(w, ext) {
			return true
		}
	}
	return false
}

// renderWord renders a shell word made of literals, quotes and the known
// placeholders; a workspace-dependent $CLAUDE_PROJECT_DIR renders as ""
// so the rest of the path is taken relative to the workspace.
func renderWord(parts []syntax.WordPart, vars map[string]string) (string, bool) {
	var b strings.Builder
	for i, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			s, ok := renderWord(p.Parts, vars)
			if !ok {
				return "", false
			}
			b.WriteString(s)
		case *syntax.ParamExp:
			if p.Param == nil || p.Exp != nil || p.Slice != nil || p.Repl != nil || p.Index != nil {
				return "", false
			}
			v, ok := vars[p.Param.Value]
			if !ok {
				return "", false
			}
			if v == "" && i == 0 {
				// Workspace-relative: drop the separator that follows.
				rest, ok := renderWord(parts[1:], vars)
				if !ok {
					return "", false
				}
				return strings.TrimPrefix(rest, "/"), true
			}
			b.WriteString(v)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// expandKnown substitutes the known placeholders in an exec-form word.
func expandKnown(w string, vars map[string]string) string {
	for _, k := range sortedKeys(vars) {
		v := vars[k]
		for _, ref := range []string{"${" + k + "}", "$" + k} {
			if v == "" && strings.HasPrefix(w, ref+"/") {
				w = strings.TrimPrefix(w, ref+"/")
			}
			w = strings.ReplaceAll(w, ref, v)
		}
	}
	return w
}
