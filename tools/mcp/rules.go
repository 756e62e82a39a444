package mcp

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ServerRules decide which configured servers run, as Claude Code's
// settings do: a project's .mcp.json servers need approval
// (enableAllProjectMcpServers, enabledMcpjsonServers) and can be rejected
// (disabledMcpjsonServers), and every server is held to the allow and
// deny lists (allowedMcpServers, deniedMcpServers). The zero value lets
// every server run.
type ServerRules struct {
	// ApprovalGiven is whether the settings say which project servers
	// are approved (enableAllProjectMcpServers or enabledMcpjsonServers
	// is set). Claude Code asks its user about a project server neither
	// approves nor rejects; a worker has nobody to ask, so without either
	// key the worker's configuration — the operator pointed it at the
	// project — approves them, and with one, only what it approves runs.
	ApprovalGiven bool
	// ApproveAllProject is enableAllProjectMcpServers: true.
	ApproveAllProject bool
	// ApprovedProject and RejectedProject are enabledMcpjsonServers and
	// disabledMcpjsonServers: project servers by configured name.
	ApprovedProject, RejectedProject []string
	// AllowlistSet is whether allowedMcpServers is set: then only the
	// servers Allowed matches run (none when it is empty).
	AllowlistSet bool
	Allowed      []ServerMatch
	// Denied are deniedMcpServers, which win over everything.
	Denied []ServerMatch
}

// ServerMatch is one allowedMcpServers or deniedMcpServers entry; it has
// exactly one of its fields.
type ServerMatch struct {
	// Name is the server's configured name (serverName).
	Name string
	// Command is a stdio server's command and arguments, matched
	// exactly (serverCommand).
	Command []string
	// URL is an http or sse server's url, '*' matching any run of
	// characters (serverUrl).
	URL string
}

func (m ServerMatch) String() string {
	switch {
	case m.Command != nil:
		return fmt.Sprintf("serverCommand %q", m.Command)
	case m.URL != "":
		return fmt.Sprintf("serverUrl %q", m.URL)
	default:
		return fmt.Sprintf("serverName %q", m.Name)
	}
}

// Refusal is a server the rules keep out, and the setting that does.
type Refusal struct {
	Server ServerConfig
	Reason string
}

func (r Refusal) String() string {
	return fmt.Sprintf("MCP server %q from %s is not started: %s", r.Server.Key, r.Server.Path, r.Reason)
}

// Apply returns the servers the rules let run, in order, and the others
// with why.
func (r ServerRules) Apply(servers []ServerConfig) (run []ServerConfig, refused []Refusal) {
	for _, s := range servers {
		if why := r.refusal(s); why != "" {
			refused = append(refused, Refusal{Server: s, Reason: why})
			continue
		}
		run = append(run, s)
	}
	return run, refused
}

func (r ServerRules) refusal(s ServerConfig) string {
	for _, m := range r.Denied {
		if m.matchesName(s) || m.matchesCommand(s) || m.matchesURL(s) {
			return "deniedMcpServers has " + m.String()
		}
	}
	if r.AllowlistSet && !r.allowed(s) {
		return "allowedMcpServers has no entry for it"
	}
	if !s.Project {
		return ""
	}
	if slices.Contains(r.RejectedProject, s.Key) {
		return "disabledMcpjsonServers names it"
	}
	if r.ApprovalGiven && !r.ApproveAllProject && !slices.Contains(r.ApprovedProject, s.Key) {
		return "the settings approve project servers, and neither enableAllProjectMcpServers nor enabledMcpjsonServers approves it"
	}
	return ""
}

// allowed applies the allowlist as Claude Code does: a stdio server must
// match a serverCommand entry when the list has any, an http or sse
// server a serverUrl entry when it has any; otherwise a serverName entry.
func (r ServerRules) allowed(s ServerConfig) bool {
	stdio := s.Type == TransportStdio
	byIdentity := slices.ContainsFunc(r.Allowed, func(m ServerMatch) bool {
		if stdio {
			return m.Command != nil
		}
		return m.URL != ""
	})
	return slices.ContainsFunc(r.Allowed, func(m ServerMatch) bool {
		switch {
		case byIdentity && stdio:
			return m.matchesCommand(s)
		case byIdentity:
			return m.matchesURL(s)
		default:
			return m.matchesName(s)
		}
	})
}

func (m ServerMatch) matchesName(s ServerConfig) bool {
	return m.Name != "" && (m.Name == s.Key || m.Name == s.Name)
}

func (m ServerMatch) matchesCommand(s ServerConfig) bool {
	return m.Command != nil && s.Type == TransportStdio && slices.Equal(m.Command, append([]string{s.Command}, s.Args...))
}

func (m ServerMatch) matchesURL(s ServerConfig) bool {
	if m.URL == "" || s.Type == TransportStdio {
		return false
	}
	parts := strings.Split(m.URL, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(s.URL)
}
