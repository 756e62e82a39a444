package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// cmdAgent runs an AgentTurn and prints its progress live from the trace
// and reports queries; Ctrl-C sends the cancel signal and waits for the
// canceled result.
func cmdAgent(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	prompt := fs.String("prompt", "", "user message to start a turn with (instead of a request file)")
	model := fs.String("model", "", "model, e.g. scripted:main or gpt-4o-mini (overrides the file)")
	maxSteps := fs.Int("max-steps", 0, "step budget (default: the file's, else 10)")
	allow := fs.String("allow", "calculator,workspace_read,workspace_list,workspace_search,spawn_subagent", "allowed tools when using -prompt")
	id := fs.String("id", "", "workflow ID (default: derived from conversation and turn)")
	taskQueue := fs.String("task-queue", envOr("FENIX_TASK_QUEUE", workflows.DefaultTaskQueue), "task queue (env FENIX_TASK_QUEUE)")
	quiet := fs.Bool("quiet", false, "print only the final result")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	req, err := agentRequest(fs, *prompt, *model, *maxSteps, *allow)
	if err != nil {
		return exitUsage, err
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return exitFailed, err
	}
	if *id == "" {
		*id = workflows.AgentTurnWorkflowID(req.ConversationID, req.TurnID)
	}
	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	run, err := workflows.StartWorkflow(ctx, conn, client.StartWorkflowOptions{ID: *id, TaskQueue: *taskQueue, WorkflowExecutionErrorWhenAlreadyStarted: true},
		workflows.AgentTurnWorkflow, req.Assignment, json.RawMessage(raw))
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return exitFailed, alreadyStarted(*id)
	}
	if err != nil {
		return exitFailed, fmt.Errorf("start AgentTurn: %w", err)
	}
	fmt.Fprintf(c.stdout, "Started AgentTurn %s (run %s) with model %s\nWeb UI: %s\n", run.GetID(), run.GetRunID(), req.Model,
		runURL(conn.uiBase, conn.namespace, run.GetID(), run.GetRunID()))

	done := make(chan error, 1)
	var res contract.Result
	// Get follows continue-as-new, so a long turn is waited on to its end.
	go func() { done <- run.Get(context.Background(), &res) }()
	follow := &follower{c: c, conn: conn, id: run.GetID(), quiet: *quiet}
	ticker := time.NewTicker(300 * time.Millisecond)
	defer ticker.Stop()
	canceled := false
	for {
		select {
		case err := <-done:
			follow.poll(context.Background())
			if err != nil {
				return exitFailed, fmt.Errorf("AgentTurn %s did not complete: %w", run.GetID(), err)
			}
			return printResult(c, res, false)
		case <-ticker.C:
			follow.poll(ctx)
		case <-ctx.Done():
			if !canceled {
				canceled = true
				fmt.Fprintln(c.stdout, "Interrupted: sending cancel and waiting for the turn to stop...")
				sigCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := conn.SignalWorkflow(sigCtx, run.GetID(), "", workflows.SignalCancel, workflows.CancelRequest{Reason: "interrupted from the starter"})
				cancel()
				if err != nil {
					return exitFailed, fmt.Errorf("send cancel to %s: %w", run.GetID(), err)
				}
			}
			ctx = context.Background()
		}
	}
}

// agentRequest builds the request from a file or from -prompt.
func agentRequest(fs *flag.FlagSet, prompt, model string, maxSteps int, allow string) (contract.AgentTurnRequest, error) {
	var req contract.AgentTurnRequest
	switch {
	case fs.NArg() == 1 && prompt == "":
		raw, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return req, fmt.Errorf("read agent request: %w", err)
		}
		if req, err = contract.ParseAgentTurn(raw); err != nil {
			return req, fmt.Errorf("%s: %w", fs.Arg(0), err)
		}
	case fs.NArg() == 0 && prompt != "":
		stamp := time.Now().UTC().Format("20060102-150405")
		req.Assignment = contract.Assignment{
			LogicalWorkID: "agent-" + stamp, AttemptNo: 1, ConversationID: "conv-cli", TurnID: "turn-" + stamp,
			ContextMessages: []contract.Message{{Role: contract.RoleUser, Content: prompt}},
			AgentContext:    contract.AgentContext{Profile: "main", AllowedToolNames: splitList(allow)},
		}
	default:
		return req, usageError{"give a request file or -prompt, not both"}
	}
	if model != "" {
		req.Model = model
	}
	if req.Model == "" {
		req.Model = req.InferModel()
	}
	if req.Model == "" {
		return req, usageError{"no model: pass -model (scripted:<script> or a model name) or set model_context in the file"}
	}
	if maxSteps > 0 {
		req.MaxSteps = maxSteps
	}
	return req, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// follower prints trace entries and permission requests as they appear.
type follower struct {
	c         *cli
	conn      *connection
	id        string
	quiet     bool
	seen      int
	announced map[string]bool
}

func (f *follower) poll(ctx context.Context) {
	if f.quiet {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := f.conn.QueryWorkflow(ctx, f.id, "", workflows.QueryTrace)
	if err != nil {
		return
	}
	var trace []contract.TraceEntry
	if v.Get(&trace) != nil {
		return
	}
	if len(trace) < f.seen {
		f.seen = 0 // continued as new: a fresh trace
	}
	for _, e := range trace[f.seen:] {
		if line := describeEntry(e); line != "" {
			fmt.Fprintln(f.c.stdout, line)
		}
	}
	f.seen = len(trace)

	v, err = f.conn.QueryWorkflow(ctx, f.id, "", workflows.QueryPendingPermissions)
	if err != nil {
		return
	}
	var pending []workflows.PendingPermission
	if v.Get(&pending) != nil {
		return
	}
	if f.announced == nil {
		f.announced = map[string]bool{}
	}
	for _, p := range pending {
		if !f.announced[p.CallID] {
			f.announced[p.CallID] = true
			fmt.Fprintf(f.c.stdout, "  ⏸ %s wants permission %q for call %s; answer with:\n      starter approve %s %s   (or: starter deny %s %s)\n",
				p.ToolName, p.Permission, p.CallID, f.id, p.CallID, f.id, p.CallID)
		}
	}
}

// describeEntry renders the entries a person following a turn cares about.
func describeEntry(e contract.TraceEntry) string {
	str := func(k string) string { s, _ := e.Fields[k].(string); return s }
	switch e.Hook {
	case "call_model":
		calls, _ := e.Fields["tool_calls"].([]any)
		if len(calls) == 0 {
			return fmt.Sprintf("step %v: the model answered", e.Fields["step"])
		}
		names := make([]string, len(calls))
		for i, n := range calls {
			names[i] = fmt.Sprint(n)
		}
		return fmt.Sprintf("step %v: the model calls %s", e.Fields["step"], strings.Join(names, ", "))
	case "execute_tool":
		return fmt.Sprintf("  → %s (%s) ran in %v ms", str("tool_name"), str("call_id"), e.Fields["duration_ms"])
	case "project_tool_result":
		return fmt.Sprintf("  ← %s", firstLine(str("content")))
	case "tool_failed":
		return fmt.Sprintf("  ✗ %s (%s): %s", str("tool_name"), str("error_type"), str("error"))
	case "permission_decision":
		return fmt.Sprintf("  permission for %s: %s (%s)", str("call_id"), str("decision"), str("decided_by"))
	case "subagent":
		return fmt.Sprintf("  subagent %s ended %s", str("workflow_id"), str("status"))
	case "continued":
		return fmt.Sprintf("(continued as new at step %v)", e.Fields["step"])
	case "pre_compact":
		return "  compacting the context..."
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func cmdMetrics(ctx context.Context, c *cli, args []string) (int, error) {
	m, _, err := query[contract.Metrics](ctx, workflows.QueryMetrics, c, args)
	if err != nil {
		return exitFailed, err
	}
	return exitOK, writeJSON(c.stdout, m)
}
