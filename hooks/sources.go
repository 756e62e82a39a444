package hooks

import "slices"

// Source is a set of hooks loaded from one place (a settings file, a
// plugin), described the way the registry needs it: a wing (such as
// hooks/claudecode) loads the place and hands the registry this.
type Source struct {
	// Path names where the hooks came from, for the log and the trace.
	Path string
	// Data is the source as read; it is the source's contribution to
	// PolicyFingerprint.
	Data []byte
	// Scripts are the files the source's hooks run, as read at load
	// (Script set, Path relative to the project); their bytes are part of
	// PolicyFingerprint, so a rewritten guard is a different policy.
	Scripts []PolicySource
	// Hooks are added to the registry in this order.
	Hooks []AgentHook
	// Labels are the loader's own attributes of the source (for the Claude
	// Code adapter: kind and dialect), kept for the log and the trace.
	Labels map[string]string
	// Warnings list what the source holds that Fenix does not run.
	Warnings []string
	// Protected are absolute paths tools must never write because the
	// source's hooks run or configure them.
	Protected []string
	// ProtectedRelative are workspace-relative paths tools must never
	// write, in every workspace.
	ProtectedRelative []string
}

// SourceInfo is what a registry records about a source it loaded.
type SourceInfo struct {
	Path     string            `json:"path"`
	Labels   map[string]string `json:"labels,omitempty"`
	Hooks    int               `json:"hooks"`
	Warnings []string          `json:"warnings,omitempty"`
	// Data is the source's content when it was loaded.
	Data              []byte   `json:"-"`
	Protected         []string `json:"-"`
	ProtectedRelative []string `json:"-"`
}

// AddSource registers a source's hooks, in order, and records the source:
// for protection and as a policy source of PolicyFingerprint.
func (r *Registry) AddSource(src Source) {
	for _, h := range src.Hooks {
		r.Add(h)
	}
	r.sources = append(r.sources, SourceInfo{Path: src.Path, Labels: src.Labels, Hooks: len(src.Hooks),
		Warnings: src.Warnings, Data: src.Data, Protected: src.Protected, ProtectedRelative: src.ProtectedRelative})
	r.RecordSource(src.Path, src.Data)
	for _, sc := range src.Scripts {
		r.policy = append(r.policy, PolicySource{Path: sc.Path, Data: slices.Clone(sc.Data), Script: true})
	}
}

// Sources lists the sources the registry loaded, in order.
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
