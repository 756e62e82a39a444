package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/fenixrt/fenix/agent/llm/providers"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/history/policydiff"
	"github.com/fenixrt/fenix/history/runhistory"
	"github.com/fenixrt/fenix/internal/worker"
	"github.com/fenixrt/fenix/workflows"
	workspacepkg "github.com/fenixrt/fenix/workspace"
)

// cmdPolicyDiff replays recorded tool calls under a candidate policy. Exit
// 0: no verdict changes; 1: some do (or an error).
func cmdPolicyDiff(ctx context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("policy-diff", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	hooksFile := fs.String("hooks-file", "", "candidate hook settings file (Claude Code format), as a worker's -hooks-file")
	mcpConfig := fs.String("mcp-config", envOr("FENIX_MCP_CONFIG", ""), "MCP server configurations (.mcp.json, \":\"-separated), as a worker's -mcp-config: their servers are started so recorded mcp__ calls are reviewed against their tools (env FENIX_MCP_CONFIG)")
	var allowed []string
	allowedSet := false
	fs.Func("allowed-tools", "candidate allow-list, comma-separated: replaces every call's allowed_tool_names", func(v string) error {
		allowedSet = true
		allowed = []string{}
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				allowed = append(allowed, name)
			}
		}
		return nil
	})
	query := fs.String("query", "", "visibility query narrowing the runs, e.g. \"ConversationId = 'conv-1'\"")
	since := fs.Duration("since", 24*time.Hour, "replay runs closed within this long")
	asJSON := fs.Bool("json", false, "print JSON instead of the table")
	wide := fs.Bool("wide", false, "print full reasons, the recorded policy and Web UI links (the table may exceed 120 columns)")
	concurrency := fs.Int("concurrency", 8, "histories fetched and replayed at once")
	workspace := fs.String("workspace-root", envOr("FENIX_WORKSPACE_ROOT", ""), "where command hooks run for sessions without a workspace, as on the worker (env FENIX_WORKSPACE_ROOT)")
	workspaceBases := fs.String("workspace-bases", envOr("FENIX_WORKSPACE_BASES", ""), "directories (separated by \":\") a session's workspace must resolve inside before its hooks run, as on the worker (env FENIX_WORKSPACE_BASES; default: the workspace root)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return exitUsage, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *hooksFile == "" && !allowedSet {
		return exitUsage, usageError{"give the candidate policy: -hooks-file and/or -allowed-tools"}
	}
	if *since <= 0 || *concurrency <= 0 {
		return exitUsage, usageError{"-since and -concurrency must be positive"}
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Prompt hooks are re-asked of the model the worker would ask, when
	// this environment names one as the worker's does (FENIX_MODEL and
	// its provider); without one they are skipped with a warning.
	hookCfg := worker.Config{HooksFile: *hooksFile, Logger: logger, HookModel: os.Getenv("FENIX_HOOK_MODEL")}
	models, err := providers.FromEnv(os.Getenv)
	if err != nil {
		return exitUsage, usageError{err.Error()}
	}
	if models.OpenAI != nil || models.Scripted != nil {
		hookCfg.Model = models
	}
	registry, err := worker.PolicyHooks(hookCfg, noAuditStore{})
	if err != nil {
		return exitFailed, fmt.Errorf("candidate policy: %w", err)
	}
	toolRegistry, closeMCP, err := worker.PolicyTools(worker.Config{HooksFile: *hooksFile, MCPConfig: *mcpConfig, Logger: logger}, "policy-diff")
	if err != nil {
		return exitFailed, fmt.Errorf("candidate policy: %w", err)
	}
	defer closeMCP()
	policy := &policydiff.Policy{Tools: toolRegistry, Hooks: registry, WorkspaceRoot: *workspace}
	if dirs := workspacepkg.ParseList(*workspaceBases); len(dirs) > 0 {
		if policy.WorkspaceBases, err = workspacepkg.NewBases(workspacepkg.BasesSetting, dirs...); err != nil {
			return exitUsage, usageError{err.Error()}
		}
	}
	if allowedSet {
		policy.AllowedTools = allowed
	}

	conn, err := connect(ctx)
	if err != nil {
		return exitFailed, err
	}
	defer conn.Close()
	refs, err := listClosedToolRuns(ctx, conn, time.Now().Add(-*since), *query)
	if err != nil {
		return exitFailed, err
	}
	fmt.Fprintf(c.stderr, "policy-diff: %d closed %s and %s runs to replay\n", len(refs), workflows.ExecuteAssignmentWorkflow, workflows.AgentTurnWorkflow)
	rep, err := policydiff.Replay(ctx, policy, refs, conn.fetchRun, policydiff.Options{Concurrency: *concurrency, Progress: c.stderr})
	if err != nil {
		return exitFailed, err
	}
	link := func(id, run string) string { return runURL(conn.uiBase, conn.namespace, id, run) }
	if *asJSON {
		err = policydiff.WriteJSON(c.stdout, rep, link)
	} else {
		err = policydiff.WriteText(c.stdout, rep, link, *wide)
	}
	if err != nil {
		return exitFailed, err
	}
	if rep.Summary.Changed() {
		return exitFailed, nil
	}
	return exitOK, nil
}

// listClosedToolRuns lists closed ExecuteAssignment and AgentTurn runs
// from visibility, by workflow ID.
func listClosedToolRuns(ctx context.Context, conn *connection, since time.Time, narrow string) ([]policydiff.RunRef, error) {
	q := fmt.Sprintf("ExecutionStatus != 'Running' AND CloseTime >= '%s'", since.UTC().Format(time.RFC3339Nano))
	if narrow != "" {
		q += " AND (" + narrow + ")"
	}
	runs, err := runhistory.List(ctx, conn.Client, conn.namespace, runhistory.ToolRunsQuery(q))
	if err != nil {
		return nil, err
	}
	refs := make([]policydiff.RunRef, len(runs))
	for i, r := range runs {
		refs[i] = policydiff.RunRef(r)
	}
	return refs, nil
}

// fetchRun reads one run's full history.
func (conn *connection) fetchRun(ctx context.Context, ref policydiff.RunRef) (*runhistory.Run, error) {
	return runhistory.Fetch(ctx, conn.Client, ref.WorkflowID, ref.RunID, conn.dc)
}

// noAuditStore stands in for the audit log in a re-evaluation: the audit
// hook handles no verdict event, and a what-if must write nothing.
type noAuditStore struct{}

var errNoAudit = errors.New("policy-diff writes no audit rows")

func (noAuditStore) Record(context.Context, audit.Row) error                  { return errNoAudit }
func (noAuditStore) Count(context.Context, audit.Filter) (int, error)         { return 0, errNoAudit }
func (noAuditStore) Query(context.Context, audit.Filter) ([]audit.Row, error) { return nil, errNoAudit }
func (noAuditStore) Close() error                                             { return nil }
