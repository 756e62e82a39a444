package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/testenv"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
)

const (
	defaultChromium = "/usr/bin/chromium"
	chromiumEnv     = "FENIX_CHROMIUM"
	artifactsEnv    = "FENIX_WEBUI_ARTIFACTS"

	// browserStep bounds one step in the browser: load the SPA, let it
	// fetch from the UI server, render, and show what the step waits for.
	browserStep = 90 * time.Second

	// conversationAttr is the search attribute Fenix sets from the
	// assignment's conversation_id.
	conversationAttr = "ConversationId"
)

// stages are the activities of ExecuteAssignment's tool flow, in order.
// The review runs first since fenix-shape 5 (it names the hook stages to
// run); with nothing to compact PrepareTurn answers for CompactContext
// since fenix-shape 7. Since fenix-shape 8 the first two run side by
// side, and the history records their markers in the order they finished:
// besideReview says which stages may come in either order.
var stages = []string{"ReviewToolCall", "PrepareTurn", "ExecuteTool", "ProjectToolResult", "FinalizeOutput"}

// besideReview is how many of the first stages run together.
const besideReview = 2

// toolSummary is the activity Summary ExecuteTool carries for the calculator.
const toolSummary = "ExecuteTool: calculator"

// TestWebUIShowsAssignment runs examples/calculator.json on a dev server
// and checks, in headless Chromium, that the Web UI lists the completed
// ExecuteAssignment run, that its event history and timeline show every
// stage activity by name with its Summary, and that filtering the list by
// the ConversationId search attribute keeps only that run.
func TestWebUIShowsAssignment(t *testing.T) {
	if testing.Short() {
		t.Skip("webui: skipped in -short mode (needs the Temporal dev server with its Web UI, and Chromium)")
	}
	chromium := chromiumPath(t)
	began := time.Now()

	srv, queue := startServerAndWorker(t)
	t.Logf("dev server %s, Web UI %s, worker on %q (%s)", srv.HostPort, srv.UIURL, queue, time.Since(began).Round(time.Millisecond))

	// The run under test, and a second one in another conversation so the
	// filter has something to leave out.
	target := runCalculator(t, srv, queue, "webui-calculator", "conv-webui")
	other := runCalculator(t, srv, queue, "webui-calculator-other", "conv-webui-other")
	events, historyLen := scheduledActivities(t, srv, target)
	requireStages(t, events)
	filterable := hasSearchAttribute(t, srv, target, conversationAttr)
	waitVisibility(t, srv, `ExecutionStatus="Completed"`, 2)
	if filterable {
		waitVisibility(t, srv, fmt.Sprintf(`%s=%q`, conversationAttr, target.conversation), 1)
	}
	t.Logf("assignments completed (%s)", time.Since(began).Round(time.Millisecond))

	b := startBrowser(t, chromium)
	ui := strings.TrimRight(srv.UIURL, "/") + "/namespaces/" + url.PathEscape(srv.Namespace) + "/workflows"

	// The workflow list shows the completed ExecuteAssignment run; open it
	// from there, as a user would.
	b.step("open the workflow list", chromedp.Navigate(ui))
	row := pollValue[string](b, "find the run in the workflow list", fmt.Sprintf(`(() => {
		const a = document.querySelector(%q);
		const row = a && a.closest("tr");
		return row ? row.innerText : false;
	})()`, target.linkSelector()))
	b.step("wait for the other run in the list", chromedp.WaitVisible(chromedp.CSS(other.linkSelector())))
	b.screenshot("workflows.png")
	for _, want := range []string{target.id, "Completed", workflows.ExecuteAssignmentWorkflow} {
		require.Contains(t, row, want, "workflow list row of %s", target.id)
	}
	b.step("open the run", chromedp.Click(chromedp.CSS(target.linkSelector())))
	b.step("wait for the run page", chromedp.WaitVisible(chromedp.CSS(`[data-testid="workflow-id-heading"]`)))
	heading := pollValue[string](b, "read the run heading", `(() => {
		const h = document.querySelector('[data-testid="workflow-id-heading"]');
		return h && h.innerText.trim() ? h.innerText : false;
	})()`)
	require.Contains(t, heading, target.id)
	location := pollValue[string](b, "read the run URL", `location.pathname`)
	require.Contains(t, location, "/workflows/"+target.id+"/"+target.runID)

	// The event history: wait until it has one row per history event.
	rows := pollValue[[]eventRow](b, "wait for the full event history", fmt.Sprintf(`(() => {
		const rows = [...document.querySelectorAll('[data-testid="event-summary-row"]')];
		if (rows.length < %d) return false;
		return rows.map(r => {
			const cell = r.querySelector("td");
			return {id: cell ? cell.innerText.trim() : "", text: r.innerText};
		});
	})()`, historyLen))

	// The timeline labels each regular activity "<type> • <summary>" and
	// each local activity by its type; the event rows below show both.
	labels := pollValue[[]string](b, "wait for the timeline", fmt.Sprintf(`(() => {
		const labels = [...document.querySelectorAll("svg text")].map(t => t.textContent.trim()).filter(Boolean);
		const want = %s;
		return want.every(w => labels.some(l => l.includes(w))) ? labels : false;
	})()`, jsStrings(stages)))
	t.Logf("timeline labels: %q", labels)
	b.screenshot("history.png")

	// Every stage of the history, regular or local, has its row, by event
	// ID, with the activity type and the Summary.
	byID := map[string]string{}
	for _, r := range rows {
		byID[r.ID] = r.Text
	}
	for _, e := range events {
		text, ok := byID[strconv.FormatInt(e.eventID, 10)]
		require.True(t, ok, "event history has no row for event %d (%s); rows: %v", e.eventID, e.activityType, rowIDs(rows))
		require.Contains(t, text, e.activityType, "event %d row", e.eventID)
		if e.summary != "" {
			require.Contains(t, text, e.summary, "event %d row shows the activity Summary", e.eventID)
		}
	}
	require.True(t, anyContains(byIDValues(byID), toolSummary), "no event row shows the Summary %q", toolSummary)
	t.Logf("event history and timeline show %d activities, including %v (%s)", len(events), stages, time.Since(began).Round(time.Millisecond))

	// The search attribute filter, as the UI encodes it in the list URL.
	if !filterable {
		t.Logf("run %s has no %s search attribute; skipping the filter check", target.id, conversationAttr)
		return
	}
	query := fmt.Sprintf(`%s=%q`, conversationAttr, target.conversation)
	b.step("open the filtered workflow list", chromedp.Navigate(ui+"?query="+url.QueryEscape(query)))
	b.step("wait for the run in the filtered list", chromedp.WaitVisible(chromedp.CSS(target.linkSelector())))
	filtered := pollValue[string](b, "wait for the filter to apply", fmt.Sprintf(`(() => {
		const count = document.querySelector('[data-testid="workflow-count"]');
		if (!count || count.innerText.trim() !== "1" || document.querySelector(%q)) return false;
		return document.body.innerText;
	})()`, other.linkSelector()))
	b.screenshot("filtered.png")
	require.Contains(t, filtered, conversationAttr, "the filter bar shows the search attribute")
	require.Contains(t, filtered, target.conversation, "the filter bar shows the filter value")
	t.Logf("filter %s keeps %s and drops %s (%s)", query, target.id, other.id, time.Since(began).Round(time.Millisecond))
}

// chromiumPath returns the browser binary, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := defaultChromium
	if p := os.Getenv(chromiumEnv); p != "" {
		path = p
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Skipf("chromium not found at /usr/bin/chromium (or $FENIX_CHROMIUM); install Debian's chromium package (%v)", err)
	}
	return path
}

// startServerAndWorker starts a dev server with the Web UI and an
// in-process worker on its own task queue.
func startServerAndWorker(t *testing.T) (*devserver.Server, string) {
	srv, w := startServerAndWorkerWith(t)
	return srv, w.queue
}

// testWorker is an in-process worker and its queue.
type testWorker struct {
	*worker.Worker
	queue string
}

// startServerAndWorkerWith is startServerAndWorker with Go hooks.
func startServerAndWorkerWith(t *testing.T, agentHooks ...hooks.AgentHook) (*devserver.Server, testWorker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cliPath, err := devserver.CLIPath(ctx, true, os.Stderr)
	require.NoError(t, err)
	srv, err := devserver.Start(ctx, devserver.Options{CLIPath: cliPath, EnableUI: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	uiURL, err := url.Parse(srv.UIURL)
	require.NoError(t, err)
	require.NoError(t, devserver.WaitReachable(ctx, uiURL.Host))

	queue := fmt.Sprintf("fenix-webui-%d", os.Getpid())
	ws := t.TempDir()
	w, err := worker.New(srv.Client(), worker.Config{
		TaskQueue:            queue,
		DataDir:              t.TempDir(),
		DefaultWorkspaceRoot: ws,
		Namespace:            srv.Namespace,
		Hooks:                agentHooks,
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return srv, testWorker{Worker: w, queue: queue}
}

// run is a completed assignment.
type run struct {
	id, runID, conversation string
}

// linkSelector matches the run's links in the workflow list.
func (r run) linkSelector() string {
	return fmt.Sprintf(`a[href*="/workflows/%s/%s"]`, r.id, r.runID)
}

// runCalculator runs examples/calculator.json in the given conversation
// and waits for it to complete.
func runCalculator(t *testing.T, srv *devserver.Server, queue, id, conversation string) run {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "calculator.json"))
	require.NoError(t, err)
	var a map[string]any
	require.NoError(t, json.Unmarshal(raw, &a))
	a["conversation_id"] = conversation
	input, err := json.Marshal(a)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wr, err := srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 2 * time.Minute,
	}, workflows.ExecuteAssignmentWorkflow, json.RawMessage(input))
	require.NoError(t, err)
	var res contract.Result
	require.NoError(t, wr.Get(ctx, &res))
	require.Equal(t, "completed", res.Status, "result of %s: %+v", id, res.Error)
	return run{id: id, runID: wr.GetRunID(), conversation: conversation}
}

// activity is an ActivityTaskScheduled event of the history.
type activity struct {
	eventID      int64
	activityType string
	summary      string
	// local is a local activity's marker.
	local bool
}

// scheduledActivities reads the run's stage activities (scheduled
// activities and local-activity markers) and its number of events from
// history, the ground truth the UI must show.
func scheduledActivities(t *testing.T, srv *devserver.Server, r run) ([]activity, int) {
	t.Helper()
	var out []activity
	n := 0
	iter := srv.Client().GetWorkflowHistory(context.Background(), r.id, r.runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		n++
		var a activity
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			// Stages run as local activities by default: a marker whose
			// details name the activity type, with the Summary in the
			// event's user metadata.
			m := e.GetMarkerRecordedEventAttributes()
			var marker struct{ ActivityType string }
			data := m.GetDetails()["data"].GetPayloads()
			if m.GetMarkerName() != "LocalActivity" || len(data) == 0 || json.Unmarshal(data[0].GetData(), &marker) != nil {
				continue
			}
			a = activity{eventID: e.GetEventId(), activityType: marker.ActivityType, local: true}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a = activity{eventID: e.GetEventId(), activityType: e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()}
		default:
			continue
		}
		if p := e.GetUserMetadata().GetSummary(); p != nil {
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &a.summary))
		}
		out = append(out, a)
	}
	return out, n
}

// requireStages checks the history has the tool flow's stages, in order
// (the first besideReview of them in any order among themselves), with
// ExecuteTool's Summary.
func requireStages(t *testing.T, events []activity) {
	t.Helper()
	first := map[string]int{}
	for i, e := range events {
		if _, seen := first[e.activityType]; !seen {
			first[e.activityType] = i
		}
		if e.activityType == "ExecuteTool" {
			require.Equal(t, toolSummary, e.summary, "ExecuteTool's Summary in history")
		}
	}
	last := -1
	for i, stage := range stages {
		at, ok := first[stage]
		require.True(t, ok, "history has the stage %s; got %+v", stage, events)
		if i < besideReview {
			last = max(last, at) // the side-by-side stages, in either order
			continue
		}
		require.Greater(t, at, last, "history has the stages %v in order; got %+v", stages, events)
		last = at
	}
}

// hasSearchAttribute reports whether the run carries the search attribute.
func hasSearchAttribute(t *testing.T, srv *devserver.Server, r run, name string) bool {
	t.Helper()
	desc, err := srv.Client().DescribeWorkflow(context.Background(), r.id, r.runID)
	require.NoError(t, err)
	_, ok := desc.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[name]
	return ok
}

// waitVisibility waits until the visibility store, which the UI's list
// reads, counts n runs for the query.
func waitVisibility(t *testing.T, srv *devserver.Server, query string, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := srv.Client().CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Namespace: srv.Namespace, Query: query})
		if err == nil && resp.GetCount() == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("visibility query %s: want %d runs, got %d (error: %v)", query, n, resp.GetCount(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// browser is a headless Chromium tab with the test's failure reporting.
type browser struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	log       *lockedBuffer
}

// startBrowser launches Chromium with the flags that work on closed
// networks: without the background-networking flags its connections are
// refused and it stalls. chromedp gives every browser a fresh
// --user-data-dir and removes it afterwards.
func startBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	artifacts := os.Getenv(artifactsEnv)
	if artifacts == "" {
		artifacts = t.TempDir()
	} else {
		require.NoError(t, os.MkdirAll(artifacts, 0o755))
	}
	log := &lockedBuffer{}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1600, 1400),
		chromedp.CombinedOutput(log),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	// Cleanups run last-in first-out: close the tab and browser, then the
	// allocator, before the worker and the server stop.
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancelCtx)

	// The first Run starts the browser and binds it to ctx, so it gets no
	// timeout of its own; a launch that hangs is bounded here instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		require.NoError(t, err, "start %s; its output:\n%s", chromium, log.String())
	case <-time.After(browserStep):
		cancelCtx()
		t.Fatalf("%s did not start within %s; its output:\n%s", chromium, browserStep, log.String())
	}
	version, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
	require.NoError(t, err)
	t.Logf("browser: %s (%s)", chromium, version)
	return &browser{t: t, ctx: ctx, artifacts: artifacts, log: log}
}

// step runs one action with a timeout, failing the test with a screenshot
// and the page's text when it does not finish.
func (b *browser) step(name string, a chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	_ = run1(b, name, a)
}

// pollValue waits until the JavaScript expression is truthy and returns it.
func pollValue[T any](b *browser, name, expr string) T {
	b.t.Helper()
	return run1(b, name, chromedp.Poll[T](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserStep)))
}

func run1[T any](b *browser, name string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.fail(name, err)
	}
	return v
}

// fail reports a failed step with what the browser showed.
func (b *browser) fail(name string, err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	var details []string
	if loc, lerr := chromedp.Run(ctx, chromedp.Location()); lerr == nil {
		details = append(details, "URL: "+loc)
	}
	if png, serr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); serr == nil {
		path := filepath.Join(b.artifacts, "failure.png")
		if os.WriteFile(path, png, 0o644) == nil {
			details = append(details, "screenshot: "+path)
		}
	}
	if text, terr := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`)); terr == nil {
		details = append(details, "page text:\n"+truncate(text, 4000))
	}
	details = append(details, "browser output (last lines):\n"+tail(b.log.String(), 4000))
	b.t.Fatalf("browser step %q: %v\n%s", name, err, strings.Join(details, "\n"))
}

// screenshot saves the page as a PNG and logs its path.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := run1(b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.artifacts, name)
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// eventRow is one row of the UI's event history table.
type eventRow struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

func rowIDs(rows []eventRow) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

func byIDValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func anyContains(texts []string, sub string) bool {
	for _, s := range texts {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// jsStrings renders strings as a JavaScript array literal.
func jsStrings(ss []string) string {
	raw, _ := json.Marshal(ss)
	return string(raw)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n... (truncated)"
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "(truncated) ...\n" + s[len(s)-n:]
}

// lockedBuffer collects the browser's output while it runs.
type lockedBuffer = testenv.Buffer
