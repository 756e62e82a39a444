// Command worker runs a Fenix worker: it connects to Temporal (configured
// through envconfig: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS, API key,
// profiles), registers Fenix's workflows and activities, and serves the
// shared task queue and this host's pinned queue until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/fenixrt/fenix/agent/llm/providers"
	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/internal/observability"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/redact"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
	"github.com/fenixrt/fenix/workspace"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "fenix worker:", err)
		os.Exit(1)
	}
}

// Run parses args, connects and serves until ctx is done.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	taskQueue := fs.String("task-queue", envOr("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "shared task queue (env FENIX_TASK_QUEUE)")
	dataDir := fs.String("data-dir", envOr("FENIX_DATA_DIR", defaultDataDir()), "directory for the context store, host ID and host-local state (env FENIX_DATA_DIR)")
	workspaceRoot := fs.String("workspace-root", os.Getenv("FENIX_WORKSPACE_ROOT"), "default workspace root for assignments without workspace_root (env FENIX_WORKSPACE_ROOT)")
	workspaceBases := fs.String("workspace-bases", os.Getenv("FENIX_WORKSPACE_BASES"), "directories (separated by \":\") every assignment's workspace_root must resolve inside, symlinks followed (env FENIX_WORKSPACE_BASES; default: the workspace root)")
	hostID := fs.String("host-id", os.Getenv("FENIX_HOST_ID"), "override the persisted host ID (env FENIX_HOST_ID)")
	skillsDir := fs.String("skills-dir", os.Getenv("FENIX_SKILLS_DIR"), "directory with system/, curated/ and installed/ skill roots (env FENIX_SKILLS_DIR; default <data-dir>/skills)")
	profilesDir := fs.String("profiles-dir", os.Getenv("FENIX_PROFILES_DIR"), "directory of agent profiles with AGENT.md, SOUL.md, USER.md, MEMORY.md, OPERATOR.md (env FENIX_PROFILES_DIR)")
	hooksFile := fs.String("hooks-file", os.Getenv("FENIX_HOOKS_FILE"), "hook settings in Claude Code's format: settings files, project directories (holding .claude/) or plugin directories (holding hooks/hooks.json), \":\"-separated, loaded in order (env FENIX_HOOKS_FILE)")
	mcpConfig := fs.String("mcp-config", os.Getenv("FENIX_MCP_CONFIG"), "MCP server configurations in Claude Code's .mcp.json format, \":\"-separated; project directories given to -hooks-file contribute their .mcp.json too (env FENIX_MCP_CONFIG)")
	hooksHTTPAllow := fs.String("hooks-http-allow", os.Getenv("FENIX_HOOKS_HTTP_ALLOW"), "private or loopback destinations http hooks may reach: CIDRs, IPs, host names (env FENIX_HOOKS_HTTP_ALLOW)")
	summaryModel := fs.String("summary-model", os.Getenv("FENIX_SUMMARY_MODEL"), "model for summary compaction with summarizer \"model\" (env FENIX_SUMMARY_MODEL)")
	redactPatterns := fs.String("redact-patterns", os.Getenv("FENIX_REDACT_PATTERNS"), "JSON file of extra secret patterns [{\"name\",\"regex\",\"keep\",\"hints\"}] redacted from tool output (env FENIX_REDACT_PATTERNS)")
	noRedact := fs.Bool("no-redact", os.Getenv("FENIX_REDACT") == "off", "do not redact secrets from tool output (env FENIX_REDACT=off)")
	httpAddr := fs.String("http-addr", envOr("FENIX_HTTP_ADDR", "127.0.0.1:9090"), "listen address of /metrics, /healthz, /readyz and the codec server /codec/; \"off\" disables it (env FENIX_HTTP_ADDR)")
	contextStore := fs.String("context-store", os.Getenv("FENIX_CONTEXT_STORE"), "context store for large message lists: postgres://... (shared by every worker, no shared volume needed), or a directory (env FENIX_CONTEXT_STORE; default <data-dir>/contexts)")
	contextMax, err := envInt64("FENIX_CONTEXT_MAX_BYTES", contextstore.DefaultMaxBlobBytes)
	if err != nil {
		return err
	}
	contextMaxBytes := fs.Int64("context-max-bytes", contextMax, "largest message list the shared context store accepts (env FENIX_CONTEXT_MAX_BYTES)")
	retention, err := envDuration("FENIX_CONTEXT_RETENTION", worker.DefaultContextRetention)
	if err != nil {
		return err
	}
	contextRetention := fs.Duration("context-retention", retention, "the shared context store keeps what was stored or read within this window, whatever its runs' state (env FENIX_CONTEXT_RETENTION)")
	gcInterval, err := envDuration("FENIX_CONTEXT_GC_INTERVAL", worker.DefaultContextGCInterval)
	if err != nil {
		return err
	}
	contextGCInterval := fs.Duration("context-gc-interval", gcInterval, "how often this worker collects the shared context store's blobs no open run references; negative disables (env FENIX_CONTEXT_GC_INTERVAL)")
	auditDSN := fs.String("audit-dsn", os.Getenv("FENIX_AUDIT_DSN"), "audit store: postgres://... or a SQLite file (env FENIX_AUDIT_DSN; default <data-dir>/audit.db)")
	logFormat := fs.String("log-format", envOr("FENIX_LOG_FORMAT", "json"), "log format: json or text (env FENIX_LOG_FORMAT)")
	logLevel := fs.String("log-level", envOr("FENIX_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env FENIX_LOG_LEVEL)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: worker [flags]

Runs a Fenix worker until interrupted. Temporal connection settings come from
TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_* and
TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE (envconfig).

Tools: FENIX_SEARCH_URL (web_search backend), FENIX_FETCH_ALLOW (web_fetch
allowlist), FENIX_PROXY_ADDR / FENIX_PROXY_BASE_URL (process proxy),
FENIX_EXEC_ENV_ALLOW, FENIX_EXEC_MAX_TIMEOUT.
Models (AgentTurn): FENIX_OPENAI_BASE_URL, FENIX_OPENAI_API_KEY (or
OPENAI_API_KEY), FENIX_MODEL, FENIX_SCRIPT_FILE (scripted provider).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := observability.NewLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	hostCfg, err := tools.HostConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	model, err := providers.FromEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("model provider configuration: %w", err)
	}
	redactor, err := buildRedactor(*redactPatterns, *noRedact)
	if err != nil {
		return err
	}
	metrics, err := observability.NewMetrics(observability.MetricsOptions{Logger: logger})
	if err != nil {
		return err
	}
	defer metrics.Close()
	shutdownTracing, tracing, err := observability.SetupTracing(ctx, observability.TracingConfigFromEnv(observability.ServiceWorker, *hostID))
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTracing(c)
	}()
	payloadCodec, err := codec.FromEnv()
	if err != nil {
		return err
	}

	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return fmt.Errorf("load Temporal client configuration: %w", err)
	}
	opts.Logger = worker.NewSDKLogger(logger)
	opts.MetricsHandler = metrics.SDKMetricsHandler()
	// Client-level interceptors apply to the workers too.
	opts.Interceptors = append(opts.Interceptors, tracing)
	opts.DataConverter = codec.NewDataConverter(payloadCodec)
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %q: %w", displayAddress(opts.HostPort), err)
	}
	defer c.Close()

	w, err := worker.New(c, worker.Config{
		TaskQueue:            *taskQueue,
		DataDir:              *dataDir,
		DefaultWorkspaceRoot: *workspaceRoot,
		WorkspaceBases:       workspace.ParseList(*workspaceBases),
		Contexts: worker.ContextStoreConfig{
			Store: *contextStore, MaxBlobBytes: *contextMaxBytes, Retention: *contextRetention, GCInterval: *contextGCInterval,
		},
		HostID:        *hostID,
		Logger:        logger,
		SkillsDir:     *skillsDir,
		ProfilesDir:   *profilesDir,
		HooksFile:     *hooksFile,
		HookHTTPAllow: *hooksHTTPAllow,
		MCPConfig:     *mcpConfig,
		AuditDSN:      *auditDSN,
		HostConfig:    hostCfg,
		Model:         model,
		SummaryModel:  *summaryModel,
		Recorder:      metrics,
		Namespace:     opts.Namespace,
		Redactor:      redactor,
	})
	if err != nil {
		return err
	}

	if stats, ok := w.ContextStore().(interface{ Stats() contextstore.Stats }); ok {
		if err := metrics.RegisterContextStore(stats.Stats); err != nil {
			return err
		}
	}

	ready := &observability.Readiness{}
	mux := observability.NewOpsMux(observability.OpsConfig{Metrics: metrics.Handler(), Ready: ready.Check})
	if payloadCodec != nil {
		serverCfg, err := codec.ServerConfigFromEnv()
		if err != nil {
			return err
		}
		codecHandler, err := codec.NewHTTPHandler(payloadCodec, serverCfg)
		if err != nil {
			return err
		}
		mux.Handle("/codec/", http.StripPrefix("/codec", codecHandler))
	}
	var ops *observability.OpsServer
	if *httpAddr != "off" {
		if ops, err = observability.StartOpsServer(*httpAddr, mux, logger); err != nil {
			return err
		}
		defer func() {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = ops.Shutdown(c)
		}()
		logger.Info("operational endpoints listening", "addr", ops.Addr(), "paths", "/metrics /healthz /readyz /codec/")
	}

	if err := w.Start(); err != nil {
		return err
	}
	ready.MarkReady()
	<-ctx.Done()
	ready.MarkNotReady()
	w.Stop()
	return nil
}

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

func envDuration(key string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want a duration such as 24h or 10m", key, v)
	}
	return d, nil
}

func envInt64(key string, def int64) (int64, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of bytes", key, v)
	}
	return n, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func defaultDataDir() string {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "fenix")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "fenix")
	}
	return filepath.Join(os.TempDir(), "fenix")
}

func displayAddress(hostPort string) string {
	if hostPort == "" {
		return client.DefaultHostPort
	}
	return hostPort
}
