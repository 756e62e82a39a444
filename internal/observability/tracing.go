package observability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Service names for TracingConfig.ServiceName.
const (
	ServiceWorker  = "fenix-worker"
	ServiceStarter = "fenix-starter"
)

// Trace exporter choices for TracingConfig.Exporter (the values of the
// standard OTEL_TRACES_EXPORTER variable; "console" is accepted for stdout).
const (
	ExporterAuto   = ""
	ExporterOTLP   = "otlp"
	ExporterStdout = "stdout"
	ExporterNone   = "none"
)

// TracingConfig selects where spans go.
type TracingConfig struct {
	// ServiceName is the service.name resource attribute (ServiceWorker or
	// ServiceStarter); OTEL_SERVICE_NAME overrides it.
	ServiceName string
	// HostID is the host.id resource attribute (the worker's host ID).
	HostID string
	// Exporter is otlp, stdout, none, or "" for auto: OTLP when an endpoint
	// is configured (Endpoint, OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), else none.
	Exporter string
	// Endpoint is an OTLP/HTTP collector base URL such as
	// http://localhost:4318 ("/v1/traces" is appended unless present). It
	// overrides the OTEL_EXPORTER_OTLP_* endpoint variables; headers, TLS
	// and timeouts still come from those variables.
	Endpoint string
	// Stdout receives pretty-printed spans for the stdout exporter
	// (default os.Stderr, so they do not mix with a command's output).
	Stdout io.Writer
	// OTLPEndpointSet says OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set, so
	// the "auto" exporter exports (the OTel SDK reads the endpoint itself).
	OTLPEndpointSet bool
	// SpanExporter, when set, receives every span synchronously and
	// overrides Exporter; tests use an in-memory exporter.
	SpanExporter sdktrace.SpanExporter
}

// TracingConfigFromEnv reads OTEL_TRACES_EXPORTER; endpoints, headers and
// the sampler (OTEL_TRACES_SAMPLER) are read by the OTel SDK itself.
func TracingConfigFromEnv(getenv func(string) string, serviceName, hostID string) TracingConfig {
	return TracingConfig{ServiceName: serviceName, HostID: hostID, Exporter: getenv("OTEL_TRACES_EXPORTER"),
		OTLPEndpointSet: getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""}
}

// SetupTracing builds a TracerProvider and Temporal's OpenTelemetry tracing
// interceptor for client.Options.Interceptors (client-side spans for
// starts, signals and queries; worker-side spans for workflows and
// activities).
//
// With no exporter the interceptor is still returned, backed by a no-op
// provider: it records nothing but carries an incoming trace context from
// a traced starter through workflows into activities, so wiring it
// unconditionally keeps traces connected across an untraced worker.
//
// Activity code can start child spans without a global provider through
// trace.SpanFromContext(ctx).TracerProvider(). shutdown flushes buffered
// spans; call it before exit.
func SetupTracing(ctx context.Context, cfg TracingConfig) (shutdown func(context.Context) error, tracingInterceptor interceptor.Interceptor, err error) {
	exporter, err := newSpanExporter(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	var provider trace.TracerProvider
	shutdown = func(context.Context) error { return nil }
	if exporter == nil {
		provider = noop.NewTracerProvider()
	} else {
		res, err := newResource(ctx, cfg)
		if err != nil {
			_ = exporter.Shutdown(ctx)
			return nil, nil, err
		}
		processor := sdktrace.WithBatcher(exporter)
		if cfg.SpanExporter != nil || cfg.Exporter == ExporterStdout || cfg.Exporter == "console" {
			// Debugging exporters should show a span as soon as it ends.
			processor = sdktrace.WithSyncer(exporter)
		}
		tp := sdktrace.NewTracerProvider(processor, sdktrace.WithResource(res))
		provider = tp
		shutdown = tp.Shutdown
	}
	tracingInterceptor, err = temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: provider.Tracer("github.com/fenixrt/fenix"),
	})
	if err != nil {
		_ = shutdown(ctx)
		return nil, nil, fmt.Errorf("create Temporal tracing interceptor: %w", err)
	}
	return shutdown, tracingInterceptor, nil
}

// newSpanExporter returns nil when tracing is off.
func newSpanExporter(ctx context.Context, cfg TracingConfig) (sdktrace.SpanExporter, error) {
	if cfg.SpanExporter != nil {
		return cfg.SpanExporter, nil
	}
	switch strings.ToLower(strings.TrimSpace(cfg.Exporter)) {
	case ExporterAuto:
		if cfg.Endpoint == "" && !cfg.OTLPEndpointSet {
			return nil, nil
		}
		return newOTLPExporter(ctx, cfg.Endpoint)
	case ExporterOTLP:
		return newOTLPExporter(ctx, cfg.Endpoint)
	case ExporterStdout, "console":
		w := cfg.Stdout
		if w == nil {
			w = os.Stderr
		}
		return stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
	case ExporterNone:
		return nil, nil
	default:
		return nil, fmt.Errorf("trace exporter %q: use otlp, stdout or none (OTEL_TRACES_EXPORTER)", cfg.Exporter)
	}
}

func newOTLPExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	var opts []otlptracehttp.Option
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL such as http://localhost:4318", endpoint)
		}
		if !strings.HasSuffix(u.Path, "/v1/traces") {
			u = u.JoinPath("v1", "traces")
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	// New does not connect; export failures surface at export time.
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("create OTLP/HTTP trace exporter: %w", err)
	}
	return exp, nil
}

func newResource(ctx context.Context, cfg TracingConfig) (*resource.Resource, error) {
	attrs := []resource.Option{resource.WithSchemaURL(semconv.SchemaURL)}
	if cfg.ServiceName != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)))
	}
	if cfg.HostID != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.HostID(cfg.HostID)))
	}
	// Later options win: the environment (OTEL_SERVICE_NAME,
	// OTEL_RESOURCE_ATTRIBUTES) overrides the defaults above.
	attrs = append(attrs, resource.WithHost(), resource.WithTelemetrySDK(), resource.WithFromEnv())
	res, err := resource.New(ctx, attrs...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("build trace resource: %w", err)
	}
	return res, nil
}
