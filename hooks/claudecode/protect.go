package claudecode

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// protectSource protects the settings file itself and what surrounds it:
// the whole .claude/ directory of a project file, or the plugin's root.
func (src *Source) protectSource() {
	if abs, err := filepath.Abs(src.Path); err == nil {
		src.Protected = append(src.Protected, abs)
	}
	switch {
	case src.Paths.ProjectDir != "":
		src.Protected = append(src.Protected, filepath.Join(src.Paths.ProjectDir, ".claude"))
	case src.Kind == SourceUser:
		src.Protected = append(src.Protected, src.Paths.Dir)
	case src.Paths.PluginRoot != "":
		src.Protected = append(src.Protected, src.Paths.PluginRoot)
	}
}

// protectCommand protects the files a command hook references.
func (src *Source) protectCommand(command string, args []string, execForm bool) {
	vars := src.Paths.placeholders()
	if !execForm {
		vars = shellVars(vars, src.env)
	}
	abs, rel := referencedFiles(command, args, execForm, vars)
	src.Protected = appendNew(src.Protected, abs...)
	src.ProtectedRelative = appendNew(src.ProtectedRelative, rel...)
}

// placeholders are the path variables a settings file's commands may
// use, as known at load; an empty $CLAUDE_PROJECT_DIR is the workspace.
func (p HookPaths) placeholders() map[string]string {
	vars := map[string]string{"CLAUDE_PROJECT_DIR": p.ProjectDir, "FENIX_HOOKS_DIR": p.Dir}
	if p.PluginRoot != "" {
		vars["CLAUDE_PLUGIN_ROOT"] = p.PluginRoot
	}
	if p.PluginData != "" {
		vars["CLAUDE_PLUGIN_DATA"] = p.PluginData
	}
	return vars
}

// shellVars adds to vars what a shell-form command also expands in the
// words that name its scripts: HOME, for ~ and $HOME (user-level hooks
// live in ~/.claude/hooks), as the hook process gets it: from the
// settings file's env, else the worker's. Exec form expands neither.
func shellVars(vars, settingsEnv map[string]string) map[string]string {
	home := settingsEnv["HOME"]
	for _, kv := range processEnv() {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && home == "" {
			home = v
			break
		}
	}
	if home == "" || !filepath.IsAbs(home) {
		return vars
	}
	out := maps.Clone(vars)
	out["HOME"] = filepath.Clean(home)
	return out
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		dup := false
		for _, have := range list {
			if have == it {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, it)
		}
	}
	return list
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
		if !looksLikePath(w, vars) {
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

// looksLikePath reports whether w, a word of a command rendered with vars,
// names a file. What the variables hold is a directory whatever its
// characters (a project under "/home/ana/My Projects"): only the
// command's own text is judged for what a path does not hold.
func looksLikePath(w string, vars map[string]string) bool {
	if w == "" || strings.HasPrefix(w, "-") || strings.Contains(w, "://") || strings.ContainsAny(withoutValues(w, vars), " \t\n$`*?") {
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

// withoutValues is w with each non-empty value of vars (longest first, so
// a project inside the home is taken whole) replaced by a plain name.
func withoutValues(w string, vars map[string]string) string {
	var values []string
	for _, k := range sortedKeys(vars) {
		if v := vars[k]; v != "" {
			values = append(values, v)
		}
	}
	slices.SortStableFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		w = strings.ReplaceAll(w, v, "/v")
	}
	return w
}

// renderWord renders a shell word made of literals, quotes and the known
// placeholders; a workspace-dependent $CLAUDE_PROJECT_DIR renders as ""
// so the rest of the path is taken relative to the workspace.
// A leading unquoted ~ renders as vars["HOME"] when vars has it (see
// shellVars); without it the word is not rendered.
func renderWord(parts []syntax.WordPart, vars map[string]string) (string, bool) {
	return renderParts(parts, vars, true)
}

// renderParts renders parts; top is set for a whole word, where a
// leading ~ is the shell's tilde prefix (inside quotes it is a letter).
func renderParts(parts []syntax.WordPart, vars map[string]string, top bool) (string, bool) {
	var b strings.Builder
	for i, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if top && i == 0 && (v == "~" || strings.HasPrefix(v, "~/")) {
				home, ok := vars["HOME"]
				if !ok {
					return "", false
				}
				v = home + v[1:]
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			s, ok := renderParts(p.Parts, vars, false)
			if !ok {
				return "", false
			}
			if s == "" && i == 0 && len(p.Parts) == 1 {
				if _, isParam := p.Parts[0].(*syntax.ParamExp); isParam {
					// "$CLAUDE_PROJECT_DIR"/... with the workspace for
					// a project, as unquoted above: it used to render
					// as /.claude/..., a script that never exists.
					rest, ok := renderParts(parts[1:], vars, false)
					if !ok {
						return "", false
					}
					return strings.TrimPrefix(rest, "/"), true
				}
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
				rest, ok := renderParts(parts[1:], vars, false)
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
