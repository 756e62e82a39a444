package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/fenixrt/fenix/internal/readlimit"
)

// ConfigFileName is the project file Claude Code reads MCP servers from.
const ConfigFileName = ".mcp.json"

// maxConfigBytes bounds a .mcp.json file.
const maxConfigBytes = 1 << 20

// Server transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	// TransportSSE is the HTTP+SSE transport of the 2024-11-05 spec,
	// which later revisions replaced with Streamable HTTP; many hosted
	// servers still speak only it, and Claude Code's .mcp.json accepts
	// it as "type": "sse".
	TransportSSE = "sse"
)

// ServerConfig is one entry of a .mcp.json's mcpServers, with its ${VAR}
// references expanded.
type ServerConfig struct {
	// Name is the server's name as its tools are named
	// (mcp__<Name>__<tool>): the configured key with characters outside
	// [A-Za-z0-9_-] replaced by '_', as Claude Code does.
	Name string
	// Key is the name as configured.
	Key string
	// Project is whether the entry came from a project directory's
	// .mcp.json (Claude Code's project scope, which its settings approve
	// or reject; see ServerRules), not from a file the worker was given.
	Project bool
	// Type is TransportStdio, TransportHTTP or TransportSSE.
	Type    string
	Command string
	Args    []string
	// Env is the whole environment of a stdio server (see Manager).
	Env map[string]string
	// Cwd is the stdio server's working directory; relative paths are
	// resolved against Dir. Empty means the workspace (Options.WorkDir).
	Cwd     string
	URL     string
	Headers map[string]string
	// HeadersHelper is a shell command whose output, a JSON object of
	// strings, adds headers (over Headers) at each connection (Claude
	// Code's "headersHelper"; see server.helperHeaders).
	HeadersHelper string
	// OAuth is the entry's "oauth" object (http and sse servers): how the
	// worker's mcp-login signs in. Without it, sign-in registers a client
	// dynamically; either way the worker uses what a sign-in stored (see
	// CredentialStore).
	OAuth *OAuthConfig
	// Path is the file the entry came from, Dir its directory (the
	// project directory).
	Path string
	Dir  string
}

// fileFormat is .mcp.json as Claude Code writes it.
type fileFormat struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
}

type serverEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	OAuth   *oauthEntry       `json:"oauth"`

	HeadersHelper string `json:"headersHelper"`
}

// oauthEntry is an http or sse server's "oauth" object as Claude Code
// reads it.
type oauthEntry struct {
	ClientID              string          `json:"clientId"`
	CallbackPort          json.RawMessage `json:"callbackPort"`
	Scopes                string          `json:"scopes"`
	AuthServerMetadataURL string          `json:"authServerMetadataUrl"`
}

// LoadResult is what Load found: the servers to run, in name order, and
// warnings about entries it skipped or fixed up.
type LoadResult struct {
	Servers  []ServerConfig
	Warnings []string
}

// Load reads MCP server configurations. Each path is a .mcp.json file or
// a project directory (holding .mcp.json; a directory without one is
// skipped). A server defined again in a later path replaces the earlier
// definition, with a warning. getenv resolves ${VAR} references (nil:
// os.LookupEnv). A file that cannot be read or parsed is an error naming
// it; a single bad entry is skipped with a warning so the other servers
// still run.
func Load(paths []string, getenv func(string) (string, bool)) (LoadResult, error) {
	files, err := ReadConfigs(paths)
	if err != nil {
		return LoadResult{}, err
	}
	return LoadConfigs(files, getenv)
}

// ConfigFile is one MCP configuration file as read.
type ConfigFile struct {
	// Path is the file's absolute path.
	Path string `json:"path"`
	// Project marks a project's .mcp.json, which need not exist.
	Project bool `json:"project,omitempty"`
	// Missing is set for a project's .mcp.json that does not exist.
	Missing bool   `json:"missing,omitempty"`
	Data    []byte `json:"data,omitempty"`
}

// ReadConfigs reads the files paths name (see Load), for LoadConfigs.
func ReadConfigs(paths []string) ([]ConfigFile, error) {
	var out []ConfigFile
	for _, p := range paths {
		if p == "" {
			continue
		}
		file, optional, err := configFile(p)
		if err != nil {
			return nil, err
		}
		if abs, err := filepath.Abs(file); err == nil {
			file = abs
		}
		data, err := readlimit.File(file, maxConfigBytes)
		if errors.Is(err, fs.ErrNotExist) && optional {
			out = append(out, ConfigFile{Path: file, Project: true, Missing: true})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("MCP config %s: %w", file, err)
		}
		out = append(out, ConfigFile{Path: file, Project: optional, Data: data})
	}
	return out, nil
}

// LoadConfigs parses files, read by ReadConfigs (or kept from an earlier
// read), as Load does.
func LoadConfigs(files []ConfigFile, getenv func(string) (string, bool)) (LoadResult, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	var res LoadResult
	byName := map[string]ServerConfig{}
	for _, f := range files {
		if f.Missing {
			continue
		}
		servers, warnings, err := Parse(f.Data, f.Path, getenv)
		if err != nil {
			return LoadResult{}, err
		}
		res.Warnings = append(res.Warnings, warnings...)
		for _, s := range servers {
			s.Project = f.Project
			if prev, dup := byName[s.Name]; dup {
				res.Warnings = append(res.Warnings, fmt.Sprintf("MCP server %q from %s replaces the one from %s", s.Name, s.Path, prev.Path))
			}
			byName[s.Name] = s
		}
	}
	for _, s := range byName {
		res.Servers = append(res.Servers, s)
	}
	sort.Slice(res.Servers, func(i, j int) bool { return res.Servers[i].Name < res.Servers[j].Name })
	return res, nil
}

// configFile maps a path to the .mcp.json it names; optional is true for
// a project directory, which need not have one.
func configFile(p string) (file string, optional bool, err error) {
	info, err := os.Stat(p)
	if err != nil {
		return "", false, fmt.Errorf("MCP config %s: %w", p, err)
	}
	if info.IsDir() {
		return filepath.Join(p, ConfigFileName), true, nil
	}
	return p, false, nil
}

// Parse reads one .mcp.json document; path names it in messages.
func Parse(data []byte, path string, getenv func(string) (string, bool)) ([]ServerConfig, []string, error) {
	var doc fileFormat
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("MCP config %s is not valid JSON: %w", path, err)
	}
	if doc.MCPServers == nil {
		return nil, nil, fmt.Errorf("MCP config %s has no \"mcpServers\" object", path)
	}
	keys := make([]string, 0, len(doc.MCPServers))
	for k := range doc.MCPServers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []ServerConfig
	var warnings []string
	dir := filepath.Dir(path)
	for _, key := range keys {
		s, warns, err := parseEntry(key, doc.MCPServers[key], path, dir, getenv)
		warnings = append(warnings, warns...)
		if err != nil {
			warnings = append(warnings, err.Error()+"; the server is skipped")
			continue
		}
		out = append(out, s)
	}
	return out, warnings, nil
}

func parseEntry(key string, raw json.RawMessage, path, dir string, getenv func(string) (string, bool)) (ServerConfig, []string, error) {
	where := fmt.Sprintf("MCP server %q in %s", key, path)
	var e serverEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&e); err != nil {
		return ServerConfig{}, nil, fmt.Errorf("%s is not a valid server entry: %v", where, err)
	}
	exp := &expander{getenv: getenv}
	s := ServerConfig{
		Name:    NormalizeName(key),
		Key:     key,
		Command: exp.expand(e.Command),
		Cwd:     e.Cwd,
		URL:     exp.expand(e.URL),
		Path:    path,
		Dir:     dir,
	}
	for _, a := range e.Args {
		s.Args = append(s.Args, exp.expand(a))
	}
	s.Env = exp.expandMap(e.Env)
	s.Headers = exp.expandMap(e.Headers)
	s.HeadersHelper = exp.expand(e.HeadersHelper)
	var warnings []string
	if s.Name != key {
		warnings = append(warnings, fmt.Sprintf("%s: its tools are named after %q (characters outside [A-Za-z0-9_-] become '_')", where, s.Name))
	}
	if len(exp.missing) > 0 {
		// Claude Code keeps the reference as written and warns.
		warnings = append(warnings, fmt.Sprintf("%s: environment variables %s are not set; their ${...} references are kept as written", where, strings.Join(exp.missing, ", ")))
	}
	switch typ := e.Type; {
	case typ == "" && e.URL != "" && e.Command == "":
		return ServerConfig{}, warnings, fmt.Errorf("%s has a url but no \"type\": set \"type\": \"http\"", where)
	case typ == "" || typ == TransportStdio:
		s.Type = TransportStdio
		if s.Command == "" {
			return ServerConfig{}, warnings, fmt.Errorf("%s has no \"command\"", where)
		}
	case typ == TransportHTTP || typ == "streamable-http" || typ == TransportSSE:
		s.Type = TransportHTTP
		if typ == TransportSSE {
			s.Type = TransportSSE
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return ServerConfig{}, warnings, fmt.Errorf("%s has url %q: want an http:// or https:// URL", where, s.URL)
		}
		if e.OAuth != nil {
			oauth, err := parseOAuth(*e.OAuth, exp, where)
			if err != nil {
				return ServerConfig{}, warnings, err
			}
			s.OAuth = oauth
		}
	default:
		return ServerConfig{}, warnings, fmt.Errorf("%s has unknown type %q: want \"stdio\", \"http\" or \"sse\"", where, typ)
	}
	if s.Type == TransportStdio && e.OAuth != nil {
		return ServerConfig{}, warnings, fmt.Errorf("%s has \"oauth\" but runs over stdio: only http servers sign in", where)
	}
	if s.Type == TransportStdio && e.HeadersHelper != "" {
		return ServerConfig{}, warnings, fmt.Errorf("%s has \"headersHelper\" but runs over stdio: only http and sse servers send headers", where)
	}
	if len(s.Name) == 0 {
		return ServerConfig{}, warnings, fmt.Errorf("%s has an empty name", where)
	}
	// "__" separates server from tool in mcp__<server>__<tool>: a server
	// named a__b would have its tools routed to server a, and a rule
	// naming mcp__a__b would not read as a server rule.
	if strings.Contains(s.Name, "__") {
		return ServerConfig{}, warnings, fmt.Errorf("%s: the name contains \"__\", which separates server from tool in mcp__<server>__<tool>; rename the server", where)
	}
	// Nor may it end in "_": server a_'s tool b (mcp__a___b) would read as
	// server a's tool _b, and a rule for server a would cover it.
	if strings.HasSuffix(s.Name, "_") {
		return ServerConfig{}, warnings, fmt.Errorf("%s: the name ends in \"_\" (after characters outside [A-Za-z0-9_-] become '_'), which runs into the \"__\" that separates server from tool in mcp__<server>__<tool>; rename the server", where)
	}
	return s, warnings, nil
}

var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// NormalizeName makes a server or tool name safe inside mcp__<server>__<tool>.
func NormalizeName(name string) string { return nameUnsafe.ReplaceAllString(name, "_") }

// ToolName is the registry name of a server's tool.
func ToolName(server, tool string) string {
	return "mcp__" + NormalizeName(server) + "__" + NormalizeName(tool)
}

// varRef matches ${VAR} and ${VAR:-default}; a bare $VAR is left alone,
// as in Claude Code.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

type expander struct {
	getenv  func(string) (string, bool)
	missing []string
}

func (x *expander) expand(s string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if v, ok := x.getenv(m[1]); ok {
			return v
		}
		if strings.Contains(ref, ":-") {
			return m[2]
		}
		x.missing = append(x.missing, m[1])
		return ref
	})
}

func (x *expander) expandMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = x.expand(v)
	}
	return out
}
