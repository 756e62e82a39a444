// Package worker builds a Fenix worker: the client, the activities with
// their dependencies, and the Temporal workers for the shared task queue and
// this host's pinned queue. worker/main.go and the integration tests use it.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/agent/compaction"
	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/prompt"
	"github.com/fenixrt/fenix/agent/prompt/operator"
	"github.com/fenixrt/fenix/agent/skills"
	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/hooks/builtin"
	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/internal/observability"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/redact"
	"github.com/fenixrt/fenix/sessions"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/tools/mcp"
	"github.com/fenixrt/fenix/tools/memory"
	"github.com/fenixrt/fenix/tools/procs"
	"github.com/fenixrt/fenix/workflows"
	"github.com/fenixrt/fenix/workspace"
)

// heartbeatThrottle bounds how long a cancel waits for a running tool's
// next heartbeat. Heartbeats are not history events, so this costs RPCs
// only (at most one a second per running long tool); at 1 s a canceled
// browser call has closed its Chromium well within 2 s.
const heartbeatThrottle = time.Second

// Worker is a running Fenix worker.
type Worker struct {
	audit      audit.Store
	cfg        Config
	client     client.Client
	shared     worker.Worker
	hostWorker worker.Worker
	Activities *activities.Activities
	Host       *tools.Host
	contexts   contextstore.Store
	mcp        *mcp.Manager
	// mcpHooks lets mcp_tool hook handlers, loaded before the servers
	// start and again on every reload, reach them.
	mcpHooks *mcpHookCaller
	// hookAgent evaluates the settings files' agent hooks; bound to the
	// activities once they exist.
	hookAgent *activities.HookAgent
	contextGC *periodic
	hooks     atomic.Pointer[hooks.Registry]
	// protected is what the tools never write besides the hooks' files:
	// the MCP configurations, the scripts their servers launch, the
	// worker's files; a reload replaces it.
	protected atomic.Pointer[[]string]
	// policyHeld is set while the worker runs the accepted policy, not
	// the one on disk (see acceptedPolicyFile).
	policyHeld atomic.Bool
	sweeper    *periodic
	// endedRunsSweeper records runs Temporal ended from outside (see
	// ended_runs.go).
	endedRunsSweeper *periodic
	// pinBook records the workspace pins of the policy the hooks run
	// (see workspacePinsFile); pinsMu guards it and the record.
	pinsMu  sync.Mutex
	pinBook *claudecode.WorkspacePinBook
}

// WorkflowRegistrar is satisfied by workers and workflow replayers.
type WorkflowRegistrar interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers Fenix's workflows under their public names.
func Register(r WorkflowRegistrar) {
	r.RegisterWorkflowWithOptions(workflows.ExecuteAssignment, workflow.RegisterOptions{Name: workflows.ExecuteAssignmentWorkflow})
	r.RegisterWorkflowWithOptions(workflows.PrepareRound, workflow.RegisterOptions{Name: workflows.PrepareRoundWorkflow})
	r.RegisterWorkflowWithOptions(workflows.AgentTurn, workflow.RegisterOptions{Name: workflows.AgentTurnWorkflow})
	r.RegisterWorkflowWithOptions(workflows.ConversationSession, workflow.RegisterOptions{Name: workflows.ConversationSessionWorkflow})
	r.RegisterWorkflowWithOptions(workflows.ListTools, workflow.RegisterOptions{Name: workflows.ListToolsWorkflow})
}

// New builds the activities and the workers; call Start to poll. What it
// opens (host, audit store, context store) is closed again when a later
// step fails.
func New(c client.Client, cfg Config) (w *Worker, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("worker data directory %q: %w", cfg.DataDir, err)
	}
	var cleanup closers
	defer func() {
		if err != nil {
			cleanup.closeAll()
		}
	}()
	if err := hideProcessFromSameUser(); err != nil {
		return nil, fmt.Errorf("marking the worker process non-dumpable, so commands cannot read its environment: %w", err)
	}
	w = &Worker{cfg: cfg, client: c}
	if w.Activities, err = w.buildActivities(&cleanup); err != nil {
		return nil, err
	}
	w.shared, w.hostWorker = w.buildTemporalWorkers()
	return w, nil
}

// closers undoes New's steps in reverse when a later one fails.
type closers []func()

func (c *closers) add(f func()) { *c = append(*c, f) }

func (c closers) closeAll() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}

// buildActivities opens the host, the stores and the hook registry, and
// wires them into the stage activities.
func (w *Worker) buildActivities(cleanup *closers) (*activities.Activities, error) {
	cfg := w.cfg
	bases, err := workspaceBases(cfg)
	if err != nil {
		return nil, err
	}
	hostCfg := cfg.HostConfig
	hostCfg.DataDir = cfg.DataDir
	hostCfg.WorkspaceBases = bases.Dirs()
	hostCfg.Protected = protectedPaths(cfg, hostCfg.Protected)
	hostCfg.Hooks = hookPolicy(cfg, hostCfg.Protected, hostCfg.WorkspaceBases)
	if hostCfg.Logger == nil {
		hostCfg.Logger = cfg.Logger
	}
	if cfg.HostID != "" {
		hostCfg.ID = cfg.HostID
	}
	if w.Host, err = tools.NewHost(hostCfg); err != nil {
		return nil, err
	}
	cleanup.add(func() { w.Host.Close() })
	registry := cfg.Tools
	if registry == nil {
		registry = tools.Builtin()
	}
	catalog, err := openSkills(cfg.SkillsDir)
	if err != nil {
		return nil, err
	}
	if w.audit, err = audit.Open(context.Background(), cfg.AuditDSN); err != nil {
		return nil, fmt.Errorf("open audit store %s: %w", redact.DSN(cfg.AuditDSN), err)
	}
	cleanup.add(func() { w.audit.Close() })
	// Hook settings load before the MCP servers start; their mcp_tool
	// handlers reach the servers through this once they run.
	w.mcpHooks = &mcpHookCaller{}
	w.hookAgent = &activities.HookAgent{Model: cfg.HookModel}
	policy, mcpFiles, err := w.startPolicy(agentWritable(w.Host, bases))
	if err != nil {
		return nil, err
	}
	hookRegistry := policy.registry
	if w.contexts, err = contextstore.Open(context.Background(), cfg.Contexts.Store, contextstore.Options{DataDir: cfg.DataDir, MaxBlobBytes: cfg.Contexts.MaxBlobBytes}); err != nil {
		return nil, err
	}
	cleanup.add(func() { closeContextStore(w.contexts) })
	transcripts, err := w.openTranscripts()
	if err != nil {
		return nil, err
	}
	liveHooks, liveProtected, private := w.liveHooks(hookRegistry), w.liveProtected(mcpFiles), privateFiles(cfg, hostCfg.Protected)
	if w.mcp, err = startMCP(cfg, w.Host, w.contexts, mcpFiles, policy, w.workspaceReadOnly(private)); err != nil {
		return nil, err
	}
	if w.mcp != nil {
		cleanup.add(func() { w.mcp.Close() })
		registry = registry.WithSources(w.mcp)
		w.mcpHooks.set(w.mcp)
	}
	estimator := compaction.WordEstimator{}
	acts := &activities.Activities{
		Tools:                registry,
		Contexts:             w.contexts,
		Host:                 w.Host,
		DefaultWorkspaceRoot: cfg.DefaultWorkspaceRoot,
		WorkspaceBases:       bases,
		Estimator:            estimator,
		InlineLimit:          contextstore.DefaultInlineLimit,
		Logger:               cfg.Logger,
		Skills:               catalog,
		Hooks:                hookRegistry,
		LiveHooks:            liveHooks,
		Transcripts:          transcripts,
		Summarizers:          summarizers(cfg),
		Model:                cfg.Model,
		Metrics:              cfg.Recorder,
		Redactor:             cfg.Redactor,
		Audit:                w.audit,
		InboxURL:             cfg.InboxURL,
		LiveProtected:        liveProtected,
		Private:              private,
		Sessions:             sessions.NewClaimer(sessions.TemporalToucher{Client: w.client, TaskQueue: cfg.TaskQueue}, cfg.SessionIdleTimeout),
		NetworkMemory:        sessions.NetworkMemory{Client: w.client, TaskQueue: cfg.TaskQueue, Idle: cfg.SessionIdleTimeout},
		Assembler: &prompt.Assembler{
			Skills:               catalog,
			ProfilesDir:          cfg.ProfilesDir,
			Estimator:            estimator,
			Operator:             snapshotter(w.Host),
			DefaultWorkspaceRoot: cfg.DefaultWorkspaceRoot,
			WorkspaceBases:       bases,
		},
	}
	w.hookAgent.Bind(acts)
	return acts, nil
}

// buildTemporalWorkers makes the shared queue's worker (workflows and every
// activity) and this host's (activities that must run where their
// resources live).
func (w *Worker) buildTemporalWorkers() (shared, host worker.Worker) {
	// Heartbeats are how a cancel reaches a running tool; the SDK would
	// otherwise send them only every 80% of the heartbeat timeout.
	opts := worker.Options{MaxHeartbeatThrottleInterval: heartbeatThrottle, DefaultHeartbeatThrottleInterval: heartbeatThrottle,
		Interceptors:             []interceptor.WorkerInterceptor{&validErrorsInterceptor{}, &heartbeatInterceptor{}, &contextRunInterceptor{}},
		DeadlockDetectionTimeout: deadlockDetectionTimeout}
	if w.cfg.Recorder != nil {
		opts.Interceptors = append(opts.Interceptors, observability.StageInterceptor(w.cfg.Recorder))
	}
	workflows.EnableSearchAttributes(ensureSearchAttributes(w.client, w.cfg.Namespace, w.cfg.Logger))
	shared = worker.New(w.client, w.cfg.TaskQueue, opts)
	Register(shared)
	shared.RegisterActivity(w.Activities)
	host = worker.New(w.client, w.Host.Queue, opts)
	host.RegisterActivity(w.Activities)
	return shared, host
}

// closeContextStore closes a store that holds connections or files.
func closeContextStore(store contextstore.Store) {
	if closer, ok := store.(interface{ Close() }); ok {
		closer.Close()
	}
}

// workspaceBases builds the workspace allow-list and checks that the
// default workspace root is usable under it, so a misconfigured worker
// fails at start rather than on every assignment.
func workspaceBases(cfg Config) (*workspace.Bases, error) {
	var bases *workspace.Bases
	var err error
	if len(cfg.WorkspaceBases) == 0 {
		bases, err = workspace.DefaultBases(cfg.DefaultWorkspaceRoot)
	} else {
		bases, err = workspace.NewBases(workspace.BasesSetting, cfg.WorkspaceBases...)
	}
	if err != nil {
		return nil, err
	}
	if cfg.DefaultWorkspaceRoot != "" {
		if _, _, err := bases.Resolve(cfg.DefaultWorkspaceRoot); err != nil {
			return nil, fmt.Errorf("FENIX_WORKSPACE_ROOT: %w", err)
		}
	}
	return bases, nil
}

// ensureSearchAttributes registers Fenix's search attributes on the
// namespace when they are missing. Without them, runs skip the upserts
// (an unregistered attribute would fail their workflow tasks), so a worker
// without operator permissions still works, just without Web UI filters.
func ensureSearchAttributes(c client.Client, namespace string, logger *slog.Logger) bool {
	if namespace == "" {
		namespace = client.DefaultNamespace
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	existing, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		logger.Warn("cannot list search attributes; runs will not set ConversationId/TurnId/ToolName/AssignmentStatus", "namespace", namespace, "error", err)
		return false
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, key := range workflows.SearchAttributeKeys() {
		if _, ok := existing.GetCustomAttributes()[key.GetName()]; !ok {
			missing[key.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return true
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing}); err != nil {
		logger.Warn("cannot register search attributes; runs will not set them (register them with `temporal operator search-attribute create`)",
			"namespace", namespace, "missing", len(missing), "error", err)
		return false
	}
	logger.Info("registered search attributes", "namespace", namespace, "count", len(missing))
	return true
}

// summarizers are the summary-compaction backends: extractive always, and
// "model" when a summary model is configured.
func summarizers(cfg Config) map[string]compaction.Summarizer {
	out := map[string]compaction.Summarizer{compaction.ExtractiveSummarizer{}.Name(): compaction.ExtractiveSummarizer{}}
	if cfg.Model != nil && cfg.SummaryModel != "" {
		out["model"] = llm.Summarizer{Provider: cfg.Model, Model: cfg.SummaryModel}
	}
	return out
}

// snapshotter feeds the operator snapshot from this host's memory store,
// command runs and background services.
func snapshotter(host *tools.Host) *operator.Snapshotter {
	return &operator.Snapshotter{
		Memory: operator.MemoryListerFunc(func(_ context.Context, scope operator.Scope) ([]operator.MemoryEntry, error) {
			listing, err := memory.ListAt(scope.WorkspaceRoot, scope.Profile)
			if err != nil {
				return nil, err
			}
			out := make([]operator.MemoryEntry, len(listing.Entries))
			for i, e := range listing.Entries {
				out[i] = operator.MemoryEntry{Key: e.Key, Title: e.Title, Bytes: e.Bytes, UpdatedAt: e.UpdatedAt}
			}
			return out, nil
		}),
		CommandRuns: operator.RunListerFunc(func(_ context.Context, scope operator.Scope) ([]operator.RunSummary, error) {
			var out []operator.RunSummary
			for _, r := range host.CommandRuns(50) {
				if r.ConversationID == "" || r.ConversationID == scope.ConversationID {
					out = append(out, operator.RunSummary{ID: r.ID, Command: r.CommandLine, Status: r.Status, ExitStatus: r.ExitStatus, StartedAt: r.StartedAt})
				}
			}
			return out, nil
		}),
		ProcessRuns: operator.RunListerFunc(func(_ context.Context, scope operator.Scope) ([]operator.RunSummary, error) {
			var out []operator.RunSummary
			for _, p := range host.ProcessRuns() {
				if p.ConversationID != "" && p.ConversationID != scope.ConversationID {
					continue
				}
				summary := operator.RunSummary{ID: p.ID, Command: p.CommandLine, Status: p.Status, ExitStatus: p.ExitStatus, StartedAt: p.StartedAt}
				if p.Port > 0 && p.Status == "running" {
					summary.ProxyPath = procs.ProxyPath(p.ID)
				}
				out = append(out, summary)
			}
			return out, nil
		}),
		BrowserSessions: browserSessionLister(host),
	}
}

// openSkills opens the three skill roots under dir, creating them so an
// install has somewhere to go.
func openSkills(dir string) (*skills.Catalog, error) {
	roots := skills.Roots{
		System:    filepath.Join(dir, "system"),
		Curated:   filepath.Join(dir, "curated"),
		Installed: filepath.Join(dir, "installed"),
	}
	for _, d := range []string{roots.System, roots.Curated, roots.Installed} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("skills root %q: %w", d, err)
		}
	}
	catalog, err := skills.Open(roots)
	if err != nil {
		return nil, fmt.Errorf("open skills catalog under %q: %w", dir, err)
	}
	return catalog, nil
}

// loadedHooks is what buildHooks made.
type loadedHooks struct {
	registry *hooks.Registry
	// mcpServers is what the settings files say about which MCP servers
	// run (nil when they say nothing); the worker applies it when it
	// starts them.
	mcpServers *claudecode.MCPServerSettings
	// env is the settings files' "env" (claudecode.CommandEnv), where
	// Claude Code's MCP_TIMEOUT and MCP_TOOL_TIMEOUT may be set.
	env map[string]string
	// snapshot is what the settings files were loaded from; empty without
	// a data directory to pin their scripts in.
	snapshot claudecode.Snapshot
}

// buildHooks assembles the registry in its documented order: the
// cancellation guard, the command and http hooks of the settings files (in
// the order given), the audit log, custom Go hooks, then secret redaction.
// The settings files are read where cfg names them, or, with from, taken
// from that snapshot of an accepted policy.
func buildHooks(cfg Config, store audit.Store, mcpTools claudecode.MCPCaller, hookAgent *activities.HookAgent, host *tools.Host, hookReadOnly func(string) []string, from *claudecode.Snapshot, pins *claudecode.WorkspacePinBook) (loaded loadedHooks, err error) {
	opts := []hooks.Option{hooks.WithLogger(cfg.Logger.Warn)}
	if cfg.HookConcurrency > 0 {
		opts = append(opts, hooks.WithConcurrency(cfg.HookConcurrency))
	}
	r := hooks.NewRegistry(opts...)
	loaded.registry = r
	r.Add(builtin.NewCancellationHook())
	if paths := hookPaths(cfg); len(paths) > 0 || (from != nil && len(from.Files) > 0) {
		netPolicy, err := netguard.ParsePolicy(cfg.HookHTTPAllow)
		if err != nil {
			return loadedHooks{}, fmt.Errorf("FENIX_HOOKS_HTTP_ALLOW: %w", err)
		}
		netPolicy.Setting = "FENIX_HOOKS_HTTP_ALLOW"
		scripts, err := hookScriptStore(cfg)
		if err != nil {
			return loadedHooks{}, err
		}
		loadOpts := claudecode.LoadOptions{
			HTTPPolicy:    claudecode.HTTPPolicy{Net: netPolicy},
			PluginDataDir: filepath.Join(cfg.DataDir, pluginDataDir),
			MCP:           mcpTools,
			Scripts:       scripts,
			Logger:        cfg.Logger,
			Snapshot:      from,
			WorkspacePins: pins,
		}
		loadOpts.HookEnv = host.HookEnv()
		if c := host.HookConfiner(); c != nil {
			loadOpts.Launcher = c
			if hookReadOnly != nil {
				loadOpts.Launcher = heldHookLauncher{confiner: c, readOnly: hookReadOnly}
			}
		}
		if cfg.Model != nil {
			loadOpts.Prompt = llm.HookPromptEvaluator{Provider: cfg.Model, Model: cfg.HookModel}
			if hookAgent != nil {
				loadOpts.Agent = hookAgent
			}
		}
		sources, err := claudecode.LoadSources(paths, loadOpts)
		if err != nil {
			return loadedHooks{}, err
		}
		if scripts != nil {
			if loaded.snapshot, err = claudecode.SnapshotOf(sources); err != nil {
				return loadedHooks{}, err
			}
		}
		loaded.mcpServers = claudecode.MergedMCPServerSettings(sources)
		loaded.env, _ = claudecode.CommandEnv(sources)
		for _, src := range sources {
			r.AddSource(src.Registered())
			cfg.Logger.Info("loaded hook settings", "path", src.Path, "kind", string(src.Kind), "dialect", string(src.Dialect),
				"dialect_reason", src.DialectReason, "hooks", len(src.Hooks))
			for _, w := range src.Warnings {
				cfg.Logger.Warn("hook settings: "+w, "path", src.Path)
			}
		}
		if p := claudecode.NewPermissions(sources); p != nil {
			if host != nil {
				p.UseSandbox(host.CommandsSandboxed)
			}
			claudecode.UseSettingsMode(sources, p.Mode())
			r.SetPermissionPolicy(p)
			cfg.Logger.Info("loaded permission rules", "default_mode", p.Mode())
		}
		if host != nil {
			// Claude Code's Bash sandbox, for exec_command and process_exec.
			if err := host.SetCommandSandbox(claudecode.CommandPolicy(sources)); err != nil {
				return loadedHooks{}, err
			}
			// Their "env", which Claude Code gives every process of a
			// session, Bash commands included.
			host.SetCommandEnv(claudecode.CommandEnv(sources))
		}
	}
	if r.PermissionPolicy() == nil {
		// No settings file sets permissions: a session's permission_mode,
		// which the kernel names per assignment, still applies.
		r.SetPermissionPolicy(claudecode.SessionModes())
	}
	r.Add(builtin.NewAuditLogHook(store, 0, cfg.Logger.Warn))
	for _, h := range cfg.Hooks {
		r.Add(h)
	}
	// Last, so it sees every other hook's rewrite of the output.
	r.Add(builtin.NewRedactionHook(cfg.Redactor))
	// Closes the browser sessions a turn or a canceled run leaves; here
	// rather than in New, so policy-diff (no host) and a SIGHUP reload
	// build the same registry, hence the same policy fingerprint.
	r.Add(browserSessionEnd{host: host})
	return loaded, nil
}

// hookPaths are the hook settings sources: HooksFile's entries, then
// HookSources.
func hookPaths(cfg Config) []string {
	var paths []string
	if cfg.HooksFile != "" {
		paths = append(paths, filepath.SplitList(cfg.HooksFile)...)
	}
	return append(paths, cfg.HookSources...)
}

// Start begins polling both queues.
func (w *Worker) Start() error {
	w.warnOfAnotherHostWorker()
	if err := w.shared.Start(); err != nil {
		return fmt.Errorf("start worker on task queue %q: %w", w.cfg.TaskQueue, err)
	}
	if err := w.hostWorker.Start(); err != nil {
		w.shared.Stop()
		return fmt.Errorf("start worker on host queue %q: %w", w.Host.Queue, err)
	}
	w.startContextGC()
	w.startTranscriptSweep()
	w.startEndedRunsSweep()
	w.cfg.Logger.Info("fenix worker started", "task_queue", w.cfg.TaskQueue, "host_queue", w.Host.Queue, "host_id", w.Host.ID)
	return nil
}

// warnOfAnotherHostWorker logs a warning when another worker polled this
// host's queue within the last poll interval: two workers with one
// FENIX_HOST_ID on two data directories each answer half of the calls
// pinned to the host (a command_run_read finds its run on one of them
// only). A worker restarted after a crash sees its predecessor's last
// poll too, which the warning says.
func (w *Worker) warnOfAnotherHostWorker() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := w.client.DescribeTaskQueue(ctx, w.Host.Queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return
	}
	own := fmt.Sprintf("%d@", os.Getpid())
	for _, p := range resp.GetPollers() {
		seen := time.Since(p.GetLastAccessTime().AsTime())
		if strings.HasPrefix(p.GetIdentity(), own) || seen > 70*time.Second {
			continue
		}
		w.cfg.Logger.Warn("another worker polls this host's queue: if it is alive and keeps another data directory, the calls pinned to the host (command_run_read, process_list, process_stop) split between the two, and each finds only its own runs; give every worker its own FENIX_HOST_ID (a worker restarted after a crash sees its predecessor here for a minute)",
			"host_queue", w.Host.Queue, "other_identity", p.GetIdentity(), "last_polled", seen.Round(time.Second).String())
	}
}

// Stop drains in-flight tasks, stops polling, stops this host's commands
// and services, and closes the stores.
func (w *Worker) Stop() {
	w.stopEndedRunsSweep()
	w.hostWorker.Stop()
	w.shared.Stop()
	// The MCP servers first: their stdio processes start through the
	// host's confinement, which must not close under a server starting.
	if w.mcp != nil {
		w.mcp.Close()
	}
	if err := w.Host.Close(); err != nil {
		w.cfg.Logger.Warn("stopping host processes failed", "error", err)
	}
	w.stopContextGC()
	w.stopTranscriptSweep()
	if err := w.audit.Close(); err != nil {
		w.cfg.Logger.Warn("closing the audit store failed", "error", err)
	}
	closeContextStore(w.contexts)
	w.cfg.Logger.Info("fenix worker stopped", "task_queue", w.cfg.TaskQueue)
}

// MCP is the worker's MCP servers, nil when none are configured.
func (w *Worker) MCP() *mcp.Manager { return w.mcp }

// Audit is the worker's audit store.
func (w *Worker) Audit() audit.Store { return w.audit }

// Run starts the worker and blocks until ctx is done.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

// NewSDKLogger adapts slog for the Temporal SDK.
func NewSDKLogger(l *slog.Logger) sdklog.Logger { return sdklog.NewStructuredLogger(l) }

// The metrics registry is what activities record into.
var _ activities.Recorder = (*observability.Metrics)(nil)
