// Package observability holds the worker's and starter's operational
// plumbing: Prometheus metrics (the Temporal SDK's and Fenix's own, on one
// registry), OpenTelemetry tracing through Temporal's tracing interceptor,
// the slog logger, and the HTTP mux for /metrics, /healthz and /readyz.
package observability

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// StageDurationBuckets span pure stages (milliseconds) to long tool runs
// (minutes).
var StageDurationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// MetricsOptions configures NewMetrics.
type MetricsOptions struct {
	// ReportInterval is how often the SDK's tally scope flushes into the
	// Prometheus registry (default 1s).
	ReportInterval time.Duration
	// Logger receives SDK metric registration conflicts (default
	// slog.Default()).
	Logger *slog.Logger
	// OmitRuntimeMetrics leaves out the go_* and process_* collectors.
	OmitRuntimeMetrics bool
}

// Metrics is the Prometheus-backed Recorder plus the Temporal SDK's
// metrics handler; both write to one registry served by Handler. SDK
// metric names start with "temporal_", Fenix's with "fenix_", so they
// cannot collide.
type Metrics struct {
	registry   *prometheus.Registry
	handler    http.Handler
	sdkHandler client.MetricsHandler
	sdkScope   io.Closer

	stageDuration       *prometheus.HistogramVec
	stageFailures       *prometheus.CounterVec
	toolCalls           *prometheus.CounterVec
	hookDecisions       *prometheus.CounterVec
	permissionDecisions *prometheus.CounterVec
	modelTokens         *prometheus.CounterVec
}

var _ StageRecorder = (*Metrics)(nil)

// NewMetrics builds the registry, Fenix's collectors and the SDK's tally
// scope. Call Close on shutdown to flush the SDK's last measurements.
func NewMetrics(opts MetricsOptions) (*Metrics, error) {
	if opts.ReportInterval <= 0 {
		opts.ReportInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	reg := prometheus.NewRegistry()
	if !opts.OmitRuntimeMetrics {
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, err
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, err
		}
	}
	m := &Metrics{
		registry: reg,
		stageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fenix_stage_duration_seconds",
			Help:    "Duration of pipeline stages (activities), successful or not.",
			Buckets: StageDurationBuckets,
		}, []string{"stage"}),
		stageFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenix_stage_failures_total",
			Help: "Pipeline stages that returned an error, by error type.",
		}, []string{"stage", "error_type"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenix_tool_calls_total",
			Help: "Tool calls by tool and outcome.",
		}, []string{"tool", "status"}),
		hookDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenix_hook_decisions_total",
			Help: "Aggregated lifecycle hook decisions by event and action kind.",
		}, []string{"event", "kind"}),
		permissionDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenix_permission_decisions_total",
			Help: "Permission requests answered, by decision and decider.",
		}, []string{"decision", "decided_by"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenix_model_tokens_total",
			Help: "Model tokens used, by kind (prompt, completion).",
		}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.stageDuration, m.stageFailures, m.toolCalls, m.hookDecisions, m.permissionDecisions, m.modelTokens} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}

	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})

	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError:  onceLogger(opts.Logger),
	})
	// The naming scope and sanitizer make the SDK's names match the other
	// Temporal SDKs' Prometheus names (…_total, …_seconds).
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:         reporter,
		Separator:              tallyprom.DefaultSeparator,
		SanitizeOptions:        &sdktally.PrometheusSanitizeOptions,
		OmitCardinalityMetrics: true,
	}, opts.ReportInterval)
	m.sdkHandler = sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope))
	m.sdkScope = closer
	return m, nil
}

// onceLogger reports each distinct SDK metric registration conflict once
// instead of panicking (the tally default): a conflicting metric is
// dropped, which must not take the worker down.
func onceLogger(logger *slog.Logger) func(error) {
	var seen sync.Map
	return func(err error) {
		if _, dup := seen.LoadOrStore(err.Error(), struct{}{}); !dup {
			logger.Warn("Temporal SDK metric dropped: it conflicts with an already registered metric", "error", err)
		}
	}
}

// SDKMetricsHandler is for client.Options.MetricsHandler.
func (m *Metrics) SDKMetricsHandler() client.MetricsHandler { return m.sdkHandler }

// Registry is the registry behind Handler, for extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// RegisterPolicyHeld exports fenix_hook_policy_held: 1 while the worker
// runs the policy it accepted before because the files on disk differ,
// for an alert that asks the operator to look.
func (m *Metrics) RegisterPolicyHeld(held func() bool) error {
	return m.registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fenix_hook_policy_held",
		Help: "1 while the worker runs the hook policy accepted before, not the settings, scripts and .mcp.json on disk, which changed in a workspace; SIGHUP or -accept-policy-change adopts them.",
	}, func() float64 {
		if held() {
			return 1
		}
		return 0
	}))
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Close flushes the SDK's pending measurements into the registry and stops
// the flush loop.
func (m *Metrics) Close() error { return m.sdkScope.Close() }

func (m *Metrics) StageDone(stage string, d time.Duration, errType string) {
	stage = orUnknown(stage)
	m.stageDuration.WithLabelValues(stage).Observe(d.Seconds())
	if errType != "" {
		m.stageFailures.WithLabelValues(stage, errType).Inc()
	}
}

func (m *Metrics) ToolCall(tool, status string) {
	m.toolCalls.WithLabelValues(orUnknown(tool), orUnknown(status)).Inc()
}

func (m *Metrics) HookDecision(event, kind string) {
	m.hookDecisions.WithLabelValues(orUnknown(event), orUnknown(kind)).Inc()
}

func (m *Metrics) PermissionDecision(decision, decidedBy string) {
	m.permissionDecisions.WithLabelValues(orUnknown(decision), orUnknown(decidedBy)).Inc()
}

func (m *Metrics) ModelTokens(kind string, n int) {
	if n <= 0 {
		return
	}
	m.modelTokens.WithLabelValues(orUnknown(kind)).Add(float64(n))
}

// orUnknown keeps an empty label value from reading as an absent label.
func orUnknown(v string) string {
	if strings.TrimSpace(v) == "" {
		return "unknown"
	}
	return v
}
