package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/tools/mcp"
	"github.com/fenixrt/fenix/workspace"
)

// hookScriptStore is where the worker keeps the copies of the hook
// scripts it runs: <DataDir>/hook-scripts, which must lie outside every
// workspace the agent can write. Without a data directory (policy-diff)
// the scripts are read for the fingerprint but not copied.
func hookScriptStore(cfg Config) (*claudecode.ScriptStore, error) {
	if cfg.DataDir == "" {
		return nil, nil
	}
	dir, err := filepath.Abs(filepath.Join(cfg.DataDir, hookScriptsDir))
	if err != nil {
		return nil, err
	}
	for _, base := range append([]string{cfg.DefaultWorkspaceRoot}, cfg.WorkspaceBases...) {
		if base == "" {
			continue
		}
		abs, err := filepath.Abs(base)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(abs, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("hook script store %s is inside workspace %s, where the agent could rewrite the hooks: set FENIX_DATA_DIR outside every workspace", dir, abs)
		}
	}
	return claudecode.OpenScriptStore(dir)
}

// liveHooks publishes the registry the activities read, so ReloadHooks
// can replace it while they run.
// liveProtected stores what the tools never write besides the hooks'
// files, for the MCP configuration files read: the configurations, the
// scripts their stdio servers launch and the worker's files.
func (w *Worker) liveProtected(mcpFiles []mcp.ConfigFile) *atomic.Pointer[[]string] {
	p := slices.Concat(mcpConfigFiles(w.cfg), mcpServerFiles(w.cfg, mcpFiles), workerFiles(w.cfg))
	w.protected.Store(&p)
	return &w.protected
}

// workspaceReadOnly lists what an MCP server the worker starts for a
// workspace may not write there: what the agent's commands may not
// (workspace.CommandReadOnly), under the policy loaded when it starts.
func (w *Worker) workspaceReadOnly(private []string) func(dir string) []string {
	return func(dir string) []string {
		ws, err := workspace.Open(dir)
		if err != nil {
			return nil
		}
		defer ws.Close()
		activities.GuardWorkspace(ws, w.hooks.Load(), *w.protected.Load(), private)
		return ws.CommandReadOnly()
	}
}

// hookReadOnly lists what a hook run in a workspace may not write: the
// project's settings files there (workspace.HookReadOnly), and the
// settings files the policy was loaded from outside it (an operator's
// -hooks-file, ~/.claude/settings.json), which code a hook ran rewrote.
func (w *Worker) hookReadOnly(dir string) []string {
	ws, err := workspace.Open(dir)
	if err != nil {
		return nil
	}
	defer ws.Close()
	out := ws.HookReadOnly()
	if r := w.hooks.Load(); r != nil {
		for _, src := range r.Sources() {
			if inside, err := filepath.Rel(dir, src.Path); !filepath.IsAbs(src.Path) || err == nil && !strings.HasPrefix(inside, "..") {
				continue
			}
			if st, err := os.Lstat(src.Path); err == nil && st.Mode().IsRegular() {
				out = append(out, src.Path)
			}
		}
	}
	return out
}

// heldHookLauncher starts the hooks' processes in the hooks' domain with
// the policy's files read-only (readOnly), in a mount namespace of their
// own where the worker may make one.
type heldHookLauncher struct {
	confiner *confine.Confiner
	readOnly func(dir string) []string
}

func (l heldHookLauncher) Start(cmd *exec.Cmd, workspace string) (func(), error) {
	return l.confiner.StartCommand(cmd, confine.CommandOptions{Workspace: workspace, ReadOnly: l.readOnly(workspace)})
}

func (w *Worker) liveHooks(r *hooks.Registry) *atomic.Pointer[hooks.Registry] {
	w.hooks.Store(r)
	w.cfg.Logger.Info("hook policy loaded", "policy_fingerprint", r.PolicyFingerprint(nil), "sources", len(r.Sources()))
	return &w.hooks
}

// ReloadHooks re-reads the hook settings files and the scripts they run
// (pinning fresh copies) and swaps the new registry in for the next hook
// call; calls in flight finish under the old one. It is the only way a
// change on disk takes effect in a running worker: the worker calls it on
// SIGHUP, the operator's signal. The MCP configuration files are re-read
// with them: servers no longer configured (or now kept out by the
// settings) stop, changed ones restart, new ones start, unchanged ones
// run on (see mcp.Manager.Reconfigure). What it loads becomes the
// accepted policy, which the next start runs (see acceptedPolicyFile),
// and the scripts hooks pin in workspaces are pinned afresh at their next
// first run (see workspacePinsFile).
// The new policy fingerprint is logged; on error the loaded policy and
// servers stay.
func (w *Worker) ReloadHooks() (fingerprint string, err error) {
	book := w.newPinBook(nil)
	loaded, mcpFiles, err := w.loadPolicy(nil, book)
	if err == nil {
		err = w.askConfigChange(loaded.snapshot)
	}
	if err == nil {
		err = w.reloadMCP(mcpFiles, loaded.mcpServers)
	}
	if err != nil {
		w.cfg.Logger.Error("hook reload failed; the loaded hook policy stays", "error", err)
		return "", err
	}
	accepted := &acceptedPolicy{AcceptedAt: time.Now().UTC(), How: "SIGHUP", Hooks: loaded.snapshot, MCP: mcpFiles}
	if err := accepted.write(w.cfg.DataDir); err != nil {
		w.cfg.Logger.Error("hook reload failed; the loaded hook policy stays", "error", err)
		return "", err
	}
	if err := w.usePinBook(book); err != nil {
		w.cfg.Logger.Error("the reloaded policy's workspace pins are not recorded; a restart pins them again from the workspaces", "error", err)
	}
	w.liveProtected(mcpFiles)
	r := loaded.registry
	old := w.hooks.Swap(r)
	w.policyHeld.Store(false)
	fingerprint = r.PolicyFingerprint(nil)
	w.cfg.Logger.Info("hook policy reloaded and accepted", "policy_fingerprint", fingerprint,
		"previous_fingerprint", old.PolicyFingerprint(nil), "sources", len(r.Sources()))
	return fingerprint, nil
}

// reloadMCP makes the MCP servers configured in files, under what the
// settings say of them, the ones the worker runs. A worker that started
// reading no MCP configuration file (see startMCP) has nothing serving
// MCP tools to add them to: they start at its next start, and the log
// says so.
func (w *Worker) reloadMCP(files []mcp.ConfigFile, settings *claudecode.MCPServerSettings) error {
	loaded, err := mcp.LoadConfigs(files, nil)
	if err != nil {
		return err
	}
	for _, warning := range loaded.Warnings {
		w.cfg.Logger.Warn("MCP config: " + warning)
	}
	if w.mcp == nil {
		if len(loaded.Servers) > 0 {
			var names []string
			for _, s := range loaded.Servers {
				names = append(names, s.Name)
			}
			w.cfg.Logger.Warn("MCP servers configured since this worker started, reading no MCP configuration, start at its next start", "mcp_servers", names)
		}
		return nil
	}
	r, err := w.mcp.Reconfigure(loaded.Servers, serverRules(settings), w.cfg.MCPStartWait)
	if err != nil {
		return fmt.Errorf("MCP servers: %w", err)
	}
	for _, why := range r.Refused {
		w.cfg.Logger.Warn(why)
	}
	if r.Changed() {
		w.cfg.Logger.Info("MCP servers reloaded", "started", r.Started, "restarted", r.Restarted, "stopped", r.Stopped, "kept", r.Kept)
	}
	for _, st := range w.mcp.Status() {
		if !st.Connected && (slices.Contains(r.Started, st.Name) || slices.Contains(r.Restarted, st.Name)) {
			logNotReady(w.cfg.Logger, st)
		}
	}
	return nil
}

// askConfigChange runs the ConfigChange hooks of the policy in force for
// each hook settings file the reload would create, change or remove (as
// Claude Code runs them when a settings file changes in a session): an
// audit hook hears of it, and a refusal (exit 2 or decision "block")
// keeps the policy in force, as Claude Code keeps the settings, naming
// the hook, the file and the reason. Managed settings cannot be refused;
// a refusal is logged. Without a record of the accepted policy (no data
// directory) there is nothing to compare and no hook runs.
func (w *Worker) askConfigChange(now claudecode.Snapshot) error {
	if w.cfg.DataDir == "" {
		return nil
	}
	accepted, err := readAcceptedPolicy(w.cfg.DataDir)
	if err != nil || accepted == nil {
		return err
	}
	registry := w.hooks.Load()
	home, _ := os.UserHomeDir()
	ctx, cancel := context.WithTimeout(context.Background(), configChangeTimeout)
	defer cancel()
	for _, c := range accepted.Hooks.Changes(now) {
		if !slices.Contains([]string{"created", "changed", "removed"}, c.What) {
			continue
		}
		source, dir := claudecode.ConfigChangeSource(c.Path, home)
		if source == "" {
			continue
		}
		sum := registry.RunConfigChange(ctx, hooks.ConfigChangeEvent{
			Session: hooks.Session{WorkspaceRoot: dir}, Source: source, FilePath: c.Path, Change: c.What})
		if err := sum.Err(); err != nil {
			w.cfg.Logger.Warn("a ConfigChange hook failed", "file", c.Path, "error", err)
		}
		if len(sum.Decisions) > 0 {
			w.cfg.Logger.Info("ConfigChange hooks ran", "file", c.Path, "source", source, "change", c.What, "blocked", sum.Blocked)
		}
		switch {
		case sum.Blocked == "":
		case source == hooks.ConfigPolicySettings:
			w.cfg.Logger.Warn("a ConfigChange hook asked to keep managed settings, which cannot be refused", "file", c.Path, "refusal", sum.Blocked)
		default:
			return fmt.Errorf("%s (%s, %s) was refused by ConfigChange %s", c.Path, source, c.What, sum.Blocked)
		}
	}
	return nil
}

// configChangeTimeout bounds a reload's ConfigChange hooks together.
const configChangeTimeout = 5 * time.Minute
