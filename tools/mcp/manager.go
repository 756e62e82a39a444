// Package mcp makes the tools of MCP servers Fenix tools. A Manager runs
// the servers of a Claude Code-style .mcp.json (stdio servers as child
// processes of this worker host, Streamable HTTP servers through the
// outbound guard), keeps each one's tool list current (tools/list_changed)
// and serves the tools to the registry (tools.Source) as
// mcp__<server>__<tool>, so they go through the same governed pipeline as
// built-in tools: review against allowed_tool_names and the tool's
// inputSchema, hooks, host-pinned execution, projection, audit.
//
// A server that fails to start or initialize is logged with its error and
// stderr and retried with exponential backoff; a stdio server that exits is
// restarted the same way. Its tools are unavailable meanwhile
// (ToolUnavailableError) and every other tool keeps working.
package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/redact"
	"github.com/fenixrt/fenix/tools"
)

// Defaults of Options.
const (
	DefaultCallTimeout    = 10 * time.Minute
	DefaultConnectTimeout = 30 * time.Second
	DefaultStartWait      = 20 * time.Second
	minBackoff            = time.Second
	maxBackoff            = time.Minute
	// heartbeat is an MCP call's heartbeat timeout: a cancel reaches the
	// call within the worker's heartbeat throttle, a dead worker is
	// noticed within this.
	heartbeat = 30 * time.Second
	// stableAfter is how long a session must have lived for its next
	// restart to start again from minBackoff.
	stableAfter = time.Minute
)

// Options configure a Manager.
type Options struct {
	// HostID is this worker host's ID; calls are pinned to it.
	HostID string
	// WorkDir is a stdio server's working directory when its config has
	// no cwd (the worker's default workspace root); empty means the
	// directory of its .mcp.json.
	WorkDir string
	// Net is the outbound policy http servers go through (the worker's
	// web_fetch policy); the host named in a server's url is added to it.
	Net netguard.Policy
	// Contexts stores result content too large for history; nil keeps
	// large content out of the result with a note instead.
	Contexts contextstore.Store
	// Redactor cleans text before it is stored (the worker's, which
	// cleans the result history keeps): a reader of the store — the MCP
	// gateway sending a client the whole of a long text — gets what the
	// model would. Nil stores text as the server sent it.
	Redactor *redact.Redactor
	// InlineLimit is the largest content item kept inline in a result
	// (default 64 KiB).
	InlineLimit    int
	CallTimeout    time.Duration
	ConnectTimeout time.Duration
	Logger         *slog.Logger
	// ReadOnly, when set, lists what a stdio server (and a headersHelper)
	// may read but not write in its workspace, as the agent's commands
	// (confine.CommandOptions.ReadOnly): a server acts on the agent's
	// arguments, and the filesystem server rooted at the workspace wrote
	// .git/config as readily as any file.
	ReadOnly func(workspace string) []string
	// Launcher starts the stdio servers confined; nil starts them as
	// the worker's plain children.
	Launcher Launcher
	// Rules keep servers from starting (see ServerRules); a call to the
	// tool of one they keep out is refused naming the setting.
	Rules ServerRules
	// HelperEnv is the environment a server's headersHelper runs with
	// (the worker gives it a hook's: a shell session's variables, not
	// the worker's secrets); CLAUDE_CODE_MCP_SERVER_NAME and _URL are
	// added. Nil: PATH and HOME.
	HelperEnv []string
	// Credentials hold the OAuth sign-ins of http servers (see Login);
	// nil sends only the configured headers.
	Credentials *CredentialStore
}

// Launcher starts a stdio server's process (whose SysProcAttr places
// it in its cgroup) confined, as the worker's hooks are: a server is
// the worker's, but it acts on the agent's arguments, so one rooted at
// the home directory must not rewrite the pinned guards or the audit
// log, and one that makes requests must not reach the Temporal
// frontend. release is called once the process was reaped.
// *confine.Confiner is one.
type Launcher interface {
	StartCommand(cmd *exec.Cmd, o confine.CommandOptions) (release func(), err error)
}

// Manager runs the configured MCP servers. Its methods are safe for
// concurrent use.
type Manager struct {
	opts Options
	// set is the servers configured now; Reconfigure replaces it whole,
	// so a reader sees one configuration.
	set atomic.Pointer[serverSet]
	// mu serializes Start, Reconfigure and Close.
	mu sync.Mutex
	// ctx is what the servers run under once started; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// offered are the tools of the server features beyond tools
	// (resources, subscriptions, prompts, completions).
	offered []offeredTools
	// waitingWatches counts the watch_mcp_resource calls waiting.
	waitingWatches atomic.Int64
}

// serverSet is one configuration of the manager's servers.
type serverSet struct {
	servers map[string]*server
	order   []string
	// refused are the servers Options.Rules keep out, by name.
	refused map[string]Refusal
}

// current is the servers configured now.
func (m *Manager) current() *serverSet { return m.set.Load() }

// NewManager prepares the servers; Start connects them.
func NewManager(configs []ServerConfig, opts Options) (*Manager, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.InlineLimit <= 0 {
		opts.InlineLimit = contextstore.DefaultInlineLimit
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := tools.ValidateHostID(opts.HostID); err != nil {
		return nil, fmt.Errorf("MCP manager: %w", err)
	}
	m := &Manager{opts: opts}
	m.offered = []offeredTools{
		{resourcesFeature, m.resourceTools()},
		{subscriptionsFeature, m.subscriptionTools()},
		{promptsFeature, m.promptTools()},
		{completionsFeature, m.completionTools()},
	}
	set, err := m.newSet(configs, opts.Rules, nil)
	if err != nil {
		return nil, err
	}
	m.set.Store(set)
	return m, nil
}

// newSet is the servers of configs under rules, reusing those of
// running whose configuration is unchanged.
func (m *Manager) newSet(configs []ServerConfig, rules ServerRules, running *serverSet) (*serverSet, error) {
	set := &serverSet{servers: map[string]*server{}, refused: map[string]Refusal{}}
	configs, refusals := rules.Apply(configs)
	for _, r := range refusals {
		set.refused[r.Server.Name] = r
	}
	for _, c := range configs {
		if _, dup := set.servers[c.Name]; dup {
			return nil, fmt.Errorf("MCP server %q is configured twice (%s)", c.Name, c.Path)
		}
		s := newServer(c, m)
		if running != nil {
			if old, ok := running.servers[c.Name]; ok && old.cfg.equal(c) {
				s = old
			}
		}
		set.servers[c.Name] = s
		set.order = append(set.order, c.Name)
	}
	sort.Strings(set.order)
	return set, nil
}

// Start connects every server in the background and waits up to wait
// (DefaultStartWait when 0) for each first attempt, so a worker that
// starts serving has the tools of the servers that came up. Servers still
// failing keep retrying; Start never fails because of them.
func (m *Manager) Start(wait time.Duration) {
	if wait <= 0 {
		wait = DefaultStartWait
	}
	m.mu.Lock()
	m.ctx, m.cancel = context.WithCancel(context.Background())
	set := m.current()
	for _, name := range set.order {
		m.run(set.servers[name])
	}
	m.mu.Unlock()
	m.waitFirstAttempts(set, set.order, wait)
}

// run starts s's connection loop under the manager's context and one of
// its own, which stop ends (m.mu held).
func (m *Manager) run(s *server) {
	ctx, stop := context.WithCancel(m.ctx)
	s.stop = stop
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.run(ctx)
	}()
}

// waitFirstAttempts waits up to wait for the first connection attempt of
// each of names.
func (m *Manager) waitFirstAttempts(set *serverSet, names []string, wait time.Duration) {
	deadline := time.After(wait)
	for _, name := range names {
		select {
		case <-set.servers[name].firstAttempt:
		case <-deadline:
			return
		}
	}
}

// Close stops every server (stdio children are asked to exit, then killed).
func (m *Manager) Close() {
	m.mu.Lock()
	if m.cancel != nil {
		m.cancel()
	}
	for _, s := range m.current().servers {
		s.close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// WaitReady blocks until the named servers (all when none are named) are
// connected, or ctx ends; the error names the servers still down.
func (m *Manager) WaitReady(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		names = m.current().order
	}
	for {
		var down []string
		for _, n := range names {
			s, ok := m.current().servers[n]
			if !ok {
				return fmt.Errorf("MCP server %q is not configured", n)
			}
			if st := s.status(); !st.Connected {
				down = append(down, fmt.Sprintf("%s (%s)", n, st.LastError))
			}
		}
		if len(down) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("MCP servers not connected: %s", strings.Join(down, "; "))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ServerStatus describes one server for logs, tests and operators.
type ServerStatus struct {
	Name      string   `json:"name"`
	Type      string   `json:"type"`
	Connected bool     `json:"connected"`
	Tools     []string `json:"tools"`
	// Attempts counts connection attempts, Restarts sessions that ended.
	Attempts  int    `json:"attempts"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"last_error,omitempty"`
	// CancelsSent counts notifications/cancelled written to a stdio server.
	CancelsSent int `json:"cancels_sent"`
	// ListChanges counts tools/list_changed notifications handled.
	ListChanges int `json:"list_changes"`
	PID         int `json:"pid,omitempty"`
}

// Status lists every server's state, by name.
func (m *Manager) Status() []ServerStatus {
	set := m.current()
	out := make([]ServerStatus, 0, len(set.order))
	for _, n := range set.order {
		out = append(out, set.servers[n].status())
	}
	return out
}

// Tool implements tools.Source: a name under mcp__<server>__ belongs to
// that server; when the server is down the call cannot be served.
func (m *Manager) Tool(name string) (tools.Definition, bool, error) {
	for _, o := range m.offered {
		if i := slices.IndexFunc(o.tools, func(d tools.Definition) bool { return d.Name == name }); i >= 0 {
			return o.tools[i], true, nil
		}
	}
	s := m.serverOf(name)
	if s == nil {
		if server, why, ok := m.refusedServerOf(name); ok {
			return tools.Definition{}, false, fenixerr.New(fenixerr.TypePermissionDenied, "tool %q: MCP server %q is not started on this worker: %s", name, server, why)
		}
		return tools.Definition{}, false, nil
	}
	return s.tool(name)
}

// Refused says, for each server Options.Rules keep out, which setting
// did, for the log.
func (m *Manager) Refused() []string {
	var out []string
	refused := m.current().refused
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		out = append(out, refused[name].String())
	}
	return out
}

// ProjectResult implements tools.ResultProjector: every MCP result has
// the same shape, so a call that ran is projected even when its tool has
// since disappeared or its server is restarting.
func (m *Manager) ProjectResult(name string, args map[string]any, raw json.RawMessage) (tools.Projection, bool, error) {
	if m.serverOf(name) == nil {
		return tools.Projection{}, false, nil
	}
	p, err := project(args, raw)
	return p, true, err
}

// Definitions implements tools.Source: the tools of connected servers,
// and the resource, prompt and completion tools while one of them offers
// that feature.
func (m *Manager) Definitions() []tools.Definition {
	var out []tools.Definition
	set := m.current()
	for _, n := range set.order {
		out = append(out, set.servers[n].definitions()...)
	}
	for _, o := range m.offered {
		if len(m.serversFor(o.feature)) > 0 {
			out = append(out, o.tools...)
		}
	}
	return out
}

// Call runs a server's tool directly, outside the registry (mcp_tool hook
// handlers use it): tool is the server's own tool name, or its name as
// served. Either way the call goes to the one tool served under that
// registry name, never to a tool Fenix skipped.
func (m *Manager) Call(ctx context.Context, server, tool string, args map[string]any) (CallResult, error) {
	return m.CallAsking(ctx, server, tool, args, nil)
}

// CallAsking is Call whose server's questions during the call
// (elicitation) go to elicit; nil cancels them.
func (m *Manager) CallAsking(ctx context.Context, server, tool string, args map[string]any, elicit tools.Elicitor) (CallResult, error) {
	s, ok := m.current().servers[NormalizeName(server)]
	if !ok {
		return CallResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "MCP server %q is not configured on this worker", server)
	}
	name := ToolName(server, tool)
	d, ok, err := s.tool(name)
	if err != nil {
		return CallResult{}, err
	}
	if !ok {
		return CallResult{}, fenixerr.UnsupportedTool(name)
	}
	if err := d.Validate(args); err != nil {
		return CallResult{}, err
	}
	if own, ok := s.upstream.Load(name); ok {
		tool = own.(string)
	}
	return s.call(ctx, &tools.Env{Progress: func(contract.ToolOutputChunk) {}, Elicit: elicit}, tool, args)
}

// serverOf finds the server owning a registry name.
func (m *Manager) serverOf(name string) *server {
	return m.current().servers[serverPart(name)]
}

// refusedServerOf is the server the rules kept out whose tool name would
// be, and why.
func (m *Manager) refusedServerOf(name string) (server, why string, ok bool) {
	server = serverPart(name)
	r, ok := m.current().refused[server]
	return r.Server.Key, r.Reason, ok
}

// serverPart is the server in a tool name mcp__<server>__<tool>, or "".
func serverPart(name string) string {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return ""
	}
	server, _, ok := strings.Cut(rest, "__")
	if !ok {
		return ""
	}
	return server
}

// resourceID names the host-owned session of a server, so review pins
// its calls to this host's queue.
func (m *Manager) resourceID(server string) string {
	sum := sha256.Sum256([]byte(server))
	return "mcp_" + m.opts.HostID + "_" + hex.EncodeToString(sum[:8])
}

// unavailable is the error of a call to a server that is down.
func unavailable(name, server, lastErr string) error {
	msg := fmt.Sprintf("MCP server %q is not connected", server)
	if lastErr != "" {
		msg += ": " + lastErr
	}
	return fenixerr.New(fenixerr.TypeToolUnavailable, "%s; it is retried with backoff (tool %q)", msg, name).WithTool(name).WithCode("mcp_server_unavailable")
}

var errClosed = errors.New("MCP manager closed")
