package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/internal/atomicfile"
	"github.com/fenixrt/fenix/internal/readlimit"
	"github.com/fenixrt/fenix/tools/mcp"
)

// acceptedPolicyFile, in the data directory, records the policy the
// worker last accepted: the hook settings files' bytes, the pinned copies
// of their scripts and the MCP configuration files.
//
// A command may rewrite a project's .claude/settings.json, its hook
// scripts or its .mcp.json (the workspace is its to write; the change is
// reported as protected_paths_changed). The running worker keeps what it
// loaded, but without this record the next start — a deploy, or a restart
// after a crash with nobody watching — would load what the command wrote.
// With it, a start that finds such a change in a workspace keeps the
// accepted policy and says what differs; the operator adopts the files on
// disk with SIGHUP or -accept-policy-change.
const acceptedPolicyFile = "accepted-policy.json"

// maxAcceptedPolicyBytes bounds the record: settings and .mcp.json files
// are kilobytes; scripts are referenced, not copied, here.
const maxAcceptedPolicyBytes = 16 << 20

// acceptedPolicy is the record.
type acceptedPolicy struct {
	AcceptedAt time.Time `json:"accepted_at"`
	// How says what accepted it: "first start", "start", "SIGHUP",
	// "-accept-policy-change".
	How   string              `json:"how"`
	Hooks claudecode.Snapshot `json:"hooks"`
	MCP   []mcp.ConfigFile    `json:"mcp"`
}

// readAcceptedPolicy reads the record in dataDir; nil when there is none.
func readAcceptedPolicy(dataDir string) (*acceptedPolicy, error) {
	path := filepath.Join(dataDir, acceptedPolicyFile)
	data, err := readlimit.File(path, maxAcceptedPolicyBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the accepted hook policy %s: %w", path, err)
	}
	var p acceptedPolicy
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("the accepted hook policy %s is not readable (%v): remove it, or start with -accept-policy-change, to accept the policy on disk", path, err)
	}
	return &p, nil
}

// write replaces the record in dataDir (whole, or not at all).
func (p *acceptedPolicy) write(dataDir string) error {
	if err := writeRecord(dataDir, acceptedPolicyFile, p); err != nil {
		return fmt.Errorf("recording the accepted hook policy: %w", err)
	}
	return nil
}

// writeRecord replaces dataDir/name with v as JSON, whole or not at all.
func writeRecord(dataDir, name string, v any) error {
	return atomicfile.WriteJSON(dataDir, name, v)
}

// changes lists what differs in now from p: hook settings files, script
// directories and MCP configuration files.
func (p *acceptedPolicy) changes(now *acceptedPolicy) []claudecode.SnapshotChange {
	out := p.Hooks.Changes(now.Hooks)
	accepted := map[string]mcp.ConfigFile{}
	for _, f := range p.MCP {
		accepted[f.Path] = f
	}
	seen := map[string]bool{}
	for _, f := range now.MCP {
		seen[f.Path] = true
		before, ok := accepted[f.Path]
		switch {
		case !ok && f.Missing:
			// a project without .mcp.json, before as now
		case !ok || before.Missing && !f.Missing:
			out = append(out, claudecode.SnapshotChange{Path: f.Path, What: "created"})
		case f.Missing && !before.Missing:
			out = append(out, claudecode.SnapshotChange{Path: f.Path, What: "removed"})
		case !bytes.Equal(before.Data, f.Data):
			out = append(out, claudecode.SnapshotChange{Path: f.Path, What: "changed"})
		}
	}
	for _, f := range p.MCP {
		if !seen[f.Path] && !f.Missing {
			out = append(out, claudecode.SnapshotChange{Path: f.Path, What: "removed"})
		}
	}
	return out
}

// policyChoice is what a start runs.
type policyChoice struct {
	// keep is set when the start runs the accepted policy, not the disk's.
	keep bool
	// why says what decided it, for the log.
	why string
	// changes are the differences from the accepted policy; held are
	// those within the agents' reach, which keep it.
	changes, held []claudecode.SnapshotChange
}

// choosePolicy decides between the accepted policy and the one on disk
// (onDisk, or diskErr when it did not load). A change the agents could
// have made (agentWritable: inside a workspace, or anywhere when commands
// run unconfined) keeps the accepted policy unless the operator accepts
// it; changes elsewhere are the operator's and are adopted.
func choosePolicy(accepted, onDisk *acceptedPolicy, diskErr error, acceptChange bool, agentWritable func(string) bool) (policyChoice, error) {
	switch {
	case accepted == nil && diskErr != nil:
		return policyChoice{}, diskErr
	case accepted == nil:
		return policyChoice{why: "first start"}, nil
	case diskErr != nil && acceptChange:
		return policyChoice{}, fmt.Errorf("-accept-policy-change: the policy on disk does not load: %w", diskErr)
	case diskErr != nil:
		return policyChoice{keep: true, why: "the policy on disk does not load: " + diskErr.Error()}, nil
	}
	c := policyChoice{changes: accepted.changes(onDisk)}
	for _, ch := range c.changes {
		if agentWritable(ch.Path) {
			c.held = append(c.held, ch)
		}
	}
	switch {
	case len(c.changes) == 0:
		c.why = "unchanged"
	case len(c.held) == 0:
		c.why = "changed outside the workspaces only"
	case acceptChange:
		c.why = "-accept-policy-change"
	default:
		c.keep = true
		c.why = "changed in a workspace since it was accepted: " + describeChanges(c.held)
	}
	return c, nil
}

func describeChanges(changes []claudecode.SnapshotChange) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// startPolicy loads what a start runs: the hook settings and MCP
// configurations on disk, or the accepted policy when they changed within
// the agents' reach (see acceptedPolicyFile), and records what it
// accepted.
func (w *Worker) startPolicy(agentWritable func(string) bool) (loadedHooks, []mcp.ConfigFile, error) {
	cfg := w.cfg
	accepted, err := readAcceptedPolicy(cfg.DataDir)
	if err != nil {
		return loadedHooks{}, nil, err
	}
	var pins []claudecode.WorkspacePin
	if !cfg.AcceptPolicyChange {
		pins = w.readWorkspacePins()
	}
	book := w.newPinBook(pins)
	loaded, mcpFiles, diskErr := w.loadPolicy(nil, book)
	onDisk := &acceptedPolicy{AcceptedAt: time.Now().UTC(), Hooks: loaded.snapshot, MCP: mcpFiles}
	choice, err := choosePolicy(accepted, onDisk, diskErr, cfg.AcceptPolicyChange, agentWritable)
	if err != nil {
		return loadedHooks{}, nil, err
	}
	if choice.keep {
		if loaded, _, err = w.loadPolicy(&accepted.Hooks, book); err != nil {
			return loadedHooks{}, nil, fmt.Errorf("the hook policy on disk is not taken (%s), and the accepted one in %s does not load: %w; start with -accept-policy-change to run the one on disk",
				choice.why, filepath.Join(cfg.DataDir, acceptedPolicyFile), err)
		}
		w.policyHeld.Store(true)
		if err := w.usePinBook(book); err != nil {
			return loadedHooks{}, nil, err
		}
		w.pruneScripts(accepted.Hooks, book)
		cfg.Logger.Error("running the hook policy accepted before, not the one on disk: an operator accepts the files on disk with SIGHUP (kill -HUP <worker pid>) or by starting with -accept-policy-change",
			"reason", choice.why, "accepted_at", accepted.AcceptedAt, "accepted_by", accepted.How)
		return loaded, accepted.MCP, nil
	}
	if len(choice.changes) > 0 {
		cfg.Logger.Warn("adopting the hook policy on disk, which differs from the one accepted before", "reason", choice.why, "changes", describeChanges(choice.changes))
	}
	if accepted == nil || len(choice.changes) > 0 {
		onDisk.How = choice.why
		if err := onDisk.write(cfg.DataDir); err != nil {
			return loadedHooks{}, nil, err
		}
	}
	if err := w.usePinBook(book); err != nil {
		return loadedHooks{}, nil, err
	}
	w.pruneScripts(onDisk.Hooks, book)
	return loaded, mcpFiles, nil
}

// pruneScripts removes the pinned copies the policy a start runs does
// not use (its settings' and its workspace pins'): every load pins what it
// reads, also a disk's policy that is not taken, so the store would grow
// with every changed script.
func (w *Worker) pruneScripts(running claudecode.Snapshot, pins *claudecode.WorkspacePinBook) {
	store, err := hookScriptStore(w.cfg)
	if err != nil || store == nil {
		return
	}
	removed, err := store.Prune(append(running.Stored(), pins.Stored()...))
	if err != nil {
		w.cfg.Logger.Warn("removing unused pinned hook scripts failed", "error", err)
	}
	if removed > 0 {
		w.cfg.Logger.Info("removed unused pinned hook scripts", "copies", removed, "store", store.Dir())
	}
}

// PolicyHeld reports whether the worker runs the policy it accepted
// before because the files on disk differ (see acceptedPolicyFile), until
// a SIGHUP accepts them.
func (w *Worker) PolicyHeld() bool { return w.policyHeld.Load() }

// loadPolicy builds the hook registry, from the settings on disk or from
// a snapshot, and reads the MCP configuration files on disk.
func (w *Worker) loadPolicy(from *claudecode.Snapshot, pins *claudecode.WorkspacePinBook) (loadedHooks, []mcp.ConfigFile, error) {
	loaded, err := buildHooks(w.cfg, w.audit, w.mcpHooks, w.hookAgent, w.Host, w.hookReadOnly, from, pins)
	if err != nil || from != nil {
		return loaded, nil, err
	}
	files, err := mcp.ReadConfigs(mcpPaths(w.cfg))
	return loaded, files, err
}

// agentWritable reports whether agents could have written path: their
// commands anywhere when they run unconfined, else inside a workspace;
// the code hooks run from the workspace (a PostToolUse npm test) wherever
// the hooks' domain reaches (tools.Host.HooksReach), which is most of the
// host outside the system's directories.
func agentWritable(host interface {
	CommandsConfined() bool
	HooksReach(string) bool
}, bases interface{ Holds(string) bool }) func(string) bool {
	return func(path string) bool { return !host.CommandsConfined() || bases.Holds(path) || host.HooksReach(path) }
}
