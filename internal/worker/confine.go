package worker

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/confine"
)

// The data directory's entries the hooks reach.
const (
	hookScriptsDir = "hook-scripts"
	transcriptsDir = "transcripts"
	pluginDataDir  = "plugin-data"
)

// protectedPaths adds to p what this configuration keeps beside the data
// directory, which tools.NewHost always hides from commands: the audit
// log when it is a SQLite file (with the journal and WAL files SQLite
// keeps next to it, through which rows could be rewritten), a context
// store directory, and, read-only, the skills commands may run and the
// agent profiles that say what an agent is.
func protectedPaths(cfg Config, p confine.Policy) confine.Policy {
	if file, ok := audit.SQLiteFile(cfg.AuditDSN); ok {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			p.Hidden = append(p.Hidden, file+suffix)
		}
	}
	if store := cfg.Contexts.Store; store != "" && !strings.Contains(store, "://") {
		p.Hidden = append(p.Hidden, store)
	}
	for _, dir := range []string{cfg.SkillsDir, cfg.ProfilesDir} {
		if dir != "" {
			p.ReadOnly = append(p.ReadOnly, dir)
		}
	}
	return p
}

// workerFiles are the worker's own paths the file tools never write,
// wherever an operator put them (a workspace's skills/ or profiles/): the
// skills and profiles, read-only to commands by their domain.
// workspace_write and workspace_edit would otherwise rewrite a skill's or
// a profile's instructions for every later turn. (The data directory,
// audit files, context store and keys are private: privateFiles.)
func workerFiles(cfg Config) []string {
	return absolutePaths(cfg.SkillsDir, cfg.ProfilesDir)
}

// privateFiles are the worker's own paths the file tools neither read
// nor write, wherever they are (a workspace of the worker's home holds
// the default data directory and ~/.config/temporalio): the data
// directory and what commands may not reach (the audit files, the
// context store, the keys). A key read through workspace_read would let
// the agent act as the worker and answer its own approvals.
func privateFiles(cfg Config, commands confine.Policy) []string {
	return absolutePaths(append([]string{cfg.DataDir}, commands.Hidden...)...)
}

// absolutePaths are paths made absolute, the empty ones left out.
func absolutePaths(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		out = append(out, p)
	}
	return out
}

// secretFiles are the files whose contents let a command act as the
// worker: the payload encryption keys and the Temporal client's TLS key
// and configuration file (which may hold an API key). With them a
// command could answer its own approvals. Only files that exist are
// named: a rule cut around a missing one would protect nothing.
func secretFiles(getenv func(string) string) []string {
	var files []string
	for _, name := range []string{codec.EnvKeyFile, "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_CONFIG_FILE"} {
		if path := getenv(name); path != "" {
			files = append(files, path)
		}
	}
	if getenv("TEMPORAL_CONFIG_FILE") == "" {
		if dir, err := os.UserConfigDir(); err == nil {
			files = append(files, filepath.Join(dir, "temporalio", "temporal.toml"))
		}
	}
	var present []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			present = append(present, f)
		}
	}
	return present
}

// hookPolicy is what the hooks' processes may not reach besides what
// protected hides (see tools.HostConfig.Hooks): the data directory, but
// for the pinned hook scripts they run and the transcripts Stop hooks
// read (read-only, as the skills and profiles) and each plugin's
// $CLAUDE_PLUGIN_DATA (theirs to write). A hook project given apart
// from the workspaces but in their bases stays the hooks' to reach,
// which tools.NewHost otherwise keeps to the session's workspace there
// as it keeps commands.
func hookPolicy(cfg Config, protected confine.Policy, bases []string) confine.Policy {
	return confine.Policy{
		Hidden: append([]string{cfg.DataDir}, protected.Hidden...),
		ReadOnly: append([]string{filepath.Join(cfg.DataDir, hookScriptsDir), filepath.Join(cfg.DataDir, transcriptsDir)},
			protected.ReadOnly...),
		Writable: append([]string{filepath.Join(cfg.DataDir, pluginDataDir)}, hookProjectsIn(cfg.HookSources, bases)...),
	}
}

// hookProjectsIn are the directories of the hook sources (a settings
// file's project, a project or plugin directory) that lie inside one of
// bases: what their hooks read as $CLAUDE_PROJECT_DIR or
// $CLAUDE_PLUGIN_ROOT and run from.
func hookProjectsIn(sources, bases []string) []string {
	var out []string
	for _, source := range absolutePaths(sources...) {
		dir := source
		if st, err := os.Stat(source); err == nil && !st.IsDir() {
			dir = filepath.Dir(source)
			if filepath.Base(dir) == ".claude" || filepath.Base(dir) == ".fenix" {
				dir = filepath.Dir(dir)
			}
		}
		for _, base := range bases {
			if rel, err := filepath.Rel(base, dir); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
				out = append(out, dir)
				break
			}
		}
	}
	return out
}
