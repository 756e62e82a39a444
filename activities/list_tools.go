package activities

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// maxCatalogBytes bounds the ListTools result well under Temporal's 2 MB
// payload limit.
const maxCatalogBytes = 1 << 20

// ToolCatalog is the tools a worker serves: every descriptor of its
// registry (built-in tools, tools added by configuration such as MCP
// servers' mcp__<server>__<tool>), sorted by name.
type ToolCatalog struct {
	Tools []tools.Descriptor `json:"tools"`
	// Declared is, by tool name, what an MCP server declared of its tools
	// beyond their descriptors (tools.Declared), which history keeps out
	// of every descriptor a call records.
	Declared map[string]*tools.Declared `json:"declared,omitempty"`
	// ReadOnly names the tools that change nothing (tools.Spec.ReadOnly),
	// which the descriptors keep out of history: the gateway serves them
	// with readOnlyHint.
	ReadOnly []string `json:"read_only,omitempty"`
}

// WithDeclared returns the catalog's descriptors with what their servers
// declared of them, and whether they only read.
func (c ToolCatalog) WithDeclared() []tools.Descriptor {
	out := make([]tools.Descriptor, len(c.Tools))
	for i, d := range c.Tools {
		d.Declared = c.Declared[d.Name]
		d.ReadOnly = slices.Contains(c.ReadOnly, d.Name)
		out[i] = d
	}
	return out
}

// ListTools returns this worker's tool registry. It runs as a local
// activity of the ListTools workflow, so the answer comes from a worker
// polling the task queue rather than from a copy of its configuration.
func (a *Activities) ListTools(ctx context.Context) (ToolCatalog, error) {
	cat := ToolCatalog{Tools: a.Tools.Descriptors()}
	for _, d := range cat.Tools {
		if d.ReadOnly {
			cat.ReadOnly = append(cat.ReadOnly, d.Name)
		}
		if d.Declared != nil {
			if cat.Declared == nil {
				cat.Declared = map[string]*tools.Declared{}
			}
			cat.Declared[d.Name] = d.Declared
		}
	}
	raw, err := json.Marshal(cat)
	if err != nil {
		return ToolCatalog{}, fenixerr.ToTemporal(fenixerr.Runtime("encode the tool catalog: %v", err))
	}
	if len(raw) > maxCatalogBytes {
		return ToolCatalog{}, fenixerr.ToTemporal(fenixerr.PayloadTooLarge("the tool catalog of %d tools is %d bytes, over the %d-byte limit of one ListTools result; serve fewer tools from this worker", len(cat.Tools), len(raw), maxCatalogBytes))
	}
	return cat, nil
}
