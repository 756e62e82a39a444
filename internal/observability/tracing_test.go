package observability

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// runGreet runs the Greet workflow in the SDK test environment with the
// given worker interceptor.
func runGreet(t *testing.T, ic interceptor.WorkerInterceptor) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{ic}})
	env.RegisterWorkflowWithOptions(greetWorkflow, workflow.RegisterOptions{Name: "Greet"})
	env.RegisterActivity(hello)
	env.ExecuteWorkflow("Greet", "fenix")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	var out string
	if err := env.GetWorkflowResult(&out); err != nil || out != "hello fenix" {
		t.Fatalf("workflow result = %q, %v; want %q", out, err, "hello fenix")
	}
}

// noOTLPEnv keeps a developer's collector settings from leaking into a test.
func noOTLPEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
}

func TestTracingInterceptorRecordsWorkflowAndActivitySpans(t *testing.T) {
	noOTLPEnv(t)
	exporter := tracetest.NewInMemoryExporter()
	shutdown, ic, err := SetupTracing(context.Background(), TracingConfig{
		ServiceName:  ServiceWorker,
		HostID:       "host-a1",
		SpanExporter: exporter,
	})
	if err != nil {
		t.Fatalf("SetupTracing: %v", err)
	}
	runGreet(t, ic)

	spans := exporter.GetSpans()
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	for _, want := range []string{"RunWorkflow:Greet", "StartActivity:hello", "RunActivity:hello"} {
		if !slices.Contains(names, want) {
			t.Errorf("span %q missing; got %v", want, names)
		}
	}
	// All spans of one run share a trace.
	for _, s := range spans[1:] {
		if s.SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
			t.Errorf("span %q is in trace %s, want %s", s.Name, s.SpanContext.TraceID(), spans[0].SpanContext.TraceID())
		}
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Resource.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["service.name"] != ServiceWorker || attrs["host.id"] != "host-a1" {
		t.Errorf("resource service.name=%q host.id=%q, want %q and %q", attrs["service.name"], attrs["host.id"], ServiceWorker, "host-a1")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func TestTracingOffStillReturnsInterceptor(t *testing.T) {
	noOTLPEnv(t)
	for _, exporter := range []string{ExporterAuto, ExporterNone} {
		shutdown, ic, err := SetupTracing(context.Background(), TracingConfig{ServiceName: ServiceStarter, Exporter: exporter})
		if err != nil {
			t.Fatalf("SetupTracing(%q): %v", exporter, err)
		}
		if ic == nil {
			t.Fatalf("SetupTracing(%q) returned a nil interceptor", exporter)
		}
		runGreet(t, ic)
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
}

func TestTracingStdoutExporter(t *testing.T) {
	noOTLPEnv(t)
	var buf bytes.Buffer
	shutdown, ic, err := SetupTracing(context.Background(), TracingConfig{ServiceName: ServiceWorker, Exporter: "stdout", Stdout: &buf})
	if err != nil {
		t.Fatalf("SetupTracing: %v", err)
	}
	runGreet(t, ic)
	if err := shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if !strings.Contains(buf.String(), `"RunActivity:hello"`) {
		t.Errorf("stdout exporter did not print the activity span:\n%.2000s", buf.String())
	}
}

func TestTracingOTLPExporterPostsToEndpoint(t *testing.T) {
	noOTLPEnv(t)
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()

	// Auto mode picks OTLP because an endpoint is configured.
	shutdown, ic, err := SetupTracing(context.Background(), TracingConfig{ServiceName: ServiceWorker, Endpoint: collector.URL})
	if err != nil {
		t.Fatalf("SetupTracing: %v", err)
	}
	runGreet(t, ic)
	// Shutdown flushes the batch processor.
	if err := shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if posts.Load() == 0 {
		t.Error("no spans were posted to the collector's /v1/traces")
	}
}

func TestTracingOTLPFromEnv(t *testing.T) {
	noOTLPEnv(t)
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)

	shutdown, ic, err := SetupTracing(context.Background(), TracingConfigFromEnv(os.Getenv, ServiceWorker, "h1"))
	if err != nil {
		t.Fatalf("SetupTracing: %v", err)
	}
	runGreet(t, ic)
	if err := shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if posts.Load() == 0 {
		t.Error("OTEL_EXPORTER_OTLP_ENDPOINT did not select the OTLP exporter")
	}
}

func TestTracingConfigErrors(t *testing.T) {
	noOTLPEnv(t)
	tests := []struct {
		cfg  TracingConfig
		want string
	}{
		{TracingConfig{Exporter: "jaeger"}, `trace exporter "jaeger": use otlp, stdout or none`},
		{TracingConfig{Exporter: "otlp", Endpoint: "localhost:4318"}, `OTLP endpoint "localhost:4318": want an http:// or https:// URL`},
	}
	for _, tt := range tests {
		_, _, err := SetupTracing(context.Background(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SetupTracing(%+v) error = %v, want it to contain %q", tt.cfg, err, tt.want)
		}
	}
}
