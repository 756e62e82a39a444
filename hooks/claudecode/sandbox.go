package claudecode

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/netguard"
)

// Sandbox is a settings file's "sandbox" object as Fenix applies it to
// exec_command and process_exec: Claude Code sandboxes its Bash tool with
// bubblewrap; Fenix runs those commands in a Landlock domain (package
// confine) with the same filesystem boundary.
type Sandbox struct {
	// Enabled is sandbox.enabled: commands write only in their workspace,
	// their temporary directory and AllowWrite.
	Enabled bool
	// FailIfUnavailable refuses commands where the sandbox cannot be
	// applied, instead of running them unsandboxed with a warning.
	FailIfUnavailable bool
	// AllowWrite, DenyWrite and DenyRead are sandbox.filesystem's lists,
	// resolved: "//x" is /x, "~/x" is in the home directory, "/x" is in
	// the project (the directory holding .claude/), and other paths are
	// relative to the command's workspace.
	AllowWrite, DenyWrite, DenyRead []string
	// AllowedDomains and DeniedDomains are sandbox.network's lists: with
	// the sandbox on, a command reaches other hosts only through proxies
	// that let through the allowed domains that are not denied.
	AllowedDomains, DeniedDomains []netguard.DomainPattern
	// AllowAllUnixSockets is sandbox.network.allowAllUnixSockets: commands
	// may create Unix sockets, through which a host daemon's socket
	// reaches past the proxies.
	AllowAllUnixSockets bool
	// AutoAllowBash is autoAllowBashIfSandboxed (Claude Code's default:
	// true): under dontAsk a sandboxed command needs no allow rule; deny
	// and ask rules still apply.
	AutoAllowBash bool
}

type sandboxSettings struct {
	Enabled           *bool `json:"enabled"`
	FailIfUnavailable bool  `json:"failIfUnavailable"`
	AutoAllowBash     *bool `json:"autoAllowBashIfSandboxed"`
	Filesystem        struct {
		AllowWrite []string `json:"allowWrite"`
		DenyWrite  []string `json:"denyWrite"`
		DenyRead   []string `json:"denyRead"`
	} `json:"filesystem"`
	Network map[string]json.RawMessage `json:"network"`
}

// sandboxNetworkKeysNotApplied are the sandbox.network keys Fenix reads
// but does not act on, with why.
var sandboxNetworkKeysNotApplied = map[string]string{
	"allowUnixSockets":        "as in Claude Code on Linux, where sockets cannot be filtered by path, Unix sockets are refused unless allowAllUnixSockets is true",
	"allowLocalBinding":       "a command binds its own loopback, which nothing outside it reaches",
	"httpProxyPort":           "commands use Fenix's own proxies",
	"socksProxyPort":          "commands use Fenix's own proxies",
	"allowManagedDomainsOnly": "every settings file's domains count",
	"allowMachLookup":         "macOS only",
}

// sandboxKeysNotApplied are the sandbox keys Fenix reads but does not act
// on, with why.
var sandboxKeysNotApplied = map[string]string{
	"excludedCommands":         "every command is sandboxed",
	"allowUnsandboxedCommands": "no command leaves the sandbox",
	"credentials":              "commands get only PATH, HOME, LANG, TERM and FENIX_EXEC_ENV_ALLOW from the worker anyway",
}

// parseSandbox reads the "sandbox" object.
func (src *Source) parseSandbox(raw json.RawMessage) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fmt.Errorf("hook settings %s: sandbox must be an object: %w", src.Path, err)
	}
	var s sandboxSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("hook settings %s: sandbox: %w", src.Path, err)
	}
	for key := range keys {
		if why, ok := sandboxKeysNotApplied[key]; ok {
			src.warn("%s: sandbox.%s is not acted on: %s", src.Path, key, why)
		}
	}
	if s.Enabled == nil || !*s.Enabled {
		return nil
	}
	sb := &Sandbox{Enabled: true, FailIfUnavailable: s.FailIfUnavailable, AutoAllowBash: s.AutoAllowBash == nil || *s.AutoAllowBash}
	// A relative path is each command's workspace's: the deny lists' are
	// held inside it by a mount namespace of the command's own where the
	// worker can make one (confine.Boundary).
	resolve := func(list string, paths []string) []string {
		var out []string
		for _, p := range paths {
			if strings.ContainsAny(p, "*?[") {
				src.warn("%s: sandbox.filesystem.%s %q is a pattern; Fenix applies paths, so it is skipped", src.Path, list, p)
				continue
			}
			path, abs := src.sandboxPath(p)
			if !abs && (path == "." || path == ".." || strings.HasPrefix(path, "../")) {
				src.warn("%s: sandbox.filesystem.%s %q is the workspace or leads out of it; it is skipped", src.Path, list, p)
				continue
			}
			out = append(out, path)
		}
		return out
	}
	sb.AllowWrite = resolve("allowWrite", s.Filesystem.AllowWrite)
	sb.DenyWrite = resolve("denyWrite", s.Filesystem.DenyWrite)
	sb.DenyRead = resolve("denyRead", s.Filesystem.DenyRead)
	if err := src.parseSandboxNetwork(sb, s.Network); err != nil {
		return err
	}
	src.Sandbox = sb
	return nil
}

// parseSandboxNetwork reads sandbox.network's domain lists into sb; an
// entry Claude Code would refuse is skipped with a warning.
func (src *Source) parseSandboxNetwork(sb *Sandbox, network map[string]json.RawMessage) error {
	for _, key := range slices.Sorted(maps.Keys(network)) {
		raw := network[key]
		var into *[]netguard.DomainPattern
		switch key {
		case "allowedDomains":
			into = &sb.AllowedDomains
		case "deniedDomains":
			into = &sb.DeniedDomains
		case "allowAllUnixSockets":
			if err := json.Unmarshal(raw, &sb.AllowAllUnixSockets); err != nil {
				return fmt.Errorf("hook settings %s: sandbox.network.allowAllUnixSockets must be true or false: %w", src.Path, err)
			}
			continue
		default:
			why, ok := sandboxNetworkKeysNotApplied[key]
			if !ok {
				why = "Fenix does not know it"
			}
			src.warn("%s: sandbox.network.%s is not acted on: %s", src.Path, key, why)
			continue
		}
		var entries []string
		if err := json.Unmarshal(raw, &entries); err != nil {
			return fmt.Errorf("hook settings %s: sandbox.network.%s must be a list of domains: %w", src.Path, key, err)
		}
		for _, entry := range entries {
			p, err := netguard.ParseDomainPattern(entry, key == "deniedDomains")
			if err != nil {
				src.warn("%s: sandbox.network.%s: %v; it is skipped", src.Path, key, err)
				continue
			}
			*into = append(*into, p)
		}
	}
	return nil
}

// sandboxPath resolves a sandbox path; ok is false for one relative to
// the workspace, which comes back cleaned but relative.
func (src *Source) sandboxPath(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "//"):
		return filepath.Clean(p[1:]), true
	case strings.HasPrefix(p, "~/") || p == "~":
		home, _ := os.UserHomeDir()
		return filepath.Join(home, strings.TrimPrefix(p, "~")), true
	case strings.HasPrefix(p, "/"):
		base := src.Paths.ProjectDir
		if base == "" {
			base = src.Paths.Dir
		}
		return filepath.Join(base, p), true
	default:
		return filepath.Clean(p), false
	}
}

// sandboxMandatoryDenyWrite are what Claude Code's sandbox keeps every
// sandboxed command from writing in its working directory whatever the
// settings say (sandbox-runtime's dangerous files and directories), beyond
// what Fenix holds read-only to every command anyway (.claude, .mcp.json,
// git's hooks and config): the shell start-up files and git config a shell
// or git started there reads, the repository's submodule list, ripgrep's
// config, and the editors' project settings, whose tasks run when a person
// opens the folder.
var sandboxMandatoryDenyWrite = []string{".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".ripgreprc", ".vscode", ".idea"}

// CommandPolicy merges the loaded files' sandboxes into what confines
// commands: the sandbox is on when any file turns it on (a project cannot
// loosen a user's), and the lists add up, as Claude Code merges them
// across scopes. With the sandbox on, commands also lose the network but
// for proxies that let through the allowed domains (none when no file
// lists any). fail is whether any file with the sandbox on asks for a
// hard failure where it cannot be applied; from names those files.
func CommandPolicy(sources []*Source) (p confine.Policy, fail bool, from []string) {
	var domains netguard.DomainList
	unixSockets := false
	for _, src := range sources {
		sb := src.Sandbox
		if sb == nil || !sb.Enabled {
			continue
		}
		from = append(from, src.Path)
		if p.Boundary == nil {
			p.Boundary = &confine.Boundary{}
		}
		p.Boundary.Writable = append(p.Boundary.Writable, sb.AllowWrite...)
		p.Boundary.DenyWrite = append(p.Boundary.DenyWrite, sb.DenyWrite...)
		p.Boundary.DenyRead = append(p.Boundary.DenyRead, sb.DenyRead...)
		fail = fail || sb.FailIfUnavailable
		domains.Allowed = append(domains.Allowed, sb.AllowedDomains...)
		domains.Denied = append(domains.Denied, sb.DeniedDomains...)
		unixSockets = unixSockets || sb.AllowAllUnixSockets
	}
	if len(from) > 0 {
		p.Boundary.DenyWrite = append(p.Boundary.DenyWrite, sandboxMandatoryDenyWrite...)
		allowed, denied := webFetchDomains(sources)
		domains.Allowed = append(domains.Allowed, allowed...)
		domains.Denied = append(domains.Denied, denied...)
		// With the sandbox on, Claude Code sends every command's traffic
		// through its proxy and asks its user about each domain neither
		// allowed nor denied; a run asks whoever answers its permissions
		// (decide_permission), and refuses under dontAsk as Claude Code
		// does.
		domains.Setting = "sandbox.network of " + strings.Join(from, ", ")
		p.Network = &confine.Network{
			Dial:        domains.DialContext(&net.Dialer{Timeout: netguard.ProxyDialTimeout, KeepAlive: 30 * time.Second}),
			Describe:    domains.String(),
			UnixSockets: unixSockets,
			Ask:         settingsMode(sources) != "dontAsk",
		}
	}
	return p, fail, from
}

// webFetchDomains are the domains of the files' WebFetch(domain:…) allow
// and deny rules, which Claude Code's sandbox also lets through (or
// refuses): granting WebFetch a domain grants sandboxed commands it too.
// A rule's domain that is no valid pattern (a bare "*") is left out; the
// rule itself still governs web_fetch.
func webFetchDomains(sources []*Source) (allowed, denied []netguard.DomainPattern) {
	for _, src := range sources {
		if src.Permissions == nil {
			continue
		}
		for _, r := range src.Permissions.rules {
			domain, ok := strings.CutPrefix(r.rule.content, "domain:")
			if r.rule.tool != "WebFetch" || !ok || r.behavior == behaviorAsk {
				continue
			}
			p, err := netguard.ParseDomainPattern(domain, r.behavior == behaviorDeny)
			if err != nil {
				continue
			}
			if r.behavior == behaviorDeny {
				denied = append(denied, p)
			} else {
				allowed = append(allowed, p)
			}
		}
	}
	return allowed, denied
}
