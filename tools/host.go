package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/tools/browser"
	"github.com/fenixrt/fenix/tools/procs"
)

// Routing contract. Every resource a host creates (a command run, a
// background process) has an ID of the form <kind>_<hostID>_<16 hex>, for
// example cmd_vm-3f9a1c_0123456789abcdef, and only the host that created it
// can serve later calls about it. A call whose Definition.OwnerResource is
// non-empty must run on HostQueue(HostOfResource(id)).
const (
	// HostQueuePrefix starts every host-pinned task queue name.
	HostQueuePrefix = "fenix-host-"
	// ResourceCommandRun and ResourceProcessRun are the resource kinds.
	ResourceCommandRun     = "cmd"
	ResourceProcessRun     = "proc"
	ResourceBrowserSession = "brw"
)

var (
	hostIDPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	resourceIDPattern = regexp.MustCompile(`^([a-z]+)_([a-z0-9][a-z0-9-]{0,39})_([0-9a-f]{16})$`)
)

// HostQueue is the task queue only the worker with this host ID polls.
func HostQueue(hostID string) string { return HostQueuePrefix + hostID }

// HostOfResource extracts the host ID from a resource ID.
func HostOfResource(id string) (string, bool) {
	m := resourceIDPattern.FindStringSubmatch(id)
	if m == nil {
		return "", false
	}
	return m[2], true
}

// ValidateHostID checks the host ID grammar: 1-40 lowercase letters,
// digits and '-', starting with a letter or digit (it must fit inside
// resource IDs and task queue names).
func ValidateHostID(id string) error {
	if !hostIDPattern.MatchString(id) {
		return fmt.Errorf("host ID %q is invalid: use 1-40 lowercase letters, digits or '-', starting with a letter or digit", id)
	}
	return nil
}

// NewResourceID mints a resource ID owned by hostID.
func NewResourceID(kind, hostID string) (string, error) {
	if kind == "" || strings.Trim(kind, "abcdefghijklmnopqrstuvwxyz") != "" {
		return "", fmt.Errorf("resource kind %q must be lowercase letters", kind)
	}
	if err := ValidateHostID(hostID); err != nil {
		return "", err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return kind + "_" + hostID + "_" + hex.EncodeToString(b[:]), nil
}

// ExecConfig bounds exec_command.
type ExecConfig struct {
	// DefaultTimeout applies when a call gives none (default 60s);
	// MaxTimeout caps what a call may ask for (default 10m).
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// KillGrace is the SIGTERM-to-SIGKILL grace (default 1s).
	KillGrace time.Duration
	// KeepBytes of each stream are kept in the command-run registry
	// (default 1 MiB); ResultBytes of them go into the tool result
	// (default 32 KiB), which must stay far below Temporal's 2 MiB payload
	// limit.
	KeepBytes   int
	ResultBytes int
	// Limits per command. Defaults: 256 processes, 1 GiB files, 1024 open
	// files, 64 MiB of output, CPU seconds equal to the command's timeout.
	Limits procs.Limits
	// KeepRuns finished runs stay readable with command_run_read
	// (default 500).
	KeepRuns int
}

// ServiceConfig bounds process_exec.
type ServiceConfig struct {
	MaxRunning  int           // default 16
	KeepBytes   int           // output kept in memory per service, default 256 KiB
	LogMaxBytes int64         // log file cap per service, default 16 MiB
	KillGrace   time.Duration // default 2s
	// Limits per service. Defaults: 256 processes, 1 GiB files, no output
	// kill (services log forever; the log file is capped instead).
	Limits procs.Limits
}

// HostConfig configures a worker host's tools.
type HostConfig struct {
	// ID overrides the host ID; otherwise it is read from (or generated
	// into) DataDir/host-id, so it is stable per data directory.
	ID string
	// DataDir holds the host ID, command-run records and service logs.
	DataDir string
	// SearchURL is the SearXNG-style backend of web_search; empty disables
	// web_search.
	SearchURL string
	// Fetch is web_fetch's allowlist of otherwise blocked destinations.
	Fetch netguard.Policy
	// ProxyAddr is the reverse proxy's listen address (default
	// 127.0.0.1:0, an ephemeral loopback port); "off" disables it.
	ProxyAddr string
	// ProxyBaseURL is how users reach the proxy when it sits behind
	// another proxy; default http://<listen address>.
	ProxyBaseURL string
	// EnvAllowlist names worker environment variables passed to commands
	// besides PATH, HOME, LANG and TERM.
	EnvAllowlist []string
	// Environ is the environment the allowlist draws from (default
	// os.Environ()).
	Environ  []string
	Exec     ExecConfig
	Services ServiceConfig
	Browser  BrowserConfig
	// Logger receives what NewHost reaped from a worker that died on this
	// data directory: command runs and services it left running (default
	// slog.Default()).
	Logger *slog.Logger
}

// HostConfigFromEnv reads the host configuration from environment
// variables: FENIX_DATA_DIR, FENIX_HOST_ID, FENIX_SEARCH_URL,
// FENIX_FETCH_ALLOW (CIDRs, IPs and host names, comma-separated),
// FENIX_PROXY_ADDR, FENIX_PROXY_BASE_URL, FENIX_EXEC_ENV_ALLOW (variable
// names, comma-separated), FENIX_EXEC_MAX_TIMEOUT (a Go duration or
// seconds), FENIX_BROWSER_PATH and FENIX_BROWSER_IDLE_TIMEOUT.
func HostConfigFromEnv(getenv func(string) string) (HostConfig, error) {
	cfg := HostConfig{
		ID:           getenv("FENIX_HOST_ID"),
		DataDir:      getenv("FENIX_DATA_DIR"),
		SearchURL:    getenv("FENIX_SEARCH_URL"),
		ProxyAddr:    getenv("FENIX_PROXY_ADDR"),
		ProxyBaseURL: getenv("FENIX_PROXY_BASE_URL"),
	}
	if cfg.DataDir == "" {
		cfg.DataDir = defaultDataDir(getenv)
	}
	policy, err := netguard.ParsePolicy(getenv("FENIX_FETCH_ALLOW"))
	if err != nil {
		return cfg, fmt.Errorf("FENIX_FETCH_ALLOW: %w", err)
	}
	cfg.Fetch = policy
	for _, name := range strings.Split(getenv("FENIX_EXEC_ENV_ALLOW"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			cfg.EnvAllowlist = append(cfg.EnvAllowlist, name)
		}
	}
	if cfg.Exec.MaxTimeout, err = envDuration(getenv, "FENIX_EXEC_MAX_TIMEOUT"); err != nil {
		return cfg, err
	}
	cfg.Browser.ExecPath = getenv("FENIX_BROWSER_PATH")
	if cfg.Browser.IdleTimeout, err = envDuration(getenv, "FENIX_BROWSER_IDLE_TIMEOUT"); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// envDuration reads a Go duration or a number of seconds; zero when unset.
func envDuration(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, serr := strconv.Atoi(v)
		if serr != nil {
			return 0, fmt.Errorf("%s=%q is neither a duration (10m) nor seconds", name, v)
		}
		d = time.Duration(secs) * time.Second
	}
	return d, nil
}

func defaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "fenix")
	}
	if d := getenv("HOME"); d != "" {
		return filepath.Join(d, ".local", "state", "fenix")
	}
	return filepath.Join(os.TempDir(), "fenix")
}

func (c *HostConfig) applyDefaults() {
	e := &c.Exec
	if e.DefaultTimeout <= 0 {
		e.DefaultTimeout = 60 * time.Second
	}
	if e.MaxTimeout <= 0 {
		e.MaxTimeout = 10 * time.Minute
	}
	e.DefaultTimeout = min(e.DefaultTimeout, e.MaxTimeout)
	if e.KillGrace <= 0 {
		e.KillGrace = time.Second
	}
	if e.KeepBytes <= 0 {
		e.KeepBytes = 1 << 20
	}
	if e.ResultBytes <= 0 {
		e.ResultBytes = 32 << 10
	}
	e.ResultBytes = min(e.ResultBytes, e.KeepBytes)
	if e.KeepRuns <= 0 {
		e.KeepRuns = 500
	}
	applyLimitDefaults(&e.Limits)
	if e.Limits.MaxOutputBytes == 0 {
		e.Limits.MaxOutputBytes = 64 << 20
	}
	s := &c.Services
	applyLimitDefaults(&s.Limits)
	if c.ProxyAddr == "" {
		c.ProxyAddr = "127.0.0.1:0"
	}
	if c.Environ == nil {
		c.Environ = os.Environ()
	}
}

func applyLimitDefaults(l *procs.Limits) {
	if l.MaxProcesses == 0 {
		l.MaxProcesses = 256
	}
	if l.MaxFileBytes == 0 {
		l.MaxFileBytes = 1 << 30
	}
	if l.MaxOpenFiles == 0 {
		l.MaxOpenFiles = 1024
	}
}

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
	proxyServer  *http.Server
	proxyBase    string
	closeOnce    sync.Once
	closeErr     error
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
	if h.browsers, err = newBrowserManager(cfg); err != nil {
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
	return h, nil
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
// workspace), LANG, TERM=dumb, the configured allowlist, then the call's
// own variables. Nothing else from the worker (credentials included)
// reaches the command.
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
