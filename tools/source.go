package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fenixrt/fenix/fenixerr"
)

// Source supplies tools whose set changes while the worker runs, such as
// the tools of MCP servers. A registry consults its sources after its
// fixed tools, so a source never shadows a built-in.
type Source interface {
	// Tool returns the named tool. ok is false when the source does not
	// know the name; err is set when the source owns the name but cannot
	// serve it now (its server is down), and is returned as the review's
	// error instead of UnsupportedToolError.
	Tool(name string) (d Definition, ok bool, err error)
	// Definitions lists the tools the source serves now.
	Definitions() []Definition
}

// ResultProjector is implemented by sources that can project a result
// without its tool, so a call that ran is still projected when its tool
// has since disappeared or its server is restarting.
type ResultProjector interface {
	ProjectResult(name string, args map[string]any, raw json.RawMessage) (p Projection, ok bool, err error)
}

// projectWithoutTool asks the sources that can to project a result.
func (r *Registry) projectWithoutTool(name string, args map[string]any, raw json.RawMessage) (Projection, bool, error) {
	for _, s := range r.sources {
		if rp, ok := s.(ResultProjector); ok {
			if p, ok, err := rp.ProjectResult(name, args, raw); ok {
				return p, true, err
			}
		}
	}
	return Projection{}, false, nil
}

// WithSources returns a registry that also serves the sources' tools.
func (r *Registry) WithSources(sources ...Source) *Registry {
	return &Registry{defs: r.defs, sources: append(append([]Source(nil), r.sources...), sources...)}
}

// lookup finds a tool among the fixed definitions, then the sources.
func (r *Registry) lookup(name string) (Definition, error) {
	if d, ok := r.defs[name]; ok {
		return d, nil
	}
	for _, s := range r.sources {
		d, ok, err := s.Tool(name)
		if err != nil {
			return Definition{}, err
		}
		if ok {
			return d, nil
		}
	}
	return Definition{}, fenixerr.UnsupportedTool(name)
}

// NameAllowed applies an allow-list the way Claude Code's permission rules
// name MCP tools: an entry is a tool name, "mcp__<server>" for every tool
// of that server, "mcp__<server>__*" likewise, or "mcp__*" for every MCP
// tool.
func NameAllowed(allowed []string, name string) bool {
	for _, a := range allowed {
		if a == name || (a == "mcp__*" && strings.HasPrefix(name, "mcp__")) {
			return true
		}
		server := strings.TrimSuffix(a, "__*")
		if strings.HasPrefix(server, "mcp__") && !strings.Contains(server[len("mcp__"):], "__") &&
			strings.HasPrefix(name, server+"__") {
			return true
		}
	}
	return false
}

// Allowed lists the tools an allow-list grants, in the list's order, each
// server entry ("mcp__<server>") expanded to that server's current tools.
func (r *Registry) Allowed(allowed []string) []Definition {
	var out []Definition
	seen := map[string]bool{}
	add := func(d Definition) {
		if !seen[d.Name] {
			seen[d.Name] = true
			out = append(out, d)
		}
	}
	var dynamic []Definition
	for _, s := range r.sources {
		dynamic = append(dynamic, s.Definitions()...)
	}
	for _, a := range allowed {
		if d, err := r.lookup(a); err == nil {
			add(d)
			continue
		}
		for _, d := range dynamic {
			if NameAllowed([]string{a}, d.Name) {
				add(d)
			}
		}
	}
	return out
}

// DynamicSpec describes a tool whose argument schema is given as JSON
// rather than generated from a Go type (the tools of MCP servers).
type DynamicSpec struct {
	Spec
	// Schema is the JSON schema of the arguments (an object schema).
	Schema json.RawMessage
	// Execute runs a validated call and returns its raw result.
	Execute func(ctx context.Context, env *Env, args map[string]any) (json.RawMessage, error)
	// Project turns a raw result into narrative content.
	Project func(args map[string]any, raw json.RawMessage) (Projection, error)
}

// DefineDynamic builds a Definition from a JSON schema. Arguments are
// checked against the size cap and the schema before Execute sees them.
func DefineDynamic(spec DynamicSpec) (Definition, error) {
	spec.applyDefaults()
	doc, err := validator.UnmarshalJSON(bytes.NewReader(spec.Schema))
	if err != nil {
		return Definition{}, fmt.Errorf("tool %q: input schema is not JSON: %w", spec.Name, err)
	}
	c := validator.NewCompiler()
	c.UseLoader(noExternalSchemas{tool: spec.Name})
	url := "fenix://tools/" + spec.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return Definition{}, fmt.Errorf("tool %q: input schema: %w", spec.Name, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return Definition{}, fmt.Errorf("tool %q: input schema does not compile: %w", spec.Name, err)
	}
	unchecked := RecursiveSchema(doc)
	if unchecked {
		// Validating against a schema that refers back into itself can
		// take time exponential in the arguments' depth: a server's
		// oneOf of three branches, each referring to it again, took 23 s
		// for 12 levels, and longer than any call for 16. Such a tool's
		// arguments are bounded in size only; the server checks the rest.
		compiled = nil
	}
	defaults := requiredDefaults(doc)
	validate := func(args map[string]any) error {
		if args == nil {
			args = map[string]any{}
		}
		_, err := checkArguments(spec.Name, spec.MaxArgBytes, compiled, withDefaults(args, defaults))
		return err
	}
	return Definition{
		Descriptor: spec.descriptor(spec.Schema),
		validate:   validate,
		// Registry.Execute validates before it executes.
		execute:   spec.Execute,
		project:   spec.Project,
		owner:     spec.Owner,
		unchecked: unchecked,
	}, nil
}

// requiredDefaults are the top-level properties an object schema both
// requires and gives a default. Zod 4's JSON Schema (the TypeScript SDK's
// servers: @playwright/mcp's browser_take_screenshot "scale") lists a
// field with a default as required, while the server fills the default
// in when the field is missing; a validator, for which "default" is only
// an annotation, refused the call the server takes.
func requiredDefaults(doc any) map[string]any {
	schema, _ := doc.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	required, _ := schema["required"].([]any)
	out := map[string]any{}
	for _, r := range required {
		name, _ := r.(string)
		prop, _ := props[name].(map[string]any)
		if d, ok := prop["default"]; ok {
			out[name] = d
		}
	}
	return out
}

// withDefaults is args with the missing ones of defaults filled in, for
// validation only: the call goes to the server as the caller wrote it,
// and the server fills them in as it would have.
func withDefaults(args, defaults map[string]any) map[string]any {
	missing := false
	for name := range defaults {
		if _, ok := args[name]; !ok {
			missing = true
		}
	}
	if !missing {
		return args
	}
	filled := maps.Clone(args)
	for name, d := range defaults {
		if _, ok := filled[name]; !ok {
			filled[name] = d
		}
	}
	return filled
}

// RecursiveSchema reports whether a JSON schema (as decoded) refers back
// into itself: a $ref whose target holds a $ref that leads, directly or
// through others, to it again. A reference Fenix does not follow as a
// JSON pointer into the document ($dynamicRef, $recursiveRef, an anchor)
// counts as recursive.
func RecursiveSchema(doc any) bool {
	refs := map[string][]string{} // location -> the pointers it refers to
	opaque := false
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				switch k {
				case "$dynamicRef", "$recursiveRef":
					opaque = true
				case "$ref":
					ref, _ := child.(string)
					if ref != "#" && !strings.HasPrefix(ref, "#/") {
						opaque = true
						continue
					}
					refs[at] = append(refs[at], strings.TrimPrefix(ref, "#"))
					continue
				}
				walk(child, at+"/"+pointerEscape.Replace(k))
			}
		case []any:
			for i, child := range v {
				walk(child, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "")
	if opaque {
		return true
	}
	// Each target leads to the targets of the references inside it.
	leads := func(target string) []string {
		var out []string
		for at, to := range refs {
			if at == target || strings.HasPrefix(at, target+"/") || target == "" {
				out = append(out, to...)
			}
		}
		return out
	}
	const (
		_ = iota // not reached yet
		open
		done
	)
	state := map[string]int{}
	var cyclic func(target string) bool
	cyclic = func(target string) bool {
		switch state[target] {
		case open:
			return true
		case done:
			return false
		}
		state[target] = open
		for _, next := range leads(target) {
			if cyclic(next) {
				return true
			}
		}
		state[target] = done
		return false
	}
	for _, to := range refs {
		for _, target := range to {
			if cyclic(target) {
				return true
			}
		}
	}
	return false
}

// pointerEscape escapes a key as a JSON pointer's token (RFC 6901).
var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

// noExternalSchemas refuses every $ref or $schema a dynamic tool's schema
// makes outside itself. Such schemas come from MCP servers and plugins:
// the compiler's default loader would read any file:// path on the worker
// (and a validation error would then show its content to the caller) or
// block on a FIFO. The standard drafts' meta-schemas are built in.
type noExternalSchemas struct{ tool string }

func (l noExternalSchemas) Load(url string) (any, error) {
	return nil, fmt.Errorf("tool %q: input schema refers to %q: Fenix loads no schema outside the tool's own", l.tool, url)
}
