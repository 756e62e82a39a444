package claudecode

import (
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
)

// workspacePins pins the scripts a command hook names from the workspace
// ("$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh, sh .claude/hooks/guard.sh)
// when its settings file is outside every project (a fleet's
// -claude-settings): there is no project to pin them against at load, so
// they are pinned at the hook's first run in each workspace, and later
// runs there run that copy. An agent's command that rewrites its
// workspace's guard after that changes nothing until the hooks are
// reloaded, as with a project's own scripts. The copies live for the
// worker's process: a restart pins again at the first run.
type workspacePins struct {
	// source is the settings file, for warnings.
	source string
	paths  HookPaths
	env    map[string]string
	store  *ScriptStore
	// command and args are the command as loaded: what it names outside
	// the workspace is already pinned, and absent was absent at load.
	command  string
	args     []string
	execForm bool
	absent   []string
	// book, when set, holds the pins across restarts.
	book *WorkspacePinBook

	mu sync.Mutex
	at map[string]*workspacePin
}

// workspacePin is a command as pinned for one workspace.
type workspacePin struct {
	ready   chan struct{}
	command string
	args    []string
	// scripts are the files the pinned command launches; absent those
	// that did not exist at the first run (or at load).
	scripts []string
	absent  []string
	err     error
}

// newWorkspacePins returns the pins of a command hook whose settings file
// has no project, nil when it names no script from the workspace or there
// is no store to pin into.
func newWorkspacePins(cfg CommandHookConfig, store *ScriptStore) *workspacePins {
	if store == nil || cfg.Paths.ProjectDir != "" || cfg.Paths.PluginRoot != "" {
		return nil
	}
	execForm := cfg.Args != nil
	vars := cfg.Paths.placeholders()
	if !execForm {
		vars = shellVars(vars, cfg.Env)
	}
	relative := slices.ContainsFunc(launchedPaths(cfg.Command, cfg.Args, execForm, vars), func(w string) bool { return !filepath.IsAbs(w) })
	if !relative {
		return nil
	}
	source, err := filepath.Abs(cfg.Source)
	if err != nil {
		source = cfg.Source
	}
	return &workspacePins{source: source, paths: cfg.Paths, env: cfg.Env, store: store, command: cfg.Command,
		args: cfg.Args, execForm: execForm, absent: cfg.Absent, book: cfg.WorkspacePins, at: map[string]*workspacePin{}}
}

// in is the command pinned for workspace root, pinning it at the first
// call there (concurrent first calls wait for one pinning).
func (w *workspacePins) in(root string, logger *slog.Logger) *workspacePin {
	w.mu.Lock()
	p, pinned := w.at[root]
	if !pinned {
		p = &workspacePin{ready: make(chan struct{})}
		w.at[root] = p
	}
	w.mu.Unlock()
	if pinned {
		<-p.ready
		return p
	}
	defer close(p.ready)
	paths := w.paths
	paths.ProjectDir = root
	vars := paths.placeholders()
	if !w.execForm {
		vars = shellVars(vars, w.env)
	}
	defer func() { p.scripts = scriptFiles(p.command, p.args, w.execForm, vars, root) }()
	loaded := append([]string{w.command}, w.args...)
	if w.book != nil {
		if rec, ok := w.book.find(w.source, loaded, root); ok {
			p.command, p.args, p.absent, p.err = rec.Command, rec.Args, rec.Absent, storedCopiesExist(rec)
			return p
		}
	}
	src := &Source{Path: w.source, Paths: paths, env: w.env}
	pins := &pinner{src: src, store: w.store, absent: slices.Clone(w.absent)}
	p.command, p.args, p.err = pins.command(w.command, w.args, w.execForm)
	p.absent = pins.absent
	for _, warning := range src.Warnings {
		logger.Warn("hook scripts pinned in a workspace", "workspace", root, "warning", warning)
	}
	if w.book != nil && p.err == nil {
		rec := WorkspacePin{Settings: w.source, Loaded: loaded, Workspace: root, Command: p.command, Args: p.args, Absent: p.absent}
		for _, t := range pins.trees {
			rec.Stored = appendNew(rec.Stored, t.stored)
		}
		if err := w.book.add(rec); err != nil {
			logger.Error("recording the hook scripts pinned in a workspace failed: a restart pins them again from the workspace", "workspace", root, "error", err)
		}
	}
	return p
}

// PinWorkspace pins the scripts the hook takes from the workspace root
// (see workspacePins), as its first run there would: the worker calls it
// before any tool acts in a workspace, so a call the hook does not match
// cannot change what it will run. A hook that takes nothing from the
// workspace does nothing.
func (h *ExternalHook) PinWorkspace(root string) {
	if t, ok := h.transport.(*commandTransport); ok && t.inWorkspace != nil {
		t.inWorkspace.in(root, h.logger)
	}
}
