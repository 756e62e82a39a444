package tools

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/tools/procs"
)

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
	// files, 64 MiB of output, 1 GiB of its disks kept free, CPU seconds
	// equal to the command's timeout.
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
	// Limits per service. Defaults: 256 processes, 1 GiB files, 1 GiB of
	// its disks kept free, no output kill (services log forever; the log
	// file is capped instead).
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
	Environ []string
	// CommandUser, when set, is who exec_command and process_exec run
	// their commands as (FENIX_COMMAND_USER: an account name, a uid or
	// uid:gid); else they run as the worker. The worker must be root or
	// hold CAP_SETUID, CAP_SETGID and CAP_KILL; NewHost
	// starts a probe command as the user and fails if it cannot.
	CommandUser *procs.User
	// Confinement is FENIX_COMMAND_CONFINEMENT: whether commands run in a
	// Landlock domain that keeps them out of the worker's own files
	// (confine.ModeAuto, the default, where the kernel allows).
	Confinement confine.Mode
	// SignalsAnywhere is FENIX_COMMAND_SIGNALS=any: confined commands may
	// signal every process their user may, not only those of their
	// conversation in their workspace (see confine.Policy.SignalsAnywhere
	// and confine.Confiner.StartInGroup); "own", the default, scopes them.
	SignalsAnywhere bool
	// HookSignalsAnywhere is FENIX_HOOK_SIGNALS=any: hooks and the stdio
	// MCP servers may signal every process their user may, for a hook
	// that stops a service the agent's commands started (a SessionEnd
	// `pkill -f 'npm run dev'`). "own", the default, scopes each to the
	// processes it started (where the kernel scopes signals): a hook runs
	// the agent's code (a PostToolUse `npm test`, a git fsmonitor), and
	// that code must not stop the worker, an MCP server or the guard.
	HookSignalsAnywhere bool
	// WorkspaceBases are the directories the conversations' workspaces
	// lie in (the worker fills them in from FENIX_WORKSPACE_BASES): a
	// command reaches its own workspace in them and nothing else of
	// them (confine.Policy.Workspaces), unless SharedWorkspaces.
	WorkspaceBases []string
	// SharedWorkspaces is FENIX_COMMAND_WORKSPACES=all: a command reaches
	// every workspace in the bases, as its user may; "own", the default,
	// keeps one conversation's commands out of another's workspace.
	SharedWorkspaces bool
	// SystemWritable is FENIX_COMMAND_SYSTEM=writable: commands that run
	// as root may write the system's directories (/usr, /etc, /opt, …:
	// the programs and libraries the hooks run), to install packages;
	// "read-only", the default, keeps them from it.
	SystemWritable bool
	// Unreachable are the "host:port" endpoints no command or hook may
	// connect to (FENIX_COMMAND_UNREACHABLE, comma-separated, default
	// UnreachableFrontend: the Temporal frontend the worker uses, which
	// the worker puts in with WithFrontend; "none" for nothing): an
	// agent's command that reaches a frontend without client
	// authentication could approve its own parked call. Refused by the
	// confinement's cgroup fence (confine.Fence: Linux, cgroup v2, a root
	// worker or CAP_BPF and CAP_NET_ADMIN).
	Unreachable []string
	// Protected is what confined commands may not reach besides DataDir,
	// which is always hidden: the worker's other state and its secret
	// files (the worker fills it in).
	Protected confine.Policy
	// Hooks is what the hooks' processes may not reach, besides
	// Protected's hidden files (the worker fills it in: its data directory
	// hidden but for the pinned hook scripts and transcripts, read, and
	// the plugins' data, written). Without Hidden paths hooks run
	// unconfined.
	Hooks    confine.Policy
	Exec     ExecConfig
	Services ServiceConfig
	Browser  BrowserConfig
	// Logger receives what NewHost reaped from a worker that died on this
	// data directory: command runs and services it left running (default
	// slog.Default()).
	Logger *slog.Logger
}

// HostConfigFromEnv reads the host configuration from environment
// variables: FENIX_SEARCH_URL,
// FENIX_FETCH_ALLOW (CIDRs, IPs and host names, comma-separated),
// FENIX_PROXY_ADDR, FENIX_PROXY_BASE_URL, FENIX_EXEC_ENV_ALLOW (variable
// names, comma-separated), FENIX_EXEC_MAX_TIMEOUT (a Go duration or
// seconds), FENIX_COMMAND_USER, FENIX_COMMAND_CONFINEMENT,
// FENIX_COMMAND_SIGNALS, FENIX_HOOK_SIGNALS, FENIX_COMMAND_WORKSPACES,
// FENIX_COMMAND_SYSTEM, FENIX_COMMAND_UNREACHABLE,
// FENIX_BROWSER_PATH and
// FENIX_BROWSER_IDLE_TIMEOUT.
func HostConfigFromEnv(getenv func(string) string) (HostConfig, error) {
	// The data directory and host ID are the worker's settings
	// (internal/worker Config), which NewHost's caller fills in.
	cfg := HostConfig{
		SearchURL:    getenv("FENIX_SEARCH_URL"),
		ProxyAddr:    getenv("FENIX_PROXY_ADDR"),
		ProxyBaseURL: getenv("FENIX_PROXY_BASE_URL"),
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
	if name := getenv("FENIX_COMMAND_USER"); name != "" {
		if cfg.CommandUser, err = procs.LookupUser(name); err != nil {
			return cfg, fmt.Errorf("FENIX_COMMAND_USER: %w", err)
		}
	}
	if cfg.Confinement, err = confine.ParseMode(getenv("FENIX_COMMAND_CONFINEMENT")); err != nil {
		return cfg, fmt.Errorf("FENIX_COMMAND_CONFINEMENT: %w", err)
	}
	switch v := getenv("FENIX_COMMAND_SIGNALS"); v {
	case "", "own":
	case "any":
		cfg.SignalsAnywhere = true
	default:
		return cfg, fmt.Errorf("FENIX_COMMAND_SIGNALS=%q: want own (a command signals only its conversation's processes in its workspace, the default) or any (every process its user may, hooks included)", v)
	}
	switch v := getenv("FENIX_HOOK_SIGNALS"); v {
	case "", "own":
	case "any":
		cfg.HookSignalsAnywhere = true
	default:
		return cfg, fmt.Errorf("FENIX_HOOK_SIGNALS=%q: want own (a hook or MCP server signals only the processes it started, the default) or any (every process its user may, the worker included)", v)
	}
	switch v := getenv("FENIX_COMMAND_WORKSPACES"); v {
	case "", "own":
	case "all":
		cfg.SharedWorkspaces = true
	default:
		return cfg, fmt.Errorf("FENIX_COMMAND_WORKSPACES=%q: want own (a command reaches only its own workspace in FENIX_WORKSPACE_BASES, the default) or all (every workspace there)", v)
	}
	switch v := getenv("FENIX_COMMAND_SYSTEM"); v {
	case "", "read-only":
	case "writable":
		cfg.SystemWritable = true
	default:
		return cfg, fmt.Errorf("FENIX_COMMAND_SYSTEM=%q: want read-only (commands that run as root cannot change /usr, /etc and the other system directories, the default) or writable", v)
	}
	if cfg.Unreachable, err = parseUnreachable(getenv("FENIX_COMMAND_UNREACHABLE")); err != nil {
		return cfg, err
	}
	cfg.Browser.ExecPath = getenv("FENIX_BROWSER_PATH")
	if cfg.Browser.IdleTimeout, err = envDuration(getenv, "FENIX_BROWSER_IDLE_TIMEOUT"); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// UnreachableFrontend stands in HostConfig.Unreachable for the Temporal
// frontend the worker uses, until WithFrontend names it.
const UnreachableFrontend = "frontend"

// parseUnreachable reads FENIX_COMMAND_UNREACHABLE: "" is the frontend
// alone, "none" nothing.
func parseUnreachable(v string) ([]string, error) {
	switch strings.TrimSpace(v) {
	case "":
		return []string{UnreachableFrontend}, nil
	case "none":
		return nil, nil
	}
	var out []string
	for _, endpoint := range strings.Split(v, ",") {
		switch endpoint = strings.TrimSpace(endpoint); endpoint {
		case "":
			continue
		case UnreachableFrontend:
		default:
			if _, _, err := confine.ParseEndpoint(endpoint); err != nil {
				return nil, fmt.Errorf("FENIX_COMMAND_UNREACHABLE: %q is neither %q nor host:port: %w", endpoint, UnreachableFrontend, err)
			}
		}
		out = append(out, endpoint)
	}
	return out, nil
}

// WithFrontend names the Temporal frontend at address where
// UnreachableFrontend stands in endpoints.
func WithFrontend(endpoints []string, address string) []string {
	out := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		if e == UnreachableFrontend {
			e = address
		}
		out = append(out, e)
	}
	return out
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

func (c *HostConfig) applyDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
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
	if l.DiskReserveBytes == 0 {
		l.DiskReserveBytes = 1 << 30
	}
	if l.MaxOpenFiles == 0 {
		l.MaxOpenFiles = 1024
	}
}
