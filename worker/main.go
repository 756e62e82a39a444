// Command worker runs a Fenix worker: it connects to Temporal (configured
// through envconfig: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS, API key,
// profiles), registers Fenix's workflows and activities, and serves the
// shared task queue and this host's pinned queue until SIGINT or SIGTERM;
// SIGHUP reloads the hook settings, the scripts they run and the MCP
// servers' configuration. `worker mcp-login SERVER` signs in to a remote
// MCP server that needs OAuth.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/interceptor"

	"github.com/fenixrt/fenix/approvals/web"
	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/internal/grpcheaders"
	"github.com/fenixrt/fenix/internal/observability"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := Run
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "mcp-login" {
		run, args = runMCPLogin, args[1:]
	}
	if err := run(ctx, args, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "fenix worker:", err)
		os.Exit(1)
	}
}

// Run reads the configuration, connects and serves until ctx is done.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := worker.LoadConfig(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	logger, err := observability.NewLogger(stderr, cfg.Process.LogFormat, cfg.Process.LogLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	metrics, err := observability.NewMetrics(observability.MetricsOptions{Logger: logger})
	if err != nil {
		return err
	}
	defer metrics.Close()
	cfg.Recorder = metrics
	shutdownTracing, tracing, err := observability.SetupTracing(ctx, cfg.Process.Tracing)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer shutdownWithin(5*time.Second, shutdownTracing)

	c, namespace, address, err := dial(ctx, logger, metrics, tracing, cfg.Process)
	if err != nil {
		return err
	}
	defer c.Close()
	cfg.Namespace = namespace
	// Commands and hooks never need the frontend; without client
	// authentication on it, one could approve its own parked call.
	cfg.HostConfig.Unreachable = tools.WithFrontend(cfg.HostConfig.Unreachable, address)

	w, err := worker.New(c, cfg)
	if err != nil {
		return err
	}
	if stats, ok := w.ContextStore().(interface{ Stats() contextstore.Stats }); ok {
		if err := metrics.RegisterContextStore(stats.Stats); err != nil {
			return err
		}
	}
	if err := metrics.RegisterPolicyHeld(w.PolicyHeld); err != nil {
		return err
	}
	ready := &observability.Readiness{}
	inbox, err := inboxHandler(c, namespace, cfg.Process, logger)
	if err != nil {
		return err
	}
	health := &readiness{started: ready, dataDir: cfg.DataDir, frontend: func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}}
	stopOps, err := startOps(cfg.Process, metrics, health, inbox, inboxLinkTo{dir: cfg.DataDir, terminal: isTerminal(stderr)}, logger)
	if err != nil {
		return err
	}
	defer stopOps()

	if err := w.Start(); err != nil {
		return err
	}
	defer reloadHooksOnHangup(ctx, w, logger)()
	ready.MarkReady()
	<-ctx.Done()
	ready.MarkNotReady()
	w.Stop()
	return nil
}

// dial connects to Temporal with envconfig's settings and Fenix's logger,
// metrics, tracing and payload codec; it returns the namespace in use and
// the frontend's address.
func dial(ctx context.Context, logger *slog.Logger, metrics *observability.Metrics, tracing interceptor.ClientInterceptor, process worker.ProcessConfig) (client.Client, string, string, error) {
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return nil, "", "", fmt.Errorf("load Temporal client configuration: %w", err)
	}
	opts.Logger = worker.NewSDKLogger(logger)
	opts.MetricsHandler = metrics.SDKMetricsHandler()
	// Client-level interceptors apply to the workers too.
	opts.Interceptors = append(opts.Interceptors, tracing)
	opts.DataConverter = codec.NewDataConverter(process.Codec)
	if process.GRPCCompression == "none" {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpcheaders.DialOption())
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, "", "", fmt.Errorf("connect to Temporal at %q: %w", displayAddress(opts.HostPort), err)
	}
	return c, opts.Namespace, displayAddress(opts.HostPort), nil
}

// startOps serves /metrics, /healthz, /readyz and, with a codec, /codec/
// on the configured address; the returned func stops it.
func startOps(cfg worker.ProcessConfig, metrics *observability.Metrics, ready *readiness, inbox *web.Handler, link inboxLinkTo, logger *slog.Logger) (func(), error) {
	if cfg.HTTPAddr == "off" {
		return func() {}, nil
	}
	mux := observability.NewOpsMux(observability.OpsConfig{Metrics: metrics.Handler(), Ready: ready.Check})
	if cfg.Codec != nil {
		codecHandler, err := codec.NewHTTPHandler(cfg.Codec, cfg.CodecServer)
		if err != nil {
			return nil, err
		}
		mux.Handle("/codec/", http.StripPrefix("/codec", codecHandler))
	}
	if inbox != nil {
		mux.Handle("/inbox/", http.StripPrefix("/inbox", inbox))
	}
	ops, err := observability.StartOpsServer(cfg.HTTPAddr, mux, logger)
	if err != nil {
		return nil, err
	}
	if inbox != nil {
		logInboxLink(inbox, ops.Addr(), link, logger)
	}
	logger.Info("operational endpoints listening", "addr", ops.Addr(), "paths", "/metrics /healthz /readyz /codec/ /inbox/")
	return func() { shutdownWithin(5*time.Second, ops.Shutdown) }, nil
}

// shutdownWithin gives a shutdown function a bounded context.
func shutdownWithin(d time.Duration, shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = shutdown(ctx)
}

func displayAddress(hostPort string) string {
	if hostPort == "" {
		return client.DefaultHostPort
	}
	return hostPort
}
