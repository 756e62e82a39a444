package claudecode

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/readlimit"
)

// LoadOptions configures loading hook settings files.
type LoadOptions struct {
	// HTTPPolicy is the outbound rule for http hooks.
	HTTPPolicy HTTPPolicy
	// PluginDataDir holds each plugin's $CLAUDE_PLUGIN_DATA directory
	// (<PluginDataDir>/<plugin name>); empty leaves it unset.
	PluginDataDir string
	// MCP runs mcp_tool handlers against the worker's MCP servers; nil
	// skips them with a warning.
	MCP MCPCaller
	// Prompt evaluates prompt handlers with the worker's model; nil skips
	// them with a warning.
	Prompt PromptEvaluator
	// Agent evaluates agent handlers with the worker's model and
	// read-only workspace tools; nil skips them with a warning.
	Agent AgentEvaluator
	// Scripts, when set, receives a copy of every script the commands
	// launch, and the commands run the copies (see ScriptStore). Without
	// it the scripts are still read for the policy fingerprint but run
	// from where they are.
	Scripts *ScriptStore
	// Logger is given to every hook (see ExternalHookConfig.Logger).
	Logger *slog.Logger
	// Launcher starts every command hook's process (see
	// ExternalHookConfig.Launcher); nil starts them plainly.
	Launcher Launcher
	// HookEnv are variables the worker sets for every command hook, over
	// the ones they inherit and under the settings file's "env": the
	// worker turns off code paths in its home that did not exist at start
	// (tools.HookCodeGuard).
	HookEnv map[string]string
	// Snapshot, when set, is the policy to load instead of the files the
	// paths name: its settings files' bytes, and its scripts from their
	// stored copies in Scripts (see Snapshot).
	Snapshot *Snapshot
	// WorkspacePins, when set, records the scripts a settings file
	// outside every project has pinned in each workspace (see
	// workspacePins), so a restarted worker runs the copies of the first
	// run rather than what the workspace holds by then.
	WorkspacePins *WorkspacePinBook
	// accepted is the snapshot's file being parsed.
	accepted *SnapshotFile
}

// DialectKey is the top-level settings key that overrides dialect
// detection: "claude" or "fenix".
const DialectKey = "fenixDialect"

// ResolveSourcePaths expands the paths a worker was given into settings
// files, in a defined order: each path in the order given; a project
// directory (one holding .claude/) gives .claude/settings.json then
// .claude/settings.local.json; a .claude directory gives the same two; a
// plugin directory (one holding hooks/hooks.json) gives that file.
func ResolveSourcePaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("hook settings %s: %w", p, err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		claudeDir := filepath.Join(p, ".claude")
		if filepath.Base(filepath.Clean(p)) == ".claude" {
			claudeDir = p
		}
		var found []string
		for _, candidate := range []string{
			filepath.Join(claudeDir, "settings.json"),
			filepath.Join(claudeDir, "settings.local.json"),
			filepath.Join(p, "hooks", "hooks.json"),
		} {
			if st, err := os.Stat(candidate); err == nil && !st.IsDir() {
				found = append(found, candidate)
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("hook settings %s: a directory must hold .claude/settings.json, .claude/settings.local.json or hooks/hooks.json", p)
		}
		out = append(out, found...)
	}
	return out, nil
}

// LoadSources loads every settings file the paths name, in order (see
// ResolveSourcePaths). Identical handlers of one event (same command and
// args, or same URL) run once, as in Claude Code: a later duplicate is
// folded into the first.
//
// With opts.Snapshot the paths are not read: the snapshot's files are
// loaded, in its order.
func LoadSources(paths []string, opts LoadOptions) ([]*Source, error) {
	var files []string
	if opts.Snapshot != nil {
		for _, f := range opts.Snapshot.Files {
			files = append(files, f.Path)
		}
	} else {
		var err error
		if files, err = ResolveSourcePaths(paths); err != nil {
			return nil, err
		}
	}
	var out []*Source
	for i, f := range files {
		var src *Source
		var err error
		if opts.Snapshot != nil {
			fileOpts := opts
			fileOpts.accepted = &opts.Snapshot.Files[i]
			src, err = parseFile(fileOpts.accepted.Data, f, fileOpts)
		} else {
			src, err = loadFile(f, opts)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	applyManagedSettings(out)
	// One session's environment, as Claude Code gives every process of a
	// session the files' env merged: a hook of settings.json sees what
	// settings.local.json sets.
	env, _ := CommandEnv(out)
	seen := map[string]*ExternalHook{}
	for _, src := range out {
		kept := src.Hooks[:0]
		for _, h := range src.Hooks {
			eh, ok := h.(*ExternalHook)
			if !ok {
				kept = append(kept, h)
				continue
			}
			eh.settingsEnv = env
			if first, dup := seen[eh.dedupKey()]; dup {
				first.merge(eh)
				src.Warnings = append(src.Warnings, fmt.Sprintf("%s: %s duplicates a handler of %s and runs once", src.Path, eh.transport.describe(), first.sourcePath))
				continue
			}
			seen[eh.dedupKey()] = eh
			kept = append(kept, h)
		}
		src.Hooks = kept
	}
	return out, nil
}

// maxSettingsBytes bounds a settings file: Claude Code's are kilobytes,
// and a command can leave a sparse file of gigabytes in a project's
// .claude/ for the next start to read.
const maxSettingsBytes = 4 << 20

// LoadSource reads one hook settings file.
func LoadSource(path string, opts LoadOptions) (*Source, error) {
	src, err := loadFile(path, opts)
	if err != nil {
		return nil, err
	}
	applyManagedSettings([]*Source{src})
	return src, nil
}

// loadFile reads and parses one settings file, its keys that reach the
// other files not applied yet (applyManagedSettings).
func loadFile(path string, opts LoadOptions) (*Source, error) {
	data, err := readlimit.File(path, maxSettingsBytes)
	if err != nil {
		return nil, fmt.Errorf("reading hook settings: %w", err)
	}
	return parseFile(data, path, opts)
}

// parseFile parses the settings file at path, whose bytes are data.
func parseFile(data []byte, path string, opts LoadOptions) (*Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("hook settings %s: %w", path, err)
	}
	kind, paths := sourceKindOf(abs)
	if kind == SourcePlugin && opts.PluginDataDir != "" {
		paths.PluginData = filepath.Join(opts.PluginDataDir, pluginName(paths.PluginRoot))
		if err := os.MkdirAll(paths.PluginData, 0o750); err != nil {
			return nil, fmt.Errorf("hook settings %s: plugin data directory: %w", path, err)
		}
	}
	return ParseSource(data, path, kind, paths, opts)
}

// LoadCommandHooks reads one hook settings file and returns its hooks.
func LoadCommandHooks(path string) ([]hooks.AgentHook, error) {
	src, err := LoadSource(path, LoadOptions{})
	if err != nil {
		return nil, err
	}
	return src.Hooks, nil
}
