package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MCPServerSettings is what a settings file says about which MCP servers
// run: the approval of a project's .mcp.json servers and the allow and
// deny lists. The worker applies them when it starts its servers.
type MCPServerSettings struct {
	// EnableAllProject is enableAllProjectMcpServers, nil when unset.
	EnableAllProject *bool
	// EnabledProject and DisabledProject are enabledMcpjsonServers and
	// disabledMcpjsonServers; EnabledProject is nil when unset.
	EnabledProject, DisabledProject []string
	// Allowed is allowedMcpServers, nil when unset (an empty list allows
	// none); Denied is deniedMcpServers.
	Allowed *[]MCPServerEntry
	Denied  []MCPServerEntry
}

// MCPServerEntry is one allowedMcpServers or deniedMcpServers entry; it
// names exactly one of a server's name, its command with arguments (a
// stdio server) or its url pattern ('*' any run of characters).
type MCPServerEntry struct {
	ServerName    string   `json:"serverName,omitempty"`
	ServerCommand []string `json:"serverCommand,omitempty"`
	ServerURL     string   `json:"serverUrl,omitempty"`
}

// parseMCPServerSettings reads the file's MCP server keys into
// src.MCPServers (left nil when it has none); a key of the wrong shape is
// an error naming it, since a deny list misread would run what it denies.
func (src *Source) parseMCPServerSettings(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("hook settings %s: not a JSON object: %w", src.Path, err)
	}
	var s MCPServerSettings
	found := false
	decode := func(key string, into any) error {
		v, ok := raw[key]
		if !ok || string(v) == "null" {
			return nil
		}
		found = true
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			return fmt.Errorf("hook settings %s: %s: %w", src.Path, key, err)
		}
		return nil
	}
	for _, step := range []struct {
		key  string
		into any
	}{
		{"enableAllProjectMcpServers", &s.EnableAllProject},
		{"enabledMcpjsonServers", &s.EnabledProject}, // [] decodes non-nil: set, approving none
		{"disabledMcpjsonServers", &s.DisabledProject},
		{"allowedMcpServers", &s.Allowed}, // [] decodes to a pointer to an empty list: a lockdown
		{"deniedMcpServers", &s.Denied},
	} {
		if err := decode(step.key, step.into); err != nil {
			return err
		}
	}
	var allowed []MCPServerEntry
	if s.Allowed != nil {
		allowed = *s.Allowed
	}
	for _, list := range []struct {
		key     string
		entries []MCPServerEntry
	}{{"allowedMcpServers", allowed}, {"deniedMcpServers", s.Denied}} {
		for i, e := range list.entries {
			set := 0
			for _, given := range []bool{e.ServerName != "", len(e.ServerCommand) > 0, e.ServerURL != ""} {
				if given {
					set++
				}
			}
			if set != 1 {
				return fmt.Errorf("hook settings %s: %s[%d]: an entry names exactly one of serverName, serverCommand and serverUrl", src.Path, list.key, i)
			}
		}
	}
	if found {
		src.MCPServers = &s
	}
	return nil
}

// MergedMCPServerSettings merges the files' MCP server settings as Claude
// Code merges scopes: the lists add up, and enableAllProjectMcpServers is
// true when any file sets it so. Nil when no file has any.
func MergedMCPServerSettings(sources []*Source) *MCPServerSettings {
	var merged *MCPServerSettings
	for _, src := range sources {
		s := src.MCPServers
		if s == nil {
			continue
		}
		if merged == nil {
			merged = &MCPServerSettings{}
		}
		if s.EnableAllProject != nil && (merged.EnableAllProject == nil || *s.EnableAllProject) {
			v := *s.EnableAllProject
			merged.EnableAllProject = &v
		}
		if s.EnabledProject != nil {
			merged.EnabledProject = append(append([]string{}, merged.EnabledProject...), s.EnabledProject...)
		}
		merged.DisabledProject = append(merged.DisabledProject, s.DisabledProject...)
		if s.Allowed != nil {
			all := []MCPServerEntry{}
			if merged.Allowed != nil {
				all = append(all, *merged.Allowed...)
			}
			all = append(all, *s.Allowed...)
			merged.Allowed = &all
		}
		merged.Denied = append(merged.Denied, s.Denied...)
	}
	return merged
}
