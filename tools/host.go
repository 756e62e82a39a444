package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/tools/browser"
	"github.com/fenixrt/fenix/tools/procs"
)

// Host holds what registry-backed tools share on one worker host: its
// identity and pinned task queue, the command-run registry, the background
// service manager with its reverse proxy, and web tool configuration.
// Resources created here carry the host ID in their IDs so later calls
// that refer to them are routed back here.
type Host struct {
	// ID identifies this worker host; stable across restarts of the same
	// worker data directory.
	ID string
	// Queue is the task queue only this host polls.
	Queue string

	cfg          HostConfig
	runs         *procs.Runs
	services     *procs.Services
	fetchClient  *http.Client
	searchClient *http.Client
	browsers     *browser.Manager
	browserFence *confine.Fence // attached to each browser session's cgroup
	// confinement is how commands are confined, replaced whole when the
	// settings' sandbox changes (SetCommandSandbox).
	confinement atomic.Pointer[commandConfinement]
	// hooks confines the hooks' processes (HostConfig.Hooks); nil where
	// they run unconfined. hookEnv goes with it (HookEnv).
	hooks   *confine.Confiner
	hookEnv map[string]string
	// mcpServers confines the stdio MCP servers: hooks, or where the
	// worker may make mount namespaces the same paths held by mounts
	// (newMCPServerConfinement).
	mcpServers *confine.Confiner
	// plainHookEnv is HookEnv where hooks run unconfined.
	plainHookEnv map[string]string
	// hooksKeptFrom are the paths the hooks' domain keeps read-only or
	// hidden (HooksReach).
	hooksKeptFrom []string
	// settingsEnv is the settings files' "env" for commands
	// (SetCommandEnv); nil for none.
	settingsEnv atomic.Pointer[map[string]string]
	proxyServer *http.Server
	proxyBase   string
	closeOnce   sync.Once
	closeErr    error
}

// NewHost prepares the data directory, resolves the host ID, opens the
// command-run registry, the service manager and the reverse proxy
// listener. Opening the registry and the manager reaps what a worker that
// died on this data directory left running: the surviving processes of
// its commands' and services' process groups are killed, and their
// records closed as worker_lost (see procs.ReapLeftover). Call Close on
// shutdown.
func NewHost(cfg HostConfig) (*Host, error) {
	cfg.applyDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("host config has no data directory: set FENIX_DATA_DIR")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory %q: %w", cfg.DataDir, err)
	}
	cfg.DataDir = dataDir
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", dataDir, err)
	}
	id := cfg.ID
	if id == "" {
		if id, err = loadOrCreateHostID(dataDir); err != nil {
			return nil, err
		}
	} else if err := ValidateHostID(id); err != nil {
		return nil, err
	}
	if cfg.SearchURL != "" {
		u, err := url.Parse(cfg.SearchURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("search URL %q is not an http(s) URL: set FENIX_SEARCH_URL like http://127.0.0.1:8888", cfg.SearchURL)
		}
	}
	if cfg.CommandUser != nil {
		if err := procs.CheckRunAs(cfg.CommandUser); err != nil {
			return nil, fmt.Errorf("FENIX_COMMAND_USER: %w", err)
		}
	} else if os.Geteuid() == 0 {
		// Landlock binds root too, and rootCommandPolicy keeps root from
		// the kernel's reach around it; what is left is root's reach over
		// every file's permissions.
		cfg.Logger.Warn("commands run as root: confinement keeps them from the worker's files, the kernel's settings, raw disks and the system's directories and bounds their capabilities, but they still read every file on the host and write every other user's; set FENIX_COMMAND_USER to run them as an unprivileged account")
	}
	// What the agent's commands cannot reach, its web_fetch and browser
	// cannot either, whatever FENIX_FETCH_ALLOW opens.
	if cfg.Fetch.Unreachable, cfg.Protected.Unreachable, err = unreachableEndpoints(cfg); err != nil {
		return nil, err
	}
	confinement, err := newConfinement(cfg, confine.Policy{}, false, nil)
	if err != nil {
		return nil, err
	}
	// Opening the registries reaps what a worker that died on this data
	// directory left running.
	runs, err := procs.OpenRuns(procs.RunsConfig{
		Dir:    filepath.Join(dataDir, "command-runs"),
		Keep:   cfg.Exec.KeepRuns,
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	services, err := procs.OpenServices(procs.ServicesConfig{
		LogDir:      filepath.Join(dataDir, "processes"),
		KeepBytes:   cfg.Services.KeepBytes,
		LogMaxBytes: cfg.Services.LogMaxBytes,
		MaxRunning:  cfg.Services.MaxRunning,
		KillGrace:   cfg.Services.KillGrace,
		Logger:      cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	h := &Host{
		ID:           id,
		Queue:        HostQueue(id),
		cfg:          cfg,
		runs:         runs,
		services:     services,
		fetchClient:  netguard.NewClient(cfg.Fetch, netguard.ClientOptions{Timeout: 60 * time.Second}),
		searchClient: &http.Client{Timeout: 20 * time.Second},
	}
	h.confinement.Store(confinement)
	h.browserFence = newBrowserFence(cfg)
	if h.browsers, err = newBrowserManager(cfg, h.browserFence); err != nil {
		if h.browserFence != nil {
			h.browserFence.Close()
		}
		services.Close()
		return nil, err
	}
	if cfg.ProxyAddr != "off" {
		listener, err := net.Listen("tcp", cfg.ProxyAddr)
		if err != nil {
			h.browsers.Shutdown()
			services.Close()
			return nil, fmt.Errorf("reverse proxy cannot listen on %s: %w (set FENIX_PROXY_ADDR, or \"off\")", cfg.ProxyAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/proxy/", services.ProxyHandler())
		h.proxyServer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		h.proxyBase = strings.TrimSuffix(cfg.ProxyBaseURL, "/")
		if h.proxyBase == "" {
			h.proxyBase = "http://" + listener.Addr().String()
		}
		go h.proxyServer.Serve(listener)
	}
	codePaths, hookEnv := hookCodeGuard(os.Getenv("PATH"))
	h.hookEnv, h.plainHookEnv = hookEnv, plainHookEnv(os.Getenv("PATH"))
	if h.hooks, err = newHookConfinement(cfg, codePaths); err != nil {
		h.Close()
		return nil, err
	}
	if h.hooks != nil {
		kept := hookPolicy(cfg, codePaths)
		h.hooksKeptFrom = append(slices.Clone(kept.ReadOnly), kept.Hidden...)
	}
	if h.mcpServers, err = newMCPServerConfinement(cfg, codePaths, h.hooks); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// HooksReach reports whether code a hook runs — the agent's, through a
// PostToolUse npm test running its scripts.test — could write path:
// anywhere the hooks' domain does not keep read-only or hidden (on a root
// worker the system's directories, the worker's files, the code paths of
// its home), and anywhere at all where hooks run unconfined. Such code
// rewrote an operator's ~/.claude/settings.json, which the next start
// took for the operator's own change and adopted.
func (h *Host) HooksReach(path string) bool {
	if os.Geteuid() != 0 && unix.Access(path, unix.W_OK) != nil && unix.Access(filepath.Dir(path), unix.W_OK) != nil {
		return false // neither the file nor its directory is the worker's user's to write
	}
	if h.HookConfiner() == nil {
		return true
	}
	for _, kept := range h.hooksKeptFrom {
		if path == kept || strings.HasPrefix(path, strings.TrimSuffix(kept, "/")+"/") {
			return false
		}
	}
	return true
}

// HookConfiner starts the hooks' processes confined (HostConfig.Hooks),
// or is nil where they run unconfined.
func (h *Host) HookConfiner() *confine.Confiner {
	if h == nil {
		return nil
	}
	return h.hooks
}

// MCPServerConfiner starts the stdio MCP servers confined (see
// newMCPServerConfinement), or is nil where they run unconfined.
func (h *Host) MCPServerConfiner() *confine.Confiner {
	if h == nil {
		return nil
	}
	return h.mcpServers
}

// HookEnv are the variables every hook gets from the worker. Where hooks
// are confined they turn off the code paths of the worker's home that
// did not exist when the hooks were confined (see hookCodeGuard), so a
// hook cannot plant one for the next; everywhere the PATH has no
// relative entries, which would look programs up in the workspace.
func (h *Host) HookEnv() map[string]string {
	if h == nil {
		return nil
	}
	if h.HookConfiner() == nil {
		return h.plainHookEnv
	}
	return h.hookEnv
}

func loadOrCreateHostID(dataDir string) (string, error) {
	file := filepath.Join(dataDir, "host-id")
	raw, err := os.ReadFile(file)
	if err == nil {
		id := strings.TrimSpace(string(raw))
		if err := ValidateHostID(id); err != nil {
			return "", fmt.Errorf("%s: %w (fix or delete the file)", file, err)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading host ID: %w", err)
	}
	id, err := generateHostID()
	if err != nil {
		return "", err
	}
	// O_EXCL: two workers starting on one data directory agree on one ID.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return loadOrCreateHostID(dataDir)
	}
	if err != nil {
		return "", fmt.Errorf("writing host ID: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(id + "\n"); err != nil {
		return "", fmt.Errorf("writing host ID: %w", err)
	}
	return id, nil
}

// generateHostID is the sanitized hostname plus a random suffix, readable
// in the Web UI and unique per data directory.
func generateHostID() (string, error) {
	name, _ := os.Hostname()
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '.' || r == '_':
			b.WriteByte('-')
		}
		if b.Len() >= 24 {
			break
		}
	}
	prefix := strings.Trim(b.String(), "-")
	if prefix == "" {
		prefix = "host"
	}
	var suffix [3]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", err
	}
	return prefix + "-" + hex.EncodeToString(suffix[:]), nil
}

// Close kills the process groups of every running command and background
// service, closes every browser session, then stops the reverse proxy.
// Call it on worker shutdown, after the Temporal worker has stopped
// polling.
func (h *Host) Close() error {
	if h == nil {
		return nil
	}
	h.closeOnce.Do(func() {
		if h.runs != nil {
			h.runs.StopAll(procs.ReasonShutdown, h.cfg.Exec.KillGrace)
		}
		if h.services != nil {
			h.services.Close()
		}
		if h.browsers != nil {
			h.browsers.Shutdown()
		}
		if h.browserFence != nil {
			h.browserFence.Close()
		}
		h.confinement.Load().close()
		if h.hooks != nil {
			h.hooks.Close()
		}
		if h.mcpServers != nil && h.mcpServers != h.hooks {
			h.mcpServers.Close()
		}
		if h.proxyServer != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := h.proxyServer.Shutdown(ctx); err != nil {
				h.closeErr = h.proxyServer.Close()
			}
		}
	})
	return h.closeErr
}

// DataDir is the host's data directory.
func (h *Host) DataDir() string { return h.cfg.DataDir }

// ProxyBaseURL is the reverse proxy's base URL, empty when disabled.
func (h *Host) ProxyBaseURL() string { return h.proxyBase }

// SearchURL is web_search's backend, empty when none is configured.
func (h *Host) SearchURL() string { return h.cfg.SearchURL }

// Owns reports whether a resource ID was minted by this host.
func (h *Host) Owns(resourceID string) bool {
	owner, ok := HostOfResource(resourceID)
	return ok && owner == h.ID
}

// CommandRuns summarizes the newest command runs on this host (for the
// operator snapshot).
func (h *Host) CommandRuns(limit int) []procs.RunSummary {
	if h == nil || h.runs == nil {
		return nil
	}
	return h.runs.List(limit)
}

// ProcessRuns describes the process runs (background services) on this
// host (for the operator snapshot).
func (h *Host) ProcessRuns() []procs.ServiceInfo {
	if h == nil || h.services == nil {
		return nil
	}
	return h.services.List()
}

// requireHost fails clearly when a tool runs without a Host built by
// NewHost.
func requireHost(env *Env, tool string) (*Host, error) {
	if env.Host == nil || env.Host.runs == nil {
		return nil, fenixerr.New(fenixerr.TypeToolUnavailable, "tool %q needs the worker host's resources, but this worker has none: build one with tools.NewHost and pass it in Env.Host", tool).WithTool(tool)
	}
	return env.Host, nil
}

// requireOwner fails clearly when a call about a resource reached the
// wrong host.
func (h *Host) requireOwner(tool, id string) error {
	owner, ok := HostOfResource(id)
	if !ok {
		return fenixerr.Validation("%q is not a resource ID of the form <kind>_<host>_<16 hex digits>", id).WithTool(tool)
	}
	if owner != h.ID {
		return fenixerr.New(fenixerr.TypeToolUnavailable, "%s belongs to host %s, but this is host %s: route the call to task queue %s", id, owner, h.ID, HostQueue(owner)).WithTool(tool).WithCode("wrong_host")
	}
	return nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Bounds of caller-supplied environment variables.
const (
	maxExtraEnvVars     = 64
	maxExtraEnvValueLen = 8 << 10
)

// commandEnv builds a command's whole environment: PATH, HOME (the
// workspace), LANG, TERM=dumb, TMPDIR under a sandbox or past a protected
// path in /tmp, the configured
// allowlist, then the call's own variables. Nothing else from the worker (credentials included)
// reaches the command.
// SetCommandEnv gives the settings files' "env" (see
// claudecode.CommandEnv, from the files named in from) to the commands
// started from now on: over the worker's allowed variables, under the
// call's own env. A variable whose name or value no command could be
// given is left out with a warning. The worker calls it at load and on
// every hook reload.
func (h *Host) SetCommandEnv(env map[string]string, from []string) {
	if len(env) == 0 {
		h.settingsEnv.Store(nil)
		return
	}
	kept := make(map[string]string, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		switch {
		case !envNamePattern.MatchString(k):
			h.cfg.Logger.Warn("settings env variable "+strconv.Quote(k)+" is left out of commands' environment: its name is not a shell variable's", "settings", strings.Join(from, ", "))
		case len(v) > maxExtraEnvValueLen || strings.ContainsRune(v, 0):
			h.cfg.Logger.Warn("settings env variable "+k+" is left out of commands' environment: longer than "+strconv.Itoa(maxExtraEnvValueLen)+" bytes or holding a NUL byte", "settings", strings.Join(from, ", "))
		default:
			kept[k] = v
		}
	}
	h.settingsEnv.Store(&kept)
}

func (h *Host) commandEnv(tool, home string, extra map[string]string) ([]string, error) {
	worker := map[string]string{}
	for _, kv := range h.cfg.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			worker[k] = v
		}
	}
	vars := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": home,
		"LANG": "C.UTF-8",
		"TERM": "dumb",
	}
	if v := worker["PATH"]; v != "" {
		vars["PATH"] = v
	}
	if v := worker["LANG"]; v != "" {
		vars["LANG"] = v
	}
	for _, name := range h.cfg.EnvAllowlist {
		if v, ok := worker[name]; ok {
			vars[name] = v
		}
	}
	if env := h.settingsEnv.Load(); env != nil {
		maps.Copy(vars, *env)
	}
	if conf := h.confinement.Load(); conf != nil && conf.temp != "" && (conf.sandboxed || vars["TMPDIR"] == "") {
		// A sandbox's write boundary leaves them /tmp to read only (as
		// Claude Code's sandbox does, its TMPDIR wins over the
		// settings'), and a protected path in /tmp leaves them no new
		// entries there (a TMPDIR the settings name is theirs).
		vars["TMPDIR"] = conf.temp
	}
	if len(extra) > maxExtraEnvVars {
		return nil, fenixerr.Validation("env has %d variables; at most %d are allowed", len(extra), maxExtraEnvVars).WithTool(tool)
	}
	for k, v := range extra {
		if !envNamePattern.MatchString(k) {
			return nil, fenixerr.Validation("env variable name %q is invalid: use letters, digits and '_', not starting with a digit", k).WithTool(tool)
		}
		if len(v) > maxExtraEnvValueLen || strings.ContainsRune(v, 0) {
			return nil, fenixerr.Validation("env variable %s is longer than %d bytes or contains a NUL byte", k, maxExtraEnvValueLen).WithTool(tool)
		}
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}
