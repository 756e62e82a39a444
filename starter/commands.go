package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"

	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/grpcheaders"
	"github.com/fenixrt/fenix/internal/observability"
	"github.com/fenixrt/fenix/workflows"
)

// connection is a client plus what is needed to print Web UI links.
type connection struct {
	client.Client
	namespace string
	uiBase    string
	// dc decodes payloads read from history (the workers' codec).
	dc              converter.DataConverter
	shutdownTracing func(context.Context) error
}

// Close flushes the starter's spans and closes the client.
func (c *connection) Close() {
	c.Client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.shutdownTracing(ctx)
}

func connect(ctx context.Context) (*connection, error) {
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return nil, fmt.Errorf("load Temporal client configuration: %w", err)
	}
	opts.Logger = silentLogger{}
	// The same payload codec as the workers, or encrypted results are
	// unreadable here.
	payloadCodec, err := codec.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	opts.DataConverter = codec.NewDataConverter(payloadCodec)
	shutdownTracing, tracing, err := observability.SetupTracing(ctx, observability.TracingConfigFromEnv(os.Getenv, observability.ServiceStarter, ""))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	opts.Interceptors = append(opts.Interceptors, tracing)
	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpcheaders.DialOption())
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		_ = shutdownTracing(context.Background())
		addr := opts.HostPort
		if addr == "" {
			addr = client.DefaultHostPort
		}
		return nil, fmt.Errorf("cannot connect to Temporal at %s (set TEMPORAL_ADDRESS, or run `go run ./starter demo`): %w", addr, err)
	}
	ns := opts.Namespace
	if ns == "" {
		ns = client.DefaultNamespace
	}
	return &connection{Client: c, namespace: ns, uiBase: uiBaseURL(opts.HostPort), dc: opts.DataConverter, shutdownTracing: shutdownTracing}, nil
}

// uiBaseURL is FENIX_UI_URL, else the dev server convention: the Web UI
// listens on the frontend port + 1000.
func uiBaseURL(hostPort string) string {
	if u := os.Getenv("FENIX_UI_URL"); u != "" {
		return strings.TrimRight(u, "/")
	}
	if hostPort == "" {
		hostPort = client.DefaultHostPort
	}
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "http://localhost:8233"
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "http://localhost:8233"
	}
	return fmt.Sprintf("http://%s", net.JoinHostPort(host, strconv.Itoa(port+1000)))
}

// runURL is the Web UI page of one run.
func runURL(base, namespace, workflowID, runID string) string {
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", base,
		url.PathEscape(namespace), url.PathEscape(workflowID), url.PathEscape(runID))
}

type startFlags struct {
	fs        *flag.FlagSet
	id        *string
	taskQueue *string
	noWait    *bool
	asJSON    *bool
}

func newStartFlags(name string, stderr io.Writer) startFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return startFlags{
		fs:        fs,
		id:        fs.String("id", "", "workflow ID (default: derived from logical_work_id and attempt_no)"),
		taskQueue: fs.String("task-queue", envOr("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "task queue (env FENIX_TASK_QUEUE)"),
		noWait:    fs.Bool("no-wait", false, "print the workflow ID and Web UI link and return without waiting"),
		asJSON:    fs.Bool("json", false, "print only the result JSON"),
	}
}

// readAssignment reads and validates the file locally, so mistakes are
// reported before anything is started.
func readAssignment(path string, forExecution bool) ([]byte, contract.Assignment, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, contract.Assignment{}, fmt.Errorf("read assignment: %w", err)
	}
	a, err := contract.ParseAssignment(raw)
	if err == nil && forExecution {
		err = a.ValidateForExecution()
	}
	if err != nil {
		return nil, a, fmt.Errorf("%s: %w", path, err)
	}
	return raw, a, nil
}

func start(ctx context.Context, c *cli, sf startFlags, args []string, workflowType string) (*connection, client.WorkflowRun, contract.Assignment, error) {
	if err := sf.fs.Parse(args); err != nil {
		return nil, nil, contract.Assignment{}, usageError{err.Error()}
	}
	if sf.fs.NArg() != 1 {
		return nil, nil, contract.Assignment{}, usageError{"expected exactly one assignment file"}
	}
	raw, a, err := readAssignment(sf.fs.Arg(0), workflowType == workflows.ExecuteAssignmentWorkflow)
	if err != nil {
		return nil, nil, a, err
	}
	if raw, err = offloadLargeTranscript(ctx, c, sf.fs.Arg(0), raw, a, *sf.asJSON); err != nil {
		return nil, nil, a, err
	}
	id := *sf.id
	if id == "" {
		if workflowType == workflows.PrepareRoundWorkflow {
			id = workflows.PrepareRoundWorkflowID(a.LogicalWorkID, a.AttemptNo)
		} else {
			id = workflows.AssignmentWorkflowID(a.LogicalWorkID, a.AttemptNo)
		}
	}
	conn, err := connect(ctx)
	if err != nil {
		return nil, nil, a, err
	}
	run, err := workflows.StartWorkflow(ctx, conn, client.StartWorkflowOptions{ID: id, TaskQueue: *sf.taskQueue, WorkflowExecutionErrorWhenAlreadyStarted: true},
		workflowType, a, json.RawMessage(raw))
	if err != nil {
		conn.Close()
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil, nil, a, alreadyStarted(id)
		}
		return nil, nil, a, fmt.Errorf("start %s: %w", workflowType, err)
	}
	if !*sf.asJSON {
		fmt.Fprintf(c.stdout, "Started %s %s (run %s) on task queue %s\nWeb UI: %s\n",
			workflowType, run.GetID(), run.GetRunID(), *sf.taskQueue, runURL(conn.uiBase, conn.namespace, run.GetID(), run.GetRunID()))
	}
	warnWithoutWorkers(ctx, c, conn, *sf.taskQueue)
	return conn, run, a, nil
}

// warnWithoutWorkers says so on stderr when no worker has polled queue
// lately: a typo in -task-queue (or the worker's FENIX_TASK_QUEUE) left
// a run that waits forever for a worker, and the starter with it, with
// nothing said.
func warnWithoutWorkers(ctx context.Context, c *cli, conn *connection, queue string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := conn.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil || len(resp.GetPollers()) > 0 {
		return
	}
	fmt.Fprintf(c.stderr, "Warning: no worker has polled task queue %q lately: the run waits until one does (is the worker's FENIX_TASK_QUEUE the same? -task-queue names the starter's)\n", queue)
}

// alreadyStarted says that the workflow ID names a run that exists: an
// assignment's attempt, a turn and a round run once (StartWorkflow).
func alreadyStarted(id string) error {
	return fmt.Errorf("workflow %q exists already, running or ended (an assignment's attempt, a turn and a round run once): see it with `starter result %s`, cancel it if it runs, or run the work again with a new attempt_no (or turn_id), or -id", id, id)
}

// maxInlineInput keeps a start request under Temporal's 2 MiB payload
// limit with room for the rest of the request.
const maxInlineInput = 1536 << 10

// offloadLargeTranscript puts an oversized transcript into the worker's
// context store and sends context_ref instead, so an assignment of any
// size can be started. The store must be the worker's (same host or a
// shared volume), named by FENIX_DATA_DIR.
func offloadLargeTranscript(ctx context.Context, c *cli, path string, raw []byte, a contract.Assignment, quiet bool) ([]byte, error) {
	if len(raw) <= maxInlineInput {
		return raw, nil
	}
	if len(a.ContextMessages) == 0 {
		return nil, fmt.Errorf("%s is %.1f MB, over Temporal's 2 MB payload limit, and has no context_messages to move to the context store", path, float64(len(raw))/1e6)
	}
	spec, dataDir := os.Getenv(contextstore.Setting), os.Getenv("FENIX_DATA_DIR")
	if spec == "" && dataDir == "" {
		return nil, fmt.Errorf("%s is %.1f MB, over Temporal's 2 MB payload limit: set FENIX_DATA_DIR to the worker's data directory, or FENIX_CONTEXT_STORE to the workers' shared store (postgres://...), so the starter can put the transcript in the context store and send context_ref", path, float64(len(raw))/1e6)
	}
	store, err := contextstore.Open(ctx, spec, contextstore.Options{DataDir: dataDir})
	if err != nil {
		return nil, err
	}
	if closer, ok := store.(interface{ Close() }); ok {
		defer closer.Close()
	}
	set, err := contextstore.Put(ctx, store, a.ContextMessages)
	if err != nil {
		return nil, fmt.Errorf("store the transcript of %s: %w", path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	delete(doc, "context_messages")
	doc["context_ref"] = set.Ref
	if !quiet {
		fmt.Fprintf(c.stdout, "Transcript of %d messages (%.1f MB) stored in the context store as %s\n", set.Count, float64(set.Bytes)/1e6, set.Ref)
	}
	return json.Marshal(doc)
}

func cmdRun(ctx context.Context, c *cli, args []string) (int, error) {
	sf := newStartFlags("run", c.stderr)
	conn, run, _, err := start(ctx, c, sf, args, workflows.ExecuteAssignmentWorkflow)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	if *sf.noWait {
		return exitOK, nil
	}
	var res contract.Result
	if err := run.Get(ctx, &res); err != nil {
		return exitFailed, fmt.Errorf("workflow %s did not complete: %w", run.GetID(), err)
	}
	return printResult(c, res, *sf.asJSON)
}

func cmdPrepare(ctx context.Context, c *cli, args []string) (int, error) {
	sf := newStartFlags("prepare", c.stderr)
	conn, run, _, err := start(ctx, c, sf, args, workflows.PrepareRoundWorkflow)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	if *sf.noWait {
		return exitOK, nil
	}
	var res contract.PreparedRound
	if err := run.Get(ctx, &res); err != nil {
		return exitFailed, fmt.Errorf("workflow %s did not complete: %w", run.GetID(), err)
	}
	if *sf.asJSON {
		return statusCode(res.Status), writeJSON(c.stdout, res)
	}
	fmt.Fprintf(c.stdout, "Status: %s\n", res.Status)
	if res.Error != nil {
		fmt.Fprintf(c.stdout, "Error: %s (%s, %s/%s)\n", res.Error.LastErrorSummary, res.Error.ErrorType, res.Error.Classification, res.Error.Code)
		return statusCode(res.Status), nil
	}
	fmt.Fprintf(c.stdout, "Model: %s  messages: %d  estimated tokens: %d  compacted: %t\n",
		res.LikelyModel, res.EstimatedMessageCount, res.EstimatedTokenCount, res.Compacted)
	if res.MessagesRef != "" {
		fmt.Fprintf(c.stdout, "Messages are in the context store as %s (too large to return inline)\n", res.MessagesRef)
	}
	for i, m := range res.Messages {
		fmt.Fprintf(c.stdout, "--- [%d] %s\n%s\n", i, m.Role, m.Content)
	}
	return exitOK, nil
}

func cmdResult(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("result", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	asJSON := fs.Bool("json", false, "print only the result JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return exitUsage, usageError{"expected a workflow ID"}
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	var res contract.Result
	if err := conn.GetWorkflow(ctx, fs.Arg(0), "").Get(ctx, &res); err != nil {
		return exitFailed, fmt.Errorf("workflow %s: %w", fs.Arg(0), err)
	}
	return printResult(c, res, *asJSON)
}

func cmdCancel(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	reason := fs.String("reason", "canceled from the starter", "reason recorded in the trace and failure payload")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return exitUsage, usageError{"expected a workflow ID"}
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	if err := conn.SignalWorkflow(ctx, fs.Arg(0), "", workflows.SignalCancel, workflows.CancelRequest{Reason: *reason}); err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return exitFailed, fmt.Errorf("no running workflow %q (it may have finished already)", fs.Arg(0))
		}
		return exitFailed, fmt.Errorf("signal cancel to %s: %w", fs.Arg(0), err)
	}
	fmt.Fprintf(c.stdout, "Cancel sent to %s: %s\n", fs.Arg(0), *reason)
	return exitOK, nil
}

func query[T any](ctx context.Context, name string, c *cli, args []string) (T, bool, error) {
	var out T
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return out, false, usageError{"expected a workflow ID"}
	}
	conn, err := connect(ctx)
	if err != nil {
		return out, false, err
	}
	defer conn.Close()
	v, err := conn.QueryWorkflow(ctx, fs.Arg(0), "", name)
	if err != nil {
		return out, false, fmt.Errorf("query %s of %s: %w", name, fs.Arg(0), err)
	}
	if err := v.Get(&out); err != nil {
		return out, false, fmt.Errorf("decode %s of %s: %w", name, fs.Arg(0), err)
	}
	return out, *asJSON, nil
}

func cmdTrace(ctx context.Context, c *cli, args []string) (int, error) {
	trace, asJSON, err := query[[]contract.TraceEntry](ctx, workflows.QueryTrace, c, args)
	if err != nil {
		return exitFailed, err
	}
	if asJSON {
		return exitOK, writeJSON(c.stdout, trace)
	}
	printTrace(c.stdout, trace)
	return exitOK, nil
}

func cmdReports(ctx context.Context, c *cli, args []string) (int, error) {
	reports, asJSON, err := query[[]contract.Report](ctx, workflows.QueryReports, c, args)
	if err != nil {
		return exitFailed, err
	}
	if asJSON {
		return exitOK, writeJSON(c.stdout, reports)
	}
	for _, r := range reports {
		line := fmt.Sprintf("%3d %s %-8s", r.Sequence, r.OccurredAt.Format("15:04:05.000"), r.Kind)
		if r.Phase != "" {
			line += " " + r.Phase
		}
		if r.ToolInvocation != nil {
			line += fmt.Sprintf(" tool=%s call=%s status=%s", r.ToolInvocation.ToolName, r.ToolInvocation.CallID, r.ToolInvocation.Status)
		}
		if r.OutputChunk != nil {
			line += fmt.Sprintf(" %s: %q", r.OutputChunk.Stream, r.OutputChunk.Text)
		}
		if r.Output != nil {
			line += fmt.Sprintf(" output=%q", r.Output.Content)
		}
		if r.Error != nil {
			line += fmt.Sprintf(" error=%s: %s", r.Error.ErrorType, r.Error.LastErrorSummary)
		}
		fmt.Fprintln(c.stdout, line)
	}
	return exitOK, nil
}

func printResult(c *cli, res contract.Result, asJSON bool) (int, error) {
	if asJSON {
		return statusCode(res.Status), writeJSON(c.stdout, res)
	}
	fmt.Fprintf(c.stdout, "Status: %s\n", res.Status)
	if res.Output != nil {
		fmt.Fprintf(c.stdout, "Output (conversation %s, turn %s):\n%s\n", res.Output.ConversationID, res.Output.TurnID, res.Output.Content)
	}
	if res.Error != nil {
		fmt.Fprintf(c.stdout, "Error: %s\n  type %s, classification %s, code %s, stage %s, retryable %t\n",
			res.Error.LastErrorSummary, res.Error.ErrorType, res.Error.Classification, res.Error.Code, res.Error.Stage, res.Error.Retryable)
	}
	fmt.Fprintln(c.stdout, "Trace:")
	printTrace(c.stdout, res.Trace)
	return statusCode(res.Status), nil
}

func printTrace(w io.Writer, trace []contract.TraceEntry) {
	for i, e := range trace {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			b, _ := json.Marshal(e.Fields[k])
			v := string(b)
			if len(v) > 120 {
				v = v[:117] + "..."
			}
			parts = append(parts, k+"="+v)
		}
		fmt.Fprintf(w, "  %2d %-20s %s\n", i+1, e.Hook, strings.Join(parts, " "))
	}
}

func statusCode(status string) int {
	switch status {
	case contract.StatusCompleted:
		return exitOK
	case contract.StatusCanceled:
		return exitCanceled
	default:
		return exitFailed
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

type silentLogger struct{}

func (silentLogger) Debug(string, ...any) {}
func (silentLogger) Info(string, ...any)  {}
func (silentLogger) Warn(string, ...any)  {}
func (silentLogger) Error(string, ...any) {}
