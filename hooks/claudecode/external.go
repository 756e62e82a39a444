package claudecode

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/fenixrt/fenix/hooks"
)

// DefaultCommandTimeout bounds a command or http hook without its own
// timeout: Claude Code's default of 600 seconds.
const DefaultCommandTimeout = 600 * time.Second

// DefaultPromptHookTimeout is Claude Code's shorter default for
// UserPromptSubmit hooks, which hold up every turn.
const DefaultPromptHookTimeout = 30 * time.Second

// agentScope restricts a Stop hook to main agents or to subagents.
type agentScope int

const (
	anyAgent agentScope = iota
	mainAgents
	subagents
)

// eventSpec is what a settings-file event name means in a dialect.
type eventSpec struct {
	event hooks.Event
	scope agentScope
	// modelFailure narrows EventError to a failed model call, which ends
	// the turn: Claude Code's StopFailure.
	modelFailure bool
}

// settingsEvents are the event names both dialects share.
var settingsEvents = map[string]eventSpec{
	"SessionStart":       {event: hooks.EventSessionStart},
	"UserPromptSubmit":   {event: hooks.EventUserPromptSubmit},
	"PreToolUse":         {event: hooks.EventPreToolUse},
	"PermissionRequest":  {event: hooks.EventPermissionRequest},
	"PermissionDenied":   {event: hooks.EventPermissionDenied},
	"PostToolUse":        {event: hooks.EventPostToolUse},
	"PostToolUseFailure": {event: hooks.EventPostToolUseFailure},
	"PostToolBatch":      {event: hooks.EventPostToolBatch},
	"Notification":       {event: hooks.EventNotification},
	"Elicitation":        {event: hooks.EventElicitation},
	"ElicitationResult":  {event: hooks.EventElicitationResult},
	"SubagentStart":      {event: hooks.EventSubagentStart},
	"Stop":               {event: hooks.EventStop, scope: mainAgents},
	"StopFailure":        {event: hooks.EventError, scope: mainAgents, modelFailure: true},
	"PreCompact":         {event: hooks.EventPreCompact},
	"ConfigChange":       {event: hooks.EventConfigChange},
	"PostCompact":        {event: hooks.EventPostCompact},
	"SessionEnd":         {event: hooks.EventSessionStop},
	// Fenix extensions; Claude Code has no such events.
	"StepComplete": {event: hooks.EventStepComplete},
	"Error":        {event: hooks.EventError},
}

// eventSpecFor maps a settings-file event name. "SubagentStop" is Claude
// Code's stop of a subagent's own turn (it can keep the subagent going); in
// a Fenix file it keeps its older meaning, the parent's notice that a
// subagent ended.
func eventSpecFor(d Dialect, name string) (eventSpec, bool) {
	if name == "SubagentStop" {
		if d == DialectFenix {
			return eventSpec{event: hooks.EventSubagentStop}, true
		}
		return eventSpec{event: hooks.EventStop, scope: subagents}, true
	}
	spec, ok := settingsEvents[name]
	return spec, ok
}

// SettingsEventNames lists the event names a hook settings file may use.
func SettingsEventNames() []string {
	names := []string{"SubagentStop"}
	for name := range settingsEvents {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// transport delivers the event JSON to a command or an endpoint.
type transport interface {
	kind() string
	describe() string
	identity() string
	call(ctx context.Context, h *ExternalHook, s hooks.Session, payload []byte) (outcome, error)
}

// selector is one matcher group's filter: the group's matcher and the
// handler's "if" rule.
type selector struct {
	matcher Matcher
	rule    *ifRule
}

// HookPaths are the directories a hook settings file gives its hooks.
type HookPaths struct {
	// Dir is the settings file's directory: where commands run when the
	// event has no workspace, and $FENIX_HOOKS_DIR.
	Dir string
	// ProjectDir is $CLAUDE_PROJECT_DIR: the directory holding the
	// settings file's .claude/. Empty means the session's workspace root.
	ProjectDir string
	// PluginRoot and PluginData are $CLAUDE_PLUGIN_ROOT and
	// $CLAUDE_PLUGIN_DATA for a plugin's hooks/hooks.json.
	PluginRoot string
	PluginData string
}

// ExternalHook answers one settings-file event by running a command or
// POSTing to an endpoint, speaking Claude Code's hook protocol: the event
// as JSON on stdin (or as the request body); JSON on stdout (or the
// response body) read on every exit code; exit 2 blocks with stderr as
// the reason; any other failure is non-blocking unless the hook fails
// closed (onFailure: "block").
type ExternalHook struct {
	name       string
	eventName  string
	spec       eventSpec
	selectors  []selector
	dialect    Dialect
	failClosed bool
	timeout    time.Duration
	async      bool
	paths      HookPaths
	transport  transport
	// sourcePath is the settings file the hook came from.
	sourcePath string
	// settingsMode is the loaded files' effective defaultMode
	// (UseSettingsMode): the permission_mode hooks see when the session
	// names none.
	settingsMode string
	// settingsEnv is the settings file's "env": variables its command
	// hooks get besides the few they inherit from the worker.
	settingsEnv map[string]string
	logger      *slog.Logger
	launcher    Launcher
	workerEnv   map[string]string
}

var (
	_ hooks.AgentHook    = (*ExternalHook)(nil)
	_ hooks.FeedbackHook = (*ExternalHook)(nil)
)

// ExternalHookConfig is what command and http hooks share.
type ExternalHookConfig struct {
	// Event is the settings-file event name, e.g. "PreToolUse".
	Event string
	// Matcher filters by tool name (or, per event, the source, agent type,
	// notification type, compaction trigger, error type, MCP server name)
	// with Claude Code's semantics; see Matcher.
	Matcher string
	// If is a permission rule ("Bash(rm *)") narrowing tool events.
	If string
	// Dialect defaults to DialectFenix.
	Dialect Dialect
	// Timeout defaults to DefaultCommandTimeout (DefaultPromptHookTimeout
	// for UserPromptSubmit).
	Timeout time.Duration
	// FailClosed makes a failure (cannot start, timeout, unexpected exit,
	// invalid output) block the action instead of allowing it.
	FailClosed bool
	// Async runs the hook in the background; its output is not applied.
	Async bool
	// Name identifies the hook; defaults to the event and command or URL.
	Name  string
	Paths HookPaths
	// Source is the settings file, for messages.
	Source string
	// Logger receives what the operator must see: a hook that could not
	// start is logged at error level naming its file. Default slog.Default().
	Logger *slog.Logger
	// Env is the settings file's "env" key: variables command hooks get.
	// Of the worker's own environment they inherit only PATH, HOME, the
	// locale and a few more (see inheritedEnv), never its secrets.
	Env map[string]string
	// Launcher starts a command hook's process; nil starts it plainly.
	Launcher Launcher
	// WorkerEnv are variables the worker sets for every command hook,
	// under the settings file's "env" (see LoadOptions.HookEnv).
	WorkerEnv map[string]string
}

// Launcher starts a command hook's process for the session's workspace:
// the worker's keeps hooks out of its own state (a confine.Confiner), so
// that agent-written code a hook runs — a git config's fsmonitor, a
// workspace's node_modules/.bin — cannot rewrite the pinned guards or the
// audit log. release is called once the process was reaped.
type Launcher interface {
	Start(cmd *exec.Cmd, workspace string) (release func(), err error)
}

// CommandHookConfig describes one command hook.
type CommandHookConfig struct {
	ExternalHookConfig
	// Command runs through sh -c (shell form), or is the program to spawn
	// with Args (exec form, when Args is non-nil).
	Command string
	Args    []string
	// Shell is "" or "bash" for shell form.
	Shell string
	// Written and WrittenArgs are the command as the settings file wrote
	// it, when Command and Args were rewritten to run pinned copies of
	// its scripts: hooks are named and deduplicated by what was written.
	Written     string
	WrittenArgs []string
	// Absent are scripts that did not exist when the settings were
	// loaded, so none was pinned: the hook cannot start while this policy
	// stays, whatever is written there later.
	Absent []string
	// Scripts is the store of pinned scripts. A settings file outside
	// every project names some scripts from the workspace; they are
	// pinned into it at the hook's first run in each workspace (see
	// workspacePins).
	Scripts *ScriptStore
	// WorkspacePins records those pins across restarts (see
	// LoadOptions.WorkspacePins).
	WorkspacePins *WorkspacePinBook
}

// HTTPHookConfig describes one http hook.
type HTTPHookConfig struct {
	ExternalHookConfig
	URL            string
	Headers        map[string]string
	AllowedEnvVars []string
	Policy         HTTPPolicy
}

// NewCommandHook validates cfg and builds the hook.
func NewCommandHook(cfg CommandHookConfig) (*ExternalHook, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, fmt.Errorf("command hook for %s has an empty command", cfg.Event)
	}
	switch cfg.Shell {
	case "", "bash", "sh":
	default:
		return nil, fmt.Errorf("command hook %q for %s: shell %q is not available (use bash)", cfg.Command, cfg.Event, cfg.Shell)
	}
	vars := cfg.Paths.placeholders()
	if cfg.Args == nil {
		vars = shellVars(vars, cfg.Env)
	}
	scripts := scriptFiles(cfg.Command, cfg.Args, cfg.Args != nil, vars, cfg.Paths.ProjectDir)
	written, writtenArgs := cfg.Written, cfg.WrittenArgs
	if written == "" {
		written, writtenArgs = cfg.Command, cfg.Args
	}
	return newExternalHook(cfg.ExternalHookConfig, &commandTransport{command: cfg.Command, args: cfg.Args,
		execForm: cfg.Args != nil, shell: cfg.Shell, scripts: scripts, absent: cfg.Absent, written: written, writtenArgs: writtenArgs,
		inWorkspace: newWorkspacePins(cfg, cfg.Scripts)})
}

// NewHTTPHook validates cfg and builds the hook.
func NewHTTPHook(cfg HTTPHookConfig) (*ExternalHook, error) {
	t, err := newHTTPTransport(cfg.URL, cfg.Headers, cfg.AllowedEnvVars, cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("http hook for %s: %w", cfg.Event, err)
	}
	return newExternalHook(cfg.ExternalHookConfig, t)
}

func newExternalHook(cfg ExternalHookConfig, t transport) (*ExternalHook, error) {
	if cfg.Dialect == "" {
		cfg.Dialect = DialectFenix
	}
	spec, ok := eventSpecFor(cfg.Dialect, cfg.Event)
	if !ok {
		return nil, fmt.Errorf("hook event %q is not fired by Fenix; it fires %s", cfg.Event, strings.Join(SettingsEventNames(), ", "))
	}
	sel, err := newSelector(cfg.Matcher, cfg.If, cfg.Paths.ProjectDir)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%s hook %q for %s has a negative timeout %s", t.kind(), t.describe(), cfg.Event, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultCommandTimeout
		if spec.event == hooks.EventUserPromptSubmit {
			cfg.Timeout = DefaultPromptHookTimeout
		}
	}
	name := cfg.Name
	if name == "" {
		// The whole command or URL: a cut name could not be told apart
		// from another hook's in a reason or the trace.
		name = fmt.Sprintf("%s %s %s", cfg.Event, t.kind(), t.describe())
	}
	return &ExternalHook{
		name:        name,
		eventName:   cfg.Event,
		spec:        spec,
		selectors:   []selector{sel},
		dialect:     cfg.Dialect,
		failClosed:  cfg.FailClosed,
		timeout:     cfg.Timeout,
		async:       cfg.Async,
		paths:       cfg.Paths,
		transport:   t,
		sourcePath:  cfg.Source,
		settingsEnv: cfg.Env,
		logger:      cmp.Or(cfg.Logger, slog.Default()),
		launcher:    cfg.Launcher,
		workerEnv:   cfg.WorkerEnv,
	}, nil
}

func newSelector(matcher, ifText, projectDir string) (selector, error) {
	m, err := CompileMatcher(matcher)
	if err != nil {
		return selector{}, err
	}
	sel := selector{matcher: m}
	if strings.TrimSpace(ifText) != "" {
		if sel.rule, err = parseIfRule(ifText, projectDir); err != nil {
			return selector{}, err
		}
	}
	return sel, nil
}

func (h *ExternalHook) Name() string { return h.name }

// FailClosed reports whether failures block instead of allow.
func (h *ExternalHook) FailClosed() bool { return h.failClosed }

// Event is the Fenix event the hook handles.
func (h *ExternalHook) Event() hooks.Event { return h.spec.event }

// Dialect is the dialect of the settings file the hook came from.
func (h *ExternalHook) Dialect() Dialect { return h.dialect }

// Type is "command" or "http".
func (h *ExternalHook) Type() string { return h.transport.kind() }

// Concurrent reports that the hook may run alongside the other command
// and http hooks of its event, as in Claude Code.
func (h *ExternalHook) Concurrent() bool { return true }

// Timeout is the hook's own timeout.
func (h *ExternalHook) Timeout() time.Duration { return h.timeout }

func (h *ExternalHook) HandlesEvent(ev hooks.Event) bool { return ev == h.spec.event }

// UsesTranscript tells the worker to materialize the transcript file
// before the hook runs.
func (h *ExternalHook) UsesTranscript() bool { return true }

// merge folds a duplicate handler (same event, dialect and command or URL)
// into h, as Claude Code runs identical handlers once: h then runs when any
// of their selectors matches, fails closed if either does and waits for the
// longer timeout.
func (h *ExternalHook) merge(other *ExternalHook) {
	h.selectors = append(h.selectors, other.selectors...)
	h.failClosed = h.failClosed || other.failClosed
	h.timeout = max(h.timeout, other.timeout)
}

// dedupKey identifies handlers Claude Code would deduplicate.
func (h *ExternalHook) dedupKey() string {
	return h.eventName + "\x00" + string(h.dialect) + "\x00" + h.transport.identity()
}

// matchesTool applies the selectors to a tool call: some group's matcher
// must match one of the tool's names and its "if" rule, when set, the call.
func (h *ExternalHook) matchesTool(tool string, args map[string]any, root string) bool {
	names := toolNamesFor(h.dialect, tool)
	ruleNames := append(append([]string{}, ToolNames(tool)...), tool)
	for _, s := range h.selectors {
		if !s.matcher.Match(names...) {
			continue
		}
		if s.rule == nil || s.rule.matches(ruleNames, tool, args, root) {
			return true
		}
	}
	return false
}

// matchesSubject applies the selectors to a non-tool event. A handler with
// an "if" rule never runs on these events, as in Claude Code; events
// without matcher support ignore the matcher.
func (h *ExternalHook) matchesSubject(subject string, hasSubject bool) bool {
	for _, s := range h.selectors {
		if s.rule != nil {
			continue
		}
		if !hasSubject || s.matcher.Match(subject) {
			return true
		}
	}
	return false
}

// environment is what the hook event sets in the hook's process, on top
// of hookEnv's inherited variables and the settings file's "env"
// (exec-form placeholders use it too).
func (h *ExternalHook) environment(s hooks.Session) map[string]string {
	env := map[string]string{
		"FENIX_HOOK_EVENT": h.eventName,
		"FENIX_SESSION_ID": s.SessionID,
		"FENIX_HOOKS_DIR":  h.paths.Dir,
	}
	project := h.paths.ProjectDir
	if project == "" {
		project = s.WorkspaceRoot
	}
	if project != "" {
		env["CLAUDE_PROJECT_DIR"] = project
	}
	if s.WorkspaceRoot != "" {
		env["FENIX_WORKSPACE_ROOT"] = s.WorkspaceRoot
	}
	if h.paths.PluginRoot != "" {
		env["CLAUDE_PLUGIN_ROOT"] = h.paths.PluginRoot
	}
	if h.paths.PluginData != "" {
		env["CLAUDE_PLUGIN_DATA"] = h.paths.PluginData
	}
	return env
}

func (h *ExternalHook) workDir(s hooks.Session) string {
	if d := s.WorkDir(); d != "" {
		return d
	}
	return h.paths.Dir
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
