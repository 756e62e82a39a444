package observability

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func newTestMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := NewMetrics(MetricsOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// scrape fetches the handler's output and parses it strictly, which fails on
// duplicate families, bad names or malformed lines.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d: %s", rec.Code, rec.Body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("/metrics is not valid exposition format: %v\n%s", err, rec.Body)
	}
	return families
}

// sample finds the metric of family name whose labels include want.
func sample(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fam, ok := families[name]
	if !ok {
		t.Fatalf("metric family %q missing; have %d families", name, len(families))
	}
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("metric %s%v missing", name, want)
	return nil
}

func TestMetricsServesSDKAndFenixMetrics(t *testing.T) {
	m := newTestMetrics(t)

	sdk := m.SDKMetricsHandler().WithTags(map[string]string{"namespace": "default", "task_queue": "fenix"})
	sdk.Counter("temporal_request").Inc(3)
	sdk.Gauge("temporal_worker_task_slots_available").Update(7)
	sdk.Timer("temporal_activity_execution_latency").Record(250 * time.Millisecond)

	m.StageDone("execute_tool", 1500*time.Millisecond, "")
	m.StageDone("execute_tool", 20*time.Millisecond, "RuntimeError")
	m.ToolCall("exec_command", "ok")
	m.ToolCall("exec_command", "error")
	m.HookDecision("PreToolUse", "block")
	m.PermissionDecision("allow", "user")
	m.ModelTokens("prompt", 120)
	m.ModelTokens("completion", 30)
	m.ModelTokens("completion", 0)

	// Close flushes the tally scope; without it the SDK metrics appear at
	// the next report interval.
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	families := scrape(t, m.Handler())

	if got := sample(t, families, "temporal_request_total", map[string]string{"namespace": "default", "task_queue": "fenix"}).GetCounter().GetValue(); got != 3 {
		t.Errorf("temporal_request_total = %v, want 3", got)
	}
	if got := sample(t, families, "temporal_worker_task_slots_available", nil).GetGauge().GetValue(); got != 7 {
		t.Errorf("temporal_worker_task_slots_available = %v, want 7", got)
	}
	if got := sample(t, families, "temporal_activity_execution_latency_seconds", nil).GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("temporal_activity_execution_latency_seconds count = %v, want 1", got)
	}

	hist := sample(t, families, "fenix_stage_duration_seconds", map[string]string{"stage": "execute_tool"}).GetHistogram()
	if hist.GetSampleCount() != 2 || hist.GetSampleSum() < 1.5 {
		t.Errorf("fenix_stage_duration_seconds{stage=execute_tool} count=%d sum=%v, want 2 and >= 1.5", hist.GetSampleCount(), hist.GetSampleSum())
	}
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"fenix_stage_failures_total", map[string]string{"stage": "execute_tool", "error_type": "RuntimeError"}, 1},
		{"fenix_tool_calls_total", map[string]string{"tool": "exec_command", "status": "ok"}, 1},
		{"fenix_tool_calls_total", map[string]string{"tool": "exec_command", "status": "error"}, 1},
		{"fenix_hook_decisions_total", map[string]string{"event": "PreToolUse", "kind": "block"}, 1},
		{"fenix_permission_decisions_total", map[string]string{"decision": "allow", "decided_by": "user"}, 1},
		{"fenix_model_tokens_total", map[string]string{"kind": "prompt"}, 120},
		{"fenix_model_tokens_total", map[string]string{"kind": "completion"}, 30},
	}
	for _, c := range counters {
		if got := sample(t, families, c.name, c.labels).GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(families["fenix_stage_failures_total"].GetMetric()); n != 1 {
		t.Errorf("fenix_stage_failures_total has %d series, want 1 (successes must not count)", n)
	}
	if _, ok := families["go_goroutines"]; !ok {
		t.Error("runtime metrics (go_goroutines) missing")
	}
}

func TestMetricsFromWorkflowTestSuite(t *testing.T) {
	m := newTestMetrics(t)
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	suite.SetMetricsHandler(m.SDKMetricsHandler())
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(greetWorkflow, workflow.RegisterOptions{Name: "Greet"})
	env.RegisterActivity(hello)
	env.ExecuteWorkflow("Greet", "fenix")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	families := scrape(t, m.Handler())
	if got := sample(t, families, "greet_started_total", nil).GetCounter().GetValue(); got != 1 {
		t.Errorf("greet_started_total = %v, want 1", got)
	}
	if got := sample(t, families, "hello_calls_total", map[string]string{"activity_type": "hello"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("hello_calls_total{activity_type=hello} = %v, want 1", got)
	}
}

func TestMetricsEmptyLabelsReadAsUnknown(t *testing.T) {
	m := newTestMetrics(t)
	m.ToolCall("", "")
	families := scrape(t, m.Handler())
	sample(t, families, "fenix_tool_calls_total", map[string]string{"tool": "unknown", "status": "unknown"})
}

func greetWorkflow(ctx workflow.Context, name string) (string, error) {
	workflow.GetMetricsHandler(ctx).Counter("greet_started").Inc(1)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out string
	err := workflow.ExecuteActivity(ctx, hello, name).Get(ctx, &out)
	return out, err
}

func hello(ctx context.Context, name string) (string, error) {
	activity.GetMetricsHandler(ctx).Counter("hello_calls").Inc(1)
	return "hello " + name, nil
}

// fenix_hook_policy_held follows the worker's state at each scrape.
func TestPolicyHeldGauge(t *testing.T) {
	m := newTestMetrics(t)
	var held bool
	if err := m.RegisterPolicyHeld(func() bool { return held }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []bool{false, true, false} {
		held = want
		got := sample(t, scrape(t, m.Handler()), "fenix_hook_policy_held", nil).GetGauge().GetValue()
		if (got == 1) != want {
			t.Errorf("held %v: gauge %v", want, got)
		}
	}
}
