package worker

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/providers"
	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/observability"
	"github.com/fenixrt/fenix/redact"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
	"github.com/fenixrt/fenix/workspace"
)

// Config is the worker's one configuration: LoadConfig reads it once from
// flags and the environment (no other package reads either), New applies
// its defaults and checks it with Validate. Tests build it directly.
type Config struct {
	TaskQueue            string
	DataDir              string
	DefaultWorkspaceRoot string
	// WorkspaceBases are the directories every workspace root must resolve
	// inside (FENIX_WORKSPACE_BASES); empty means DefaultWorkspaceRoot alone.
	WorkspaceBases []string
	// Contexts configures the context store (FENIX_CONTEXT_STORE and
	// friends); the zero value is <DataDir>/contexts.
	Contexts ContextStoreConfig
	// HostID overrides the persisted host identity.
	HostID string
	Logger *slog.Logger
	// Tools overrides the built-in tool registry.
	Tools *tools.Registry
	// SkillsDir holds the system/, curated/ and installed/ skill roots
	// (default <DataDir>/skills).
	SkillsDir string
	// ProfilesDir holds one directory per agent profile with AGENT.md,
	// SOUL.md, USER.md, MEMORY.md, OPERATOR.md.
	ProfilesDir string
	// HooksFile is a hook settings file (Claude Code's format), or a list of
	// them separated by the OS path-list separator (":").
	HooksFile string
	// HookSources are more hook settings files, project directories
	// (holding .claude/) or plugin directories (holding hooks/hooks.json),
	// loaded after HooksFile's, in order.
	HookSources []string
	// HookConcurrency bounds how many hooks of one event run at once
	// (FENIX_HOOK_CONCURRENCY; 0 means hooks.DefaultConcurrency, 1 runs
	// them in turn, for hooks that cannot share the machine or a file).
	HookConcurrency int
	// HookHTTPAllow opens exceptions for http hooks' outbound rule, in
	// FENIX_FETCH_ALLOW's format (CIDRs, IPs, host names).
	HookHTTPAllow string
	// TranscriptRetention is how long a transcript file hooks read
	// (<DataDir>/transcripts) is kept after its last write
	// (FENIX_TRANSCRIPT_RETENTION, default DefaultTranscriptRetention).
	TranscriptRetention time.Duration
	// EndedRunsSweepInterval is how often the worker records, in the
	// audit log, the runs of its task queue Temporal ended from outside
	// (terminated, timed out); negative turns it off
	// (FENIX_ENDED_RUNS_SWEEP, default DefaultEndedRunsSweepInterval).
	EndedRunsSweepInterval time.Duration
	// SessionIdleTimeout ends a conversation's Claude Code session (its
	// SessionEnd hooks run) after this long without a run of the
	// conversation (FENIX_SESSION_IDLE_TIMEOUT, default
	// workflows.DefaultSessionIdleTimeout).
	SessionIdleTimeout time.Duration
	// AuditDSN selects the audit store: a postgres:// URL or a SQLite file
	// (default <DataDir>/audit.db).
	AuditDSN string
	// Hooks are custom Go hooks, registered after the built-ins and the
	// command hooks, in order.
	Hooks []hooks.AgentHook
	// HostConfig configures host-local tools (search backend, fetch
	// allowlist, proxy, exec limits); DataDir and HostID above override
	// its fields of the same meaning.
	HostConfig tools.HostConfig
	// Model answers AgentTurn's model calls; nil fails them with a clear
	// error. SummaryModel, when set, enables summarizer "model" for
	// summary compaction.
	Model        llm.Provider
	SummaryModel string
	// HookModel, when set, evaluates every prompt and agent hook of the
	// settings files, whatever model the hook names (see llm.HookModel).
	HookModel string
	// Recorder receives Fenix's metrics (nil records nothing).
	Recorder activities.Recorder
	// Namespace is where search attributes are checked (default "default").
	Namespace string
	// Redactor removes secrets from tool output (default redact.Default();
	// pass an empty one to disable).
	Redactor *redact.Redactor
	// InboxURL is the approvals inbox page that permission_prompt
	// notifications link to (FENIX_INBOX_URL; default: the worker's own
	// /inbox/ when its HTTP server is on); empty adds no link.
	InboxURL string
	// MCPConfig lists .mcp.json files (":"-separated) whose MCP servers
	// give tools mcp__<server>__<tool>, after the .mcp.json of the project
	// directories among the hook sources.
	MCPConfig string
	// AcceptPolicyChange makes New adopt hook settings, scripts and MCP
	// configurations that differ in the workspaces from the policy last
	// accepted (see acceptedPolicy); without it New keeps that policy.
	AcceptPolicyChange bool
	// MCPStartWait bounds how long New waits for MCP servers to start
	// (default mcp.DefaultStartWait); slower ones join later.
	MCPStartWait time.Duration

	// Process settings, used by the worker command around New.
	Process ProcessConfig
}

// ProcessConfig is what the worker command itself needs: logging, the
// operational HTTP server, tracing and the payload codec.
type ProcessConfig struct {
	LogFormat string
	LogLevel  string
	// HTTPAddr serves /metrics, /healthz, /readyz and /codec/; "off"
	// disables it.
	HTTPAddr string
	Tracing  observability.TracingConfig
	// Codec encrypts payloads; nil leaves them in the clear.
	Codec       *codec.Codec
	CodecServer codec.ServerConfig
	// InboxTokens are the approvals inbox's "name=token,..." pairs
	// (FENIX_INBOX_TOKENS); the inbox needs one beyond loopback.
	InboxTokens string
	// UIURL is the Temporal Web UI the inbox links runs to (FENIX_UI_URL).
	UIURL string
	// GRPCCompression is the Temporal client's request compression:
	// "gzip" (the SDK's default, for a server across a WAN) or "none"
	// (a server on the same network: no CPU spent compressing every
	// workflow task completion; `starter bench -grpc-compression` measures
	// both).
	GRPCCompression string
}

// ContextStoreConfig selects and tunes the context store.
type ContextStoreConfig struct {
	// Store is FENIX_CONTEXT_STORE: "" for <DataDir>/contexts, a directory,
	// or postgres://... for the shared store (see contextstore.Open).
	Store string
	// MaxBlobBytes limits one stored message list in the shared store
	// (FENIX_CONTEXT_MAX_BYTES, default contextstore.DefaultMaxBlobBytes).
	MaxBlobBytes int64
	// Retention keeps blobs used within it whatever their runs' state
	// (FENIX_CONTEXT_RETENTION, default DefaultContextRetention).
	Retention time.Duration
	// GCInterval is how often this worker tries to collect (default
	// DefaultContextGCInterval); negative disables collection here. One
	// worker of a fleet collects at a time.
	GCInterval time.Duration
}

// Worker defaults shared by the flags and by New.
const (
	// DefaultTranscriptRetention keeps a transcript file a week after
	// its session last wrote it.
	DefaultTranscriptRetention = 7 * 24 * time.Hour
	// DefaultContextRetention keeps a shared store's blobs a day after
	// their last use, so a run that reads its history late still finds them.
	DefaultContextRetention = 24 * time.Hour
	// DefaultContextGCInterval is how often a worker collects a shared
	// store's unreferenced blobs.
	DefaultContextGCInterval = 10 * time.Minute
	// DefaultHTTPAddr is the operational endpoints' listen address.
	DefaultHTTPAddr = "127.0.0.1:9090"
)

// withDefaults fills what was left unset.
func (c Config) withDefaults() Config {
	if c.TaskQueue == "" {
		c.TaskQueue = workflows.DefaultTaskQueue
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DataDir != "" && c.SkillsDir == "" {
		c.SkillsDir = filepath.Join(c.DataDir, "skills")
	}
	if c.DataDir != "" && c.AuditDSN == "" {
		c.AuditDSN = filepath.Join(c.DataDir, "audit.db")
	}
	if c.Redactor == nil {
		c.Redactor = redact.Default()
	}
	if c.Contexts.Retention == 0 {
		c.Contexts.Retention = DefaultContextRetention
	}
	if c.SessionIdleTimeout == 0 {
		c.SessionIdleTimeout = workflows.DefaultSessionIdleTimeout
	}
	if c.EndedRunsSweepInterval == 0 {
		c.EndedRunsSweepInterval = DefaultEndedRunsSweepInterval
	}
	if c.TranscriptRetention == 0 {
		c.TranscriptRetention = DefaultTranscriptRetention
	}
	if c.Contexts.GCInterval == 0 {
		c.Contexts.GCInterval = DefaultContextGCInterval
	}
	return c
}

// Validate reports the first setting that cannot work, naming it.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("worker data directory is not set: pass -data-dir or FENIX_DATA_DIR")
	}
	if c.Contexts.MaxBlobBytes < 0 {
		return fmt.Errorf("FENIX_CONTEXT_MAX_BYTES=%d: want a positive number of bytes", c.Contexts.MaxBlobBytes)
	}
	if c.SessionIdleTimeout < time.Second {
		return fmt.Errorf("FENIX_SESSION_IDLE_TIMEOUT=%s: want at least 1s", c.SessionIdleTimeout)
	}
	if c.TranscriptRetention < 0 {
		return fmt.Errorf("FENIX_TRANSCRIPT_RETENTION=%s: want a positive duration", c.TranscriptRetention)
	}
	if c.Contexts.Retention < 0 {
		return fmt.Errorf("FENIX_CONTEXT_RETENTION=%s: want a positive duration", c.Contexts.Retention)
	}
	if c.HookConcurrency < 0 {
		return fmt.Errorf("FENIX_HOOK_CONCURRENCY=%d: want 1 or more (0: the default, %d)", c.HookConcurrency, hooks.DefaultConcurrency)
	}
	switch c.Process.GRPCCompression {
	case "", "gzip", "none":
	default:
		return fmt.Errorf("FENIX_GRPC_COMPRESSION=%q: use gzip or none", c.Process.GRPCCompression)
	}
	return nil
}

// LoadConfig reads the worker's configuration from args and the
// environment (getenv is os.Getenv in the command): each flag defaults to
// its environment variable, and the tool, model, codec and tracing
// settings are read from the environment here, once.
func LoadConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	cfg, err := parseFlags(args, getenv, stderr)
	if err != nil {
		return Config{}, err
	}
	if cfg.HostConfig, err = tools.HostConfigFromEnv(getenv); err != nil {
		return Config{}, err
	}
	// Commands draw their allowlisted variables from the worker's own
	// environment.
	cfg.HostConfig.Environ = os.Environ()
	cfg.HostConfig.Protected.Hidden = secretFiles(getenv)
	if cfg.Model, err = providers.FromEnv(getenv); err != nil {
		return Config{}, fmt.Errorf("model provider configuration: %w", err)
	}
	cfg.Process.Tracing = observability.TracingConfigFromEnv(getenv, observability.ServiceWorker, cfg.HostID)
	if cfg.Process.Codec, err = codec.FromEnv(getenv); err != nil {
		return Config{}, err
	}
	if cfg.Process.Codec != nil {
		if cfg.Process.CodecServer, err = codec.ServerConfigFromEnv(getenv); err != nil {
			return Config{}, err
		}
	}
	return cfg, cfg.withDefaults().Validate()
}

// parseFlags defines the worker's flags, each defaulting to its
// environment variable, and parses args.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	env := envReader{getenv: getenv}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var workspaceBases, redactPatterns string
	var noRedact bool
	fs.StringVar(&cfg.TaskQueue, "task-queue", env.or("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "shared task queue (env FENIX_TASK_QUEUE)")
	fs.StringVar(&cfg.DataDir, "data-dir", env.or("FENIX_DATA_DIR", DefaultDataDir(getenv)), "directory for the context store, host ID and host-local state (env FENIX_DATA_DIR)")
	fs.StringVar(&cfg.DefaultWorkspaceRoot, "workspace-root", getenv("FENIX_WORKSPACE_ROOT"), "default workspace root for assignments without workspace_root (env FENIX_WORKSPACE_ROOT)")
	fs.StringVar(&workspaceBases, "workspace-bases", getenv(workspace.BasesSetting), "directories (separated by \":\") every assignment's workspace_root must resolve inside, symlinks followed (env FENIX_WORKSPACE_BASES; default: the workspace root)")
	fs.StringVar(&cfg.HostID, "host-id", getenv("FENIX_HOST_ID"), "override the persisted host ID (env FENIX_HOST_ID)")
	fs.StringVar(&cfg.SkillsDir, "skills-dir", getenv("FENIX_SKILLS_DIR"), "directory with system/, curated/ and installed/ skill roots (env FENIX_SKILLS_DIR; default <data-dir>/skills)")
	fs.StringVar(&cfg.ProfilesDir, "profiles-dir", getenv("FENIX_PROFILES_DIR"), "directory of agent profiles with AGENT.md, SOUL.md, USER.md, MEMORY.md, OPERATOR.md (env FENIX_PROFILES_DIR)")
	fs.StringVar(&cfg.HooksFile, "hooks-file", getenv("FENIX_HOOKS_FILE"), "hook settings in Claude Code's format: settings files, project directories (holding .claude/) or plugin directories (holding hooks/hooks.json), \":\"-separated, loaded in order (env FENIX_HOOKS_FILE)")
	fs.StringVar(&cfg.MCPConfig, "mcp-config", getenv("FENIX_MCP_CONFIG"), "MCP server configurations in Claude Code's .mcp.json format, \":\"-separated; project directories given to -hooks-file contribute their .mcp.json too (env FENIX_MCP_CONFIG)")
	fs.BoolVar(&cfg.AcceptPolicyChange, "accept-policy-change", getenv("FENIX_ACCEPT_POLICY_CHANGE") == "1", "adopt the hook settings, hook scripts and .mcp.json files of the workspaces as they are on disk, when they differ from the policy this worker last accepted; without it the worker keeps that policy and logs what differs (env FENIX_ACCEPT_POLICY_CHANGE=1)")
	fs.IntVar(&cfg.HookConcurrency, "hook-concurrency", env.count("FENIX_HOOK_CONCURRENCY", hooks.DefaultConcurrency), "how many hooks of one event run at once; 1 runs them in turn (env FENIX_HOOK_CONCURRENCY)")
	fs.StringVar(&cfg.HookHTTPAllow, "hooks-http-allow", getenv("FENIX_HOOKS_HTTP_ALLOW"), "private or loopback destinations http hooks may reach: CIDRs, IPs, host names (env FENIX_HOOKS_HTTP_ALLOW)")
	fs.StringVar(&cfg.HookModel, "hook-model", getenv("FENIX_HOOK_MODEL"), "model that evaluates the settings files' prompt and agent hooks; default: the hook's model unless it is a Claude alias (haiku, sonnet, opus), else FENIX_MODEL (env FENIX_HOOK_MODEL)")
	fs.StringVar(&cfg.SummaryModel, "summary-model", getenv("FENIX_SUMMARY_MODEL"), "model for summary compaction with summarizer \"model\" (env FENIX_SUMMARY_MODEL)")
	fs.StringVar(&redactPatterns, "redact-patterns", getenv("FENIX_REDACT_PATTERNS"), "JSON file of extra secret patterns [{\"name\",\"regex\",\"keep\",\"hints\"}] redacted from tool output (env FENIX_REDACT_PATTERNS)")
	fs.BoolVar(&noRedact, "no-redact", getenv("FENIX_REDACT") == "off", "do not redact secrets from tool output (env FENIX_REDACT=off)")
	fs.StringVar(&cfg.Process.HTTPAddr, "http-addr", env.or("FENIX_HTTP_ADDR", DefaultHTTPAddr), "listen address of /metrics, /healthz, /readyz and the codec server /codec/; \"off\" disables it (env FENIX_HTTP_ADDR)")
	fs.StringVar(&cfg.Contexts.Store, "context-store", getenv(contextstore.Setting), "context store for large message lists: postgres://... (shared by every worker, no shared volume needed), or a directory (env FENIX_CONTEXT_STORE; default <data-dir>/contexts)")
	fs.Int64Var(&cfg.Contexts.MaxBlobBytes, "context-max-bytes", env.bytes("FENIX_CONTEXT_MAX_BYTES", contextstore.DefaultMaxBlobBytes), "largest message list the shared context store accepts (env FENIX_CONTEXT_MAX_BYTES)")
	fs.DurationVar(&cfg.Contexts.Retention, "context-retention", env.duration("FENIX_CONTEXT_RETENTION", DefaultContextRetention), "the shared context store keeps what was stored or read within this window, whatever its runs' state (env FENIX_CONTEXT_RETENTION)")
	fs.DurationVar(&cfg.Contexts.GCInterval, "context-gc-interval", env.duration("FENIX_CONTEXT_GC_INTERVAL", DefaultContextGCInterval), "how often this worker collects the shared context store's blobs no open run references; negative disables (env FENIX_CONTEXT_GC_INTERVAL)")
	fs.StringVar(&cfg.InboxURL, "inbox-url", getenv("FENIX_INBOX_URL"), "approvals inbox page linked from permission_prompt notifications (env FENIX_INBOX_URL; default http://<http-addr>/inbox/)")
	fs.DurationVar(&cfg.SessionIdleTimeout, "session-idle-timeout", env.duration("FENIX_SESSION_IDLE_TIMEOUT", workflows.DefaultSessionIdleTimeout), "end a conversation's Claude Code session (SessionEnd hooks, reason other) after this long without a run (env FENIX_SESSION_IDLE_TIMEOUT)")
	fs.DurationVar(&cfg.EndedRunsSweepInterval, "ended-runs-sweep", env.duration("FENIX_ENDED_RUNS_SWEEP", DefaultEndedRunsSweepInterval), "how often this worker records in the audit log the runs of its task queue Temporal ended from outside (terminated, timed out); negative turns it off (env FENIX_ENDED_RUNS_SWEEP)")
	fs.DurationVar(&cfg.TranscriptRetention, "transcript-retention", env.duration("FENIX_TRANSCRIPT_RETENTION", DefaultTranscriptRetention), "delete the transcript files hooks read this long after their last write (env FENIX_TRANSCRIPT_RETENTION)")
	fs.StringVar(&cfg.AuditDSN, "audit-dsn", getenv("FENIX_AUDIT_DSN"), "audit store: postgres://... or a SQLite file (env FENIX_AUDIT_DSN; default <data-dir>/audit.db)")
	fs.StringVar(&cfg.Process.GRPCCompression, "grpc-compression", env.or("FENIX_GRPC_COMPRESSION", "gzip"), "Temporal client request compression: gzip (the SDK's default) or none (a server on the same network) (env FENIX_GRPC_COMPRESSION)")
	fs.StringVar(&cfg.Process.LogFormat, "log-format", env.or("FENIX_LOG_FORMAT", "json"), "log format: json or text (env FENIX_LOG_FORMAT)")
	fs.StringVar(&cfg.Process.LogLevel, "log-level", env.or("FENIX_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env FENIX_LOG_LEVEL)")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if env.err != nil {
		return Config{}, env.err
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if cfg.HookConcurrency < 1 {
		return Config{}, fmt.Errorf("-hook-concurrency=%d: want 1 or more", cfg.HookConcurrency)
	}
	if strings.TrimSpace(cfg.TaskQueue) == "" || strings.TrimSpace(cfg.TaskQueue) != cfg.TaskQueue {
		return Config{}, fmt.Errorf("-task-queue (FENIX_TASK_QUEUE) %q: want a name without leading or trailing spaces; a starter's queue of the same name never matches a blank or padded one by eye", cfg.TaskQueue)
	}
	switch v := getenv("FENIX_REDACT"); v {
	case "", "on", "off":
	default:
		return Config{}, fmt.Errorf("FENIX_REDACT=%q: want on (the default: secrets are redacted from tool output) or off", v)
	}
	cfg.WorkspaceBases = workspace.ParseList(workspaceBases)
	cfg.Process.InboxTokens = getenv("FENIX_INBOX_TOKENS")
	cfg.Process.UIURL = getenv("FENIX_UI_URL")
	if cfg.InboxURL == "" {
		cfg.InboxURL = defaultInboxURL(cfg.Process.HTTPAddr)
	}
	redactor, err := buildRedactor(redactPatterns, noRedact)
	if err != nil {
		return Config{}, err
	}
	cfg.Redactor = redactor
	return cfg, nil
}

const usage = `Usage: worker [flags]
       worker mcp-login SERVER [flags]

Runs a Fenix worker until interrupted; mcp-login signs in to a remote MCP
server that needs OAuth and stores the tokens for the worker (worker
mcp-login -h). Temporal connection settings come from TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_* and TEMPORAL_PROFILE /
TEMPORAL_CONFIG_FILE (envconfig).

Tools: FENIX_SEARCH_URL (web_search backend), FENIX_FETCH_ALLOW (web_fetch
allowlist), FENIX_PROXY_ADDR / FENIX_PROXY_BASE_URL (process proxy),
FENIX_EXEC_ENV_ALLOW, FENIX_EXEC_MAX_TIMEOUT.
Models (AgentTurn): FENIX_OPENAI_BASE_URL, FENIX_OPENAI_API_KEY (or
OPENAI_API_KEY), FENIX_MODEL, FENIX_SCRIPT_FILE (scripted provider).
Payload encryption: FENIX_CODEC_KEY or FENIX_CODEC_KEY_FILE, and the codec
server's FENIX_CODEC_AUTH_TOKEN, FENIX_CODEC_UI_ORIGIN, FENIX_CODEC_NAMESPACES.
Tracing: OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT.
Approvals inbox (/inbox/): FENIX_INBOX_TOKENS ("name=token,..."; required
when the HTTP address is not loopback; without it the worker logs a link
with a token minted at start), FENIX_INBOX_URL.

Flags:
`

// buildRedactor is the default secret patterns plus a file's, or none.
func buildRedactor(patternsFile string, disabled bool) (*redact.Redactor, error) {
	if disabled {
		return redact.New()
	}
	patterns := append([]redact.Pattern(nil), redact.DefaultPatterns...)
	if patternsFile != "" {
		extra, err := redact.LoadFile(patternsFile)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, extra...)
	}
	return redact.New(patterns...)
}

// envReader reads typed flag defaults from the environment, keeping the
// first malformed value's error.
type envReader struct {
	getenv func(string) string
	err    error
}

func (e *envReader) or(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

func (e *envReader) duration(key string, def time.Duration) time.Duration {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("%s=%q: want a duration such as 24h or 10m", key, v)
	}
	return d
}

func (e *envReader) bytes(key string, def int64) int64 {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if (err != nil || n <= 0) && e.err == nil {
		e.err = fmt.Errorf("%s=%q: want a positive number of bytes", key, v)
	}
	return n
}

func (e *envReader) count(key string, def int) int {
	v := e.getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if (err != nil || n < 1) && e.err == nil {
		e.err = fmt.Errorf("%s=%q: want a whole number, 1 or more", key, v)
	}
	return n
}

// DefaultDataDir is the data directory a worker uses when FENIX_DATA_DIR
// and -data-dir are unset: the XDG base directory spec's place for state.
func DefaultDataDir(getenv func(string) string) string {
	if dir := getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "fenix")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "fenix")
	}
	return filepath.Join(os.TempDir(), "fenix")
}

// defaultInboxURL is the inbox the worker's own HTTP server serves.
func defaultInboxURL(httpAddr string) string {
	if httpAddr == "" || httpAddr == "off" {
		return ""
	}
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/inbox/"
}
