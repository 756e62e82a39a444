package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/mcp"
)

// mcpPaths are where MCP servers are configured: the project directories
// among the hook sources (a project's .mcp.json sits beside its .claude/;
// a settings file .claude/settings*.json names its project too), then the
// MCPConfig files.
func mcpPaths(cfg Config) []string {
	var paths []string
	for _, src := range hookPaths(cfg) {
		info, err := os.Stat(src)
		switch {
		case err != nil:
			continue // the hook loader reports it
		case info.IsDir():
			if _, err := os.Stat(filepath.Join(src, ".claude")); err == nil {
				paths = append(paths, src)
			}
		case filepath.Base(filepath.Dir(src)) == ".claude":
			paths = append(paths, filepath.Dir(filepath.Dir(src)))
		}
	}
	if cfg.MCPConfig != "" {
		paths = append(paths, filepath.SplitList(cfg.MCPConfig)...)
	}
	return paths
}

// mcpConfigFiles are the files mcpPaths makes the worker read, absolute:
// a project directory's .mcp.json whether or not it exists yet (creating
// one adds servers as surely as editing it), and each MCPConfig file.
// Tools may not write them.
func mcpConfigFiles(cfg Config) []string {
	var files []string
	for _, p := range mcpPaths(cfg) {
		if p == "" {
			continue
		}
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			p = filepath.Join(p, mcp.ConfigFileName)
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		files = append(files, p)
	}
	return files
}

// mcpServerScriptExtensions mark an argument without a slash as a script
// a stdio server runs.
var mcpServerScriptExtensions = []string{".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php"}

// mcpServerInterpreters run the first file their arguments name as a
// program, whatever its name (node tools/viewer).
var mcpServerInterpreters = regexp.MustCompile(`^(node|nodejs|deno|bun|tsx|ts-node|python[0-9.]*|pypy[0-9.]*|sh|bash|dash|zsh|ksh|ruby|perl|php)$`)

// mcpServerFiles are the files the stdio servers of files launch, as the
// worker starts them: a command named by path (relative to its .mcp.json)
// and each argument naming code in the server's working directory: a
// script by its extension (also one not written yet), an executable file,
// or the first file an interpreter is given. A data file the server is
// given (a database, a JSON document) is the agent's to write, and its
// changes are not reported as changes to what governs it. The worker runs them
// again when it restarts a server (a start, the retry of one that
// failed), outside any command sandbox: tools may not write them, as they
// may not write the scripts hooks run. Directories given as arguments
// (a filesystem server's root) are the server's data, not its code.
func mcpServerFiles(cfg Config, files []mcp.ConfigFile) []string {
	loaded, err := mcp.LoadConfigs(files, nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range loaded.Servers {
		if s.Type != mcp.TransportStdio {
			continue
		}
		dir := cfg.DefaultWorkspaceRoot
		if dir == "" {
			dir = s.Dir
		}
		if s.Cwd != "" {
			dir = s.Cwd
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(s.Dir, dir)
			}
		}
		if strings.Contains(s.Command, "/") {
			p := s.Command
			if !filepath.IsAbs(p) {
				p = filepath.Join(s.Dir, p)
			}
			out = append(out, filepath.Clean(p))
		}
		interpreted := mcpServerInterpreters.MatchString(filepath.Base(s.Command))
		for _, a := range s.Args {
			if a == "" || strings.HasPrefix(a, "-") || strings.Contains(a, "://") {
				continue
			}
			p := a
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			info, err := os.Stat(p)
			script := slices.ContainsFunc(mcpServerScriptExtensions, func(ext string) bool { return strings.HasSuffix(a, ext) })
			file := err == nil && info.Mode().IsRegular()
			if script && (err != nil || file) || file && (interpreted || info.Mode().Perm()&0o111 != 0) {
				out = append(out, filepath.Clean(p))
			}
			if file {
				interpreted = false // its later files are the script's data
			}
		}
	}
	return out
}

// startMCP loads the MCP server configurations and connects the servers;
// nil when the worker reads no MCP configuration file (no project among
// its hook sources, no -mcp-config). A manager with no server yet is kept
// for a SIGHUP to start those a file gains. A server that fails is
// retried in the background; only an unreadable configuration file fails
// the worker.
//
// The stdio servers start in the hooks' confinement, held by mounts on a
// root worker (see tools.Host.MCPServerConfiner): a server acts on the agent's arguments, so
// the filesystem server rooted at the home directory must not rewrite the
// pinned guards, the audit log or code the hooks load, and a server that
// makes requests must not reach the Temporal frontend.
//
// The hook settings files' approvals and allow and deny lists of servers
// (see mcp.ServerRules) keep a server out, and the log says which setting
// kept it; their env's MCP_TIMEOUT and MCP_TOOL_TIMEOUT bound a server's
// start and a tool's call (mcpTimeouts).
func startMCP(cfg Config, host *tools.Host, store contextstore.Store, files []mcp.ConfigFile, policy loadedHooks, readOnly func(string) []string) (*mcp.Manager, error) {
	connect, call := mcpTimeouts(policy.env, os.Getenv, cfg.Logger)
	opts := mcp.Options{HostID: host.ID, Contexts: store, Redactor: cfg.Redactor, Rules: serverRules(policy.mcpServers), ConnectTimeout: connect, CallTimeout: call,
		// A headersHelper runs with a hook's environment, in the hooks'
		// confinement.
		HelperEnv: claudecode.HookProcessEnv(host.HookEnv())}
	if c := host.MCPServerConfiner(); c != nil {
		opts.Launcher, opts.ReadOnly = c, readOnly
	}
	return startMCPServers(cfg, files, opts)
}

// mcpTimeouts are Claude Code's MCP_TIMEOUT (a server's start: a first
// `npx -y` downloading its package can take minutes) and MCP_TOOL_TIMEOUT
// (a tool call), in milliseconds, from the settings files' env or else
// the worker's environment, as Claude Code reads them; zero (the
// manager's defaults) where unset. A value that is no positive number is
// ignored with a warning.
func mcpTimeouts(settingsEnv map[string]string, getenv func(string) string, logger *slog.Logger) (connect, call time.Duration) {
	read := func(name string) time.Duration {
		v, ok := settingsEnv[name]
		if !ok {
			v = getenv(name)
		}
		if v == "" {
			return 0
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms <= 0 || ms > int64(24*time.Hour/time.Millisecond) {
			logger.Warn(name+" is ignored: it must be a number of milliseconds, at most a day", "value", v)
			return 0
		}
		return time.Duration(ms) * time.Millisecond
	}
	return read("MCP_TIMEOUT"), read("MCP_TOOL_TIMEOUT")
}

// serverRules are settings as the MCP manager applies them.
func serverRules(settings *claudecode.MCPServerSettings) mcp.ServerRules {
	if settings == nil {
		return mcp.ServerRules{}
	}
	matches := func(entries []claudecode.MCPServerEntry) []mcp.ServerMatch {
		out := make([]mcp.ServerMatch, len(entries))
		for i, e := range entries {
			out[i] = mcp.ServerMatch{Name: e.ServerName, Command: e.ServerCommand, URL: e.ServerURL}
		}
		return out
	}
	r := mcp.ServerRules{
		ApprovalGiven:     settings.EnableAllProject != nil || settings.EnabledProject != nil,
		ApproveAllProject: settings.EnableAllProject != nil && *settings.EnableAllProject,
		ApprovedProject:   settings.EnabledProject,
		RejectedProject:   settings.DisabledProject,
		Denied:            matches(settings.Denied),
	}
	if settings.Allowed != nil {
		r.AllowlistSet, r.Allowed = true, matches(*settings.Allowed)
	}
	return r
}

// PolicyTools is the registry a worker with cfg reviews calls against:
// cfg.Tools (default the built-ins) and the tools of its MCP servers,
// started here under hostID so a replay validates MCP calls against the
// servers' own schemas. close stops the servers.
func PolicyTools(cfg Config, hostID string) (registry *tools.Registry, close func(), err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	registry = cfg.Tools
	if registry == nil {
		registry = tools.Builtin()
	}
	// The hook settings decide which servers start, as on a worker: a
	// candidate that denies a server has its calls refused.
	var settings *claudecode.MCPServerSettings
	if paths := hookPaths(cfg); len(paths) > 0 {
		sources, err := claudecode.LoadSources(paths, claudecode.LoadOptions{})
		if err != nil {
			return registry, func() {}, err
		}
		settings = claudecode.MergedMCPServerSettings(sources)
	}
	files, err := mcp.ReadConfigs(mcpPaths(cfg))
	if err != nil {
		return registry, func() {}, err
	}
	m, err := startMCPServers(cfg, files, mcp.Options{HostID: hostID, Rules: serverRules(settings), HelperEnv: claudecode.HookProcessEnv(nil)})
	if err != nil || m == nil {
		return registry, func() {}, err
	}
	return registry.WithSources(m), m.Close, nil
}

// startMCPServers starts the servers files configure with opts, to which
// it adds the worker's workspace, outbound policy, logger and sign-ins.
func startMCPServers(cfg Config, files []mcp.ConfigFile, opts mcp.Options) (*mcp.Manager, error) {
	loaded, err := mcp.LoadConfigs(files, nil)
	if err != nil {
		return nil, err
	}
	for _, w := range loaded.Warnings {
		cfg.Logger.Warn("MCP config: " + w)
	}
	if len(files) == 0 {
		// No file is read (no project among the hook sources, no
		// -mcp-config): no server can be configured, now or on SIGHUP.
		return nil, nil
	}
	opts.WorkDir, opts.Net, opts.Logger = cfg.DefaultWorkspaceRoot, cfg.HostConfig.Fetch, cfg.Logger
	// The sign-ins of `worker mcp-login` (see LoginMCP).
	opts.Credentials = mcpCredentials(cfg)
	m, err := mcp.NewManager(loaded.Servers, opts)
	if err != nil {
		return nil, fmt.Errorf("MCP servers: %w", err)
	}
	for _, why := range m.Refused() {
		cfg.Logger.Warn(why)
	}
	m.Start(cfg.MCPStartWait)
	for _, st := range m.Status() {
		if st.Connected {
			cfg.Logger.Info("MCP server ready", "mcp_server", st.Name, "transport", st.Type, "tools", st.Tools)
		} else {
			logNotReady(cfg.Logger, st)
		}
	}
	return m, nil
}

// logNotReady says that a server is not connected yet: still starting
// (a first npx -y downloads its package), or failed with its error.
func logNotReady(logger *slog.Logger, st mcp.ServerStatus) {
	if st.LastError == "" {
		logger.Warn("MCP server still starting; its tools are unavailable until it connects", "mcp_server", st.Name, "attempts", st.Attempts)
		return
	}
	logger.Error("MCP server not ready; its tools are unavailable until it starts", "mcp_server", st.Name, "error", st.LastError)
}

// mcpHookCaller runs mcp_tool hook handlers on the worker's MCP servers.
type mcpHookCaller struct {
	mu sync.Mutex
	m  *mcp.Manager
}

func (c *mcpHookCaller) set(m *mcp.Manager) {
	c.mu.Lock()
	c.m = m
	c.mu.Unlock()
}

func (c *mcpHookCaller) CallMCPTool(ctx context.Context, server, tool string, args map[string]any) (string, error) {
	c.mu.Lock()
	m := c.m
	c.mu.Unlock()
	if m == nil {
		return "", fmt.Errorf("MCP server %q is not configured on this worker (.mcp.json or -mcp-config)", server)
	}
	res, err := m.Call(ctx, server, tool, args)
	if err != nil {
		return "", err
	}
	return res.Text(), nil
}
