package claudecode

import (
	"cmp"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/readlimit"
)

// SourceKind says where a hook settings file sits, which decides its
// default dialect and its $CLAUDE_PROJECT_DIR / $CLAUDE_PLUGIN_ROOT.
type SourceKind string

const (
	// SourceProject is <project>/.claude/settings.json.
	SourceProject SourceKind = "project"
	// SourceLocal is <project>/.claude/settings.local.json.
	SourceLocal SourceKind = "local"
	// SourceUser is the user's ~/.claude/settings.json: below the
	// project's files in precedence, and its hooks' $CLAUDE_PROJECT_DIR
	// and "/path" rules name the session's project, not the home.
	SourceUser SourceKind = "user"
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
	Hooks []hooks.AgentHook
	// Permissions is the file's "permissions" object, nil when it has none.
	Permissions *FilePermissions
	// Sandbox is the file's "sandbox" object when it turns the sandbox on.
	Sandbox *Sandbox
	// MCPServers is what the file says about which MCP servers run, nil
	// when it says nothing.
	MCPServers *MCPServerSettings
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
	// prompt evaluates prompt handlers (LoadOptions.Prompt).
	prompt PromptEvaluator
	// agent evaluates agent handlers (LoadOptions.Agent).
	agent AgentEvaluator
	// skippedEvents are the events already warned about.
	skippedEvents map[string]bool
	// env is the file's "env" key, given to its command hooks.
	env map[string]string
	// Scripts are the files its command hooks run, as pinned at load
	// (see ScriptStore), for the policy fingerprint.
	Scripts []hooks.PolicySource
	// pinned are the script directories pinned at load, and absentScripts
	// the launched scripts that did not exist, for SnapshotOf.
	pinned        []*pinnedTree
	absentScripts []string
	// managed are the file's keys that reach the other files
	// (applyManagedSettings).
	managed managedFlags
}

// Registered describes the source for hooks.Registry.AddSource: its
// hooks, its bytes for the policy fingerprint, and its kind and dialect as
// labels.
func (s *Source) Registered() hooks.Source {
	return hooks.Source{Path: s.Path, Data: s.Data, Hooks: s.Hooks, Warnings: s.Warnings,
		Labels:    map[string]string{"kind": string(s.Kind), "dialect": string(s.Dialect)},
		Protected: s.Protected, ProtectedRelative: s.ProtectedRelative, Scripts: s.Scripts}
}

// AddFile loads one hook settings file (see LoadSource) and adds its hooks
// to r in file order, recording the file as a policy source.
func AddFile(r *hooks.Registry, path string) error {
	src, err := LoadSource(path, LoadOptions{})
	if err != nil {
		return err
	}
	r.AddSource(src.Registered())
	return nil
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
		if base == "settings.json" && isUserHome(filepath.Dir(dir)) {
			return SourceUser, paths
		}
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

// ConfigChangeSource is what Claude Code's ConfigChange calls a settings
// file (hooks.ConfigUserSettings, …) and the directory its hooks run in
// (its project, else its own directory); "" for a plugin's hooks, which
// Claude Code's ConfigChange does not cover. home is the user's home,
// whose .claude/settings.json is the user's settings.
func ConfigChangeSource(path, home string) (source, dir string) {
	kind, paths := sourceKindOf(path)
	dir = cmp.Or(paths.ProjectDir, paths.Dir)
	switch {
	case filepath.Base(path) == "managed-settings.json":
		return hooks.ConfigPolicySettings, paths.Dir
	case kind == SourceLocal:
		return hooks.ConfigLocalSettings, dir
	case kind == SourceUser || kind == SourceProject && home != "" && paths.ProjectDir == filepath.Clean(home):
		return hooks.ConfigUserSettings, filepath.Dir(paths.Dir)
	case kind == SourcePlugin:
		return "", dir
	}
	return hooks.ConfigProjectSettings, dir
}

// userHomes are the user's home directories: $HOME and the account's
// (a variable for tests).
var userHomes = func() []string {
	var homes []string
	if home, err := os.UserHomeDir(); err == nil {
		homes = append(homes, home)
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		homes = append(homes, u.HomeDir)
	}
	return homes
}

// isUserHome is whether dir is one of userHomes, symlinks resolved.
func isUserHome(dir string) bool {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	dir = real(dir)
	for _, home := range userHomes() {
		if home != "" && filepath.IsAbs(home) && real(home) == dir && dir != "/" {
			return true
		}
	}
	return false
}

// settingsRank orders settings files by Claude Code's precedence, higher
// winning a scalar setting (defaultMode, disableAllHooks) and an env
// variable: the managed settings, the project's local file, the
// project's file, then the user's and any other file, among which the
// later loaded wins.
func settingsRank(src *Source) int {
	switch {
	case isManaged(src):
		return 4
	case src.Kind == SourceLocal:
		return 3
	case src.Kind == SourceProject:
		return 2
	}
	return 1
}

// byPrecedence is sources ordered by settingsRank, lowest first, load
// order kept among equals.
func byPrecedence(sources []*Source) []*Source {
	out := slices.Clone(sources)
	slices.SortStableFunc(out, func(a, b *Source) int { return cmp.Compare(settingsRank(a), settingsRank(b)) })
	return out
}

// pluginName is the plugin's manifest name, else its directory's name.
func pluginName(root string) string {
	var manifest struct {
		Name string `json:"name"`
	}
	if raw, err := readlimit.File(filepath.Join(root, ".claude-plugin", "plugin.json"), maxSettingsBytes); err == nil {
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
