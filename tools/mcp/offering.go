package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// A server feature beyond tools (resources, their subscriptions, prompts,
// completions) is
// served by tools of its own while a connected server offers it; what
// they share is here.

// feature is one such feature: what a server's capabilities say of it.
type feature struct {
	name   string // "resources", "subscriptions", "prompts", "completions"
	offers func(*sdk.ServerCapabilities) bool
}

var (
	resourcesFeature   = feature{"resources", func(c *sdk.ServerCapabilities) bool { return c.Resources != nil }}
	promptsFeature     = feature{"prompts", func(c *sdk.ServerCapabilities) bool { return c.Prompts != nil }}
	completionsFeature = feature{"completions", func(c *sdk.ServerCapabilities) bool { return c.Completions != nil }}
	// subscriptionsFeature is the resources feature's subscriptions.
	subscriptionsFeature = feature{"subscriptions", func(c *sdk.ServerCapabilities) bool { return c.Resources != nil && c.Resources.Subscribe }}
)

// offeredTools are the tools serving a feature, while a connected server
// offers it.
type offeredTools struct {
	feature feature
	tools   []tools.Definition
}

// sessionFor is the server's session when it is connected and offers f.
func (s *server) sessionFor(f feature) (*sdk.ClientSession, error) {
	s.mu.Lock()
	session, lastErr := s.session, s.lastError
	s.mu.Unlock()
	if session == nil {
		return nil, fenixerr.New(fenixerr.TypeToolUnavailable, "MCP server %q is not connected: %s; it is retried with backoff", s.cfg.Name, lastErr).WithCode("mcp_server_unavailable")
	}
	if init := session.InitializeResult(); init == nil || init.Capabilities == nil || !f.offers(init.Capabilities) {
		return nil, fenixerr.Validation("MCP server %q offers no %s", s.cfg.Name, f.name).WithCode("mcp_no_" + f.name)
	}
	return session, nil
}

// serversFor are the servers offering f now, in order.
func (m *Manager) serversFor(f feature) []*server {
	set := m.current()
	var out []*server
	for _, n := range set.order {
		if _, err := set.servers[n].sessionFor(f); err == nil {
			out = append(out, set.servers[n])
		}
	}
	return out
}

// listFrom lists f from every server offering it, or from the one named
// (which must), by list, which appends a server's share and says whether
// it stopped at a bound. It returns, by server, why one could not be
// listed (the others still are), and whether the listing was cut.
func (m *Manager) listFrom(ctx context.Context, tool, named string, f feature, list func(*server) (bool, error)) (failed map[string]string, truncated bool, err error) {
	servers := m.serversFor(f)
	if named != "" {
		s, err := m.namedServer(tool, named)
		if err != nil {
			return nil, false, err
		}
		if _, err := s.sessionFor(f); err != nil {
			return nil, false, fenixerr.As(err).WithTool(tool)
		}
		servers = []*server{s}
	}
	for _, s := range servers {
		cut, err := list(s)
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if err != nil {
			if failed == nil {
				failed = map[string]string{}
			}
			failed[s.cfg.Name] = err.Error()
		}
		if cut {
			return failed, true, nil
		}
	}
	return failed, false, nil
}

// pages reads a listing page by page: page reads the one at cursor and
// returns the next cursor ("" at the end) and whether the budget ran out.
// It stops at maxResourcePages, and says whether it stopped short.
func pages(page func(cursor string) (next string, full bool, err error)) (truncated bool, err error) {
	cursor := ""
	for range maxResourcePages {
		next, full, err := page(cursor)
		if err != nil || full {
			return full, err
		}
		if next == "" {
			return false, nil
		}
		cursor = next
	}
	return true, nil
}

// spend takes size from budget, or says it does not fit.
func spend(budget *int, size int) bool {
	if size > *budget {
		return false
	}
	*budget -= size
	return true
}

// toolSpec is what every feature tool shares: read-only, pinned to this
// host (whose servers it reads), heartbeating, bounded as a call is.
func (m *Manager) toolSpec(name, description string) tools.Spec {
	return tools.Spec{Name: name, Description: description, RegistryBacked: true, ReadOnly: true,
		Timeout: m.opts.CallTimeout, Heartbeat: heartbeat, Owner: func(map[string]any) string { return m.resourceID("") }}
}

// listingNarrative shows a listing to the model as JSON, as Claude Code's
// resource tool does, then where it stopped and which servers could not
// be listed; none is what an empty one says.
func listingNarrative(listed any, total int, truncated bool, failed map[string]string, none, noun string) string {
	raw, _ := json.Marshal(listed)
	content := string(raw)
	if total == 0 {
		content = none
	}
	if truncated {
		content += fmt.Sprintf("\n[the listing stops at %d %s; name a server to list its own]", total, noun)
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		content += fmt.Sprintf("\n[MCP server %q could not be listed: %s]", name, failed[name])
	}
	return content
}
