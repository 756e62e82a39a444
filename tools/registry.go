// Package tools is Fenix's system tool registry: every tool has an executor
// (talks to the outside world and returns a raw, machine-readable result), a
// projector (turns that result into narrative content plus structured
// metadata), a JSON schema for its arguments and a registry_backed flag for
// tools that hold host-local state.
//
// Adding a tool is a single-file change: write a file that defines it with
// Define and registers it in an init function.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// Projection is a projector's output: narrative content for the
// conversation and structured metadata for machines.
type Projection struct {
	Content  string         `json:"content"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Descriptor is what the workflow needs to know about a tool to schedule
// it: where it must run and whether re-running it is safe. It travels in
// ReviewToolCall's result, so replay sees the same plan.
type Descriptor struct {
	Name           string `json:"name"`
	Description    string `json:"description"`
	RegistryBacked bool   `json:"registry_backed"`
	Idempotent     bool   `json:"idempotent"`
	// Local tools may run as a local activity (see Spec.Local).
	Local bool `json:"local,omitempty"`
	// ReadOnly tools change nothing (see Spec.ReadOnly); kept out of
	// history, the worker reads it from its registry.
	ReadOnly       bool `json:"-"`
	NeedsWorkspace bool `json:"needs_workspace"`
	// WatchesWorkspace: see Spec.WatchesWorkspace; kept out of history.
	WatchesWorkspace bool `json:"-"`
	// TimeoutSeconds bounds one execution (start to close).
	TimeoutSeconds int `json:"timeout_seconds"`
	// HeartbeatSeconds, when > 0, is the heartbeat timeout of a long tool.
	HeartbeatSeconds int             `json:"heartbeat_seconds,omitempty"`
	Schema           json.RawMessage `json:"schema"`
	// MaxArgBytes is the largest JSON encoding of the arguments the tool
	// accepts (Spec.MaxArgBytes); kept out of history.
	MaxArgBytes int `json:"-"`
	// Declared: see Spec.Declared; kept out of history (ListTools carries
	// it to the MCP gateway).
	Declared *Declared `json:"-"`
}

// Declared is what an MCP server declared of its tool that Fenix does not
// need to run it but an MCP client of Fenix's gateway does: its title, the
// schema of its structured output and its hints (readOnlyHint,
// destructiveHint, ...), as the server sent them. The gateway serves the
// tool with them, and a call's structured content as the tool's own.
type Declared struct {
	Title        string          `json:"title,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Definition is one registry entry.
type Definition struct {
	Descriptor
	validate func(args map[string]any) error
	execute  func(ctx context.Context, env *Env, args map[string]any) (json.RawMessage, error)
	project  func(args map[string]any, result json.RawMessage) (Projection, error)
	// owner extracts the resource a call refers to (for example the
	// process_run_id of process_stop), so the call is routed to the host
	// that owns it. Empty when the call creates a new resource.
	owner func(args map[string]any) string
	// unchecked is set for a dynamic tool whose schema refers back into
	// itself: its arguments are bounded in size, not validated
	// (DefineDynamic).
	unchecked bool
}

// SchemaUnchecked reports whether the tool's arguments are bounded in
// size but not validated against its schema, which refers back into
// itself (DefineDynamic).
func (d Definition) SchemaUnchecked() bool { return d.unchecked }

// Validate checks arguments against the tool's schema and decodes them
// strictly, without executing anything.
func (d Definition) Validate(args map[string]any) error { return d.validate(args) }

// OwnerResource returns the resource ID the call refers to, if any.
func (d Definition) OwnerResource(args map[string]any) string {
	if d.owner == nil {
		return ""
	}
	return d.owner(args)
}

var (
	builtinMu   sync.Mutex
	builtinDefs []Definition
)

// register adds a built-in tool. Called from init functions only.
func register(d Definition) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	builtinDefs = append(builtinDefs, d)
}

// Registry is an immutable set of tools keyed by name.
type Registry struct {
	defs    map[string]Definition
	sources []Source
}

// NewRegistry builds a registry; duplicate names are an error.
func NewRegistry(defs ...Definition) (*Registry, error) {
	r := &Registry{defs: make(map[string]Definition, len(defs))}
	for _, d := range defs {
		if d.Name == "" {
			return nil, fmt.Errorf("tool registry: a definition has no name")
		}
		if _, dup := r.defs[d.Name]; dup {
			return nil, fmt.Errorf("tool registry: tool %q is defined twice", d.Name)
		}
		if d.Local && (!d.Idempotent || d.RegistryBacked || d.HeartbeatSeconds > 0) {
			return nil, fmt.Errorf("tool registry: tool %q is Local but not idempotent, registry-backed or long-running (heartbeat): a local activity may run again after a worker crash and cannot heartbeat", d.Name)
		}
		r.defs[d.Name] = d
	}
	return r, nil
}

// Builtin returns a registry of every built-in tool.
func Builtin() *Registry {
	builtinMu.Lock()
	defs := slices.Clone(builtinDefs)
	builtinMu.Unlock()
	r, err := NewRegistry(defs...)
	if err != nil {
		panic(err)
	}
	return r
}

// Lookup finds a tool by name.
func (r *Registry) Lookup(name string) (Definition, bool) {
	d, err := r.lookup(name)
	return d, err == nil
}

// Names lists tool names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.defs))
	for _, d := range r.all() {
		names = append(names, d.Name)
	}
	return names
}

// Descriptors lists every tool's descriptor, sorted by name.
func (r *Registry) Descriptors() []Descriptor {
	all := r.all()
	out := make([]Descriptor, 0, len(all))
	for _, d := range all {
		out = append(out, d.Descriptor)
	}
	return out
}

// all lists the fixed tools and the sources' current ones, sorted by name;
// a source's tool never shadows a fixed one.
func (r *Registry) all() []Definition {
	out := make([]Definition, 0, len(r.defs))
	for _, d := range r.defs {
		out = append(out, d)
	}
	for _, s := range r.sources {
		for _, d := range s.Definitions() {
			if _, fixed := r.defs[d.Name]; !fixed {
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Review applies the seed's two checks in order: the tool must be in the
// registry (UnsupportedToolError), then in allowed_tool_names
// (ToolNotVisibleError). It also validates the arguments, so a malformed
// call fails before anything is scheduled.
func (r *Registry) Review(call contract.ToolCall, agent contract.AgentContext) (Definition, error) {
	d, err := r.lookup(call.ToolName)
	if err != nil {
		return Definition{}, err
	}
	if !NameAllowed(agent.AllowedToolNames, call.ToolName) {
		return Definition{}, fenixerr.ToolNotVisible(call.ToolName, agent.Profile)
	}
	if err := d.validate(call.Arguments); err != nil {
		return Definition{}, err
	}
	return d, nil
}

// Execute runs a reviewed call. The raw result is JSON.
func (r *Registry) Execute(ctx context.Context, env *Env, call contract.ToolCall) (json.RawMessage, error) {
	d, err := r.lookup(call.ToolName)
	if err != nil {
		return nil, err
	}
	if err := d.validate(call.Arguments); err != nil {
		return nil, err
	}
	if d.NeedsWorkspace && env.Workspace == nil {
		return nil, fenixerr.Validation("tool %q needs a workspace: pass workspace_root in the assignment or set FENIX_WORKSPACE_ROOT on the worker", call.ToolName).WithTool(call.ToolName)
	}
	raw, err := d.execute(ctx, env, call.Arguments)
	if err != nil {
		fe := fenixerr.As(err)
		if fe.Tool == "" {
			fe.Tool = call.ToolName
		}
		return nil, fe
	}
	return raw, nil
}

// Project turns a raw result into narrative content.
func (r *Registry) Project(call contract.ToolCall, raw json.RawMessage) (Projection, error) {
	d, err := r.lookup(call.ToolName)
	if err != nil {
		p, ok, perr := r.projectWithoutTool(call.ToolName, call.Arguments, raw)
		if !ok {
			return Projection{}, err
		}
		if perr != nil {
			return Projection{}, fenixerr.Runtime("projecting the result of tool %q failed: %v", call.ToolName, perr).WithTool(call.ToolName)
		}
		return p, nil
	}
	p, err := d.project(call.Arguments, raw)
	if err != nil {
		return Projection{}, fenixerr.Runtime("projecting the result of tool %q failed: %v", call.ToolName, err).WithTool(call.ToolName)
	}
	return p, nil
}

// describeArgs renders arguments compactly for error messages.
func describeArgs(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return "<unprintable>"
	}
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}
