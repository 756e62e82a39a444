package worker

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/claudecode"
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
func (w *Worker) liveHooks(r *hooks.Registry) *atomic.Pointer[hooks.Registry] {
	w.hooks.Store(r)
	w.cfg.Logger.Info("hook policy loaded", "policy_fingerprint", r.PolicyFingerprint(nil), "sources", len(r.Sources()))
	return &w.hooks
}

// ReloadHooks re-reads the hook settings files and the scripts they run
// (pinning fresh copies) and swaps the new registry in for the next hook
// call; calls in flight finish under the old one. It is the only way a
// change on disk takes effect in a running worker: the worker calls it on
// SIGHUP, the operator's signal. What it loads becomes the accepted
// policy, with the MCP configuration files as they are now, which the
// next start runs (see acceptedPolicyFile). The new policy fingerprint is
// logged; on error the loaded policy stays.
func (w *Worker) ReloadHooks() (fingerprint string, err error) {
	// MCP servers start once, with the worker: a reload does not
	// restart them, so their settings are not applied until the next start.
	loaded, mcpFiles, err := w.loadPolicy(nil)
	if err != nil {
		w.cfg.Logger.Error("hook reload failed; the loaded hook policy stays", "error", err)
		return "", err
	}
	accepted := &acceptedPolicy{AcceptedAt: time.Now().UTC(), How: "SIGHUP", Hooks: loaded.snapshot, MCP: mcpFiles}
	if err := accepted.write(w.cfg.DataDir); err != nil {
		w.cfg.Logger.Error("hook reload failed; the loaded hook policy stays", "error", err)
		return "", err
	}
	r := loaded.registry
	old := w.hooks.Swap(r)
	w.policyHeld.Store(false)
	fingerprint = r.PolicyFingerprint(nil)
	w.cfg.Logger.Info("hook policy reloaded and accepted", "policy_fingerprint", fingerprint,
		"previous_fingerprint", old.PolicyFingerprint(nil), "sources", len(r.Sources()))
	return fingerprint, nil
}
