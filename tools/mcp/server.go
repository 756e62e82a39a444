package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workspace"
)

// maxNameBytes is the longest tool name model APIs accept (OpenAI's
// function names: 64).
const maxNameBytes = 64

// Bounds of what a server declares of a tool beyond running it
// (tools.Declared): every tool's travels in each ListTools result, whose
// 1 MiB one server's outsized schema must not take.
const (
	maxDeclaredTitle        = 1 << 10
	maxDeclaredOutputSchema = 64 << 10
)

// server is one configured MCP server and its current session.
type server struct {
	cfg ServerConfig
	m   *Manager

	firstAttempt chan struct{}
	firstOnce    sync.Once
	// stop ends its connection loop (Manager.run sets it).
	stop context.CancelFunc

	mu        sync.Mutex
	session   *sdk.ClientSession
	proc      *process // stdio servers only
	defs      map[string]tools.Definition
	names     []string
	attempts  int
	restarts  int
	lastError string
	closed    bool

	// upstream maps a registry name to the server's own tool name: after
	// usableNames the mapping is one to one.
	upstream sync.Map

	cancels     atomic.Int64
	listChanges atomic.Int64
	// refreshes counts the tools/list_changed notifications not yet
	// answered by a listing: one refresh runs at a time, and the
	// notifications that came while it ran are answered by one more
	// (refreshAfterChange).
	refreshes atomic.Int64
	tokens    sync.Map // progress token -> func(*sdk.ProgressNotificationParams)
	nextToken atomic.Int64
	// inflight are the calls the session serves, one of which a question
	// the server asks belongs to (see elicitation.go).
	inflight inflight
	// subs are the resource subscriptions watch_mcp_resource made.
	subs subscriptions
}

func newServer(cfg ServerConfig, m *Manager) *server {
	return &server{cfg: cfg, m: m, firstAttempt: make(chan struct{})}
}

func (s *server) logger() *slog.Logger {
	return s.m.opts.Logger.With("mcp_server", s.cfg.Name, "transport", s.cfg.Type)
}

// run connects, serves until the session ends, and reconnects with
// exponential backoff until ctx ends.
func (s *server) run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		started := time.Now()
		session, err := s.connect(ctx)
		s.firstOnce.Do(func() { close(s.firstAttempt) })
		if err != nil {
			s.mu.Lock()
			s.lastError = err.Error()
			attempts := s.attempts
			s.mu.Unlock()
			s.logger().Error("MCP server failed to start; retrying", "attempt", attempts, "retry_in", backoff.String(), "error", err)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		s.logger().Info("MCP server connected", "tools", len(s.definitions()))
		waitErr := session.Wait()
		// Its subscriptions ended with it: the watches waiting on them
		// answer now, as an update may come unheard.
		s.subs.ended(session)
		s.mu.Lock()
		s.session = nil
		s.defs, s.names = nil, nil
		s.restarts++
		s.lastError = "session ended"
		if waitErr != nil {
			s.lastError = "session ended: " + waitErr.Error()
		}
		if s.proc != nil {
			s.lastError += s.proc.stderrNote()
		}
		closed := s.closed
		s.mu.Unlock()
		if closed || ctx.Err() != nil {
			return
		}
		if time.Since(started) > stableAfter {
			backoff = minBackoff
		}
		s.logger().Warn("MCP server session ended; restarting", "retry_in", backoff.String(), "error", s.status().LastError)
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// connect starts the transport, initializes the session and lists the
// tools; the session is installed only when all three succeed.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	s.attempts++
	s.mu.Unlock()
	transport, proc, err := s.transport(ctx)
	if err != nil {
		return nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "fenix", Version: "1"}, &sdk.ClientOptions{
		Capabilities:       withRoots(&sdk.ClientCapabilities{Elicitation: elicitCapabilities}),
		ElicitationHandler: s.elicit,
		//lint:ignore SA1019 see logs.go: servers still log during SEP-2577's deprecation window.
		LoggingMessageHandler: s.logMessage,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.listChanges.Add(1)
			// Not in the handler: it runs on the session's read loop,
			// which must keep reading for tools/list to answer. A storm
			// of notifications starts one refresh, not one each.
			if s.refreshes.Add(1) == 1 {
				go s.refreshAfterChange()
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				s.subs.updated(req.Session, req.Params.URI)
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			if f, ok := s.tokens.Load(fmt.Sprint(req.Params.ProgressToken)); ok {
				f.(func(*sdk.ProgressNotificationParams))(req.Params)
			}
		},
	})
	s.offerRoots(client)
	cctx, cancel := context.WithTimeout(ctx, s.m.opts.ConnectTimeout)
	defer cancel()
	session, err := client.Connect(cctx, transport, nil)
	if err != nil {
		if proc != nil {
			proc.kill()
			return nil, fmt.Errorf("initialize: %w%s", err, proc.stderrNote())
		}
		return nil, fmt.Errorf("initialize: %w", err)
	}
	defs, names, err := s.listTools(cctx, session)
	if err != nil {
		session.Close()
		if proc != nil {
			return nil, fmt.Errorf("tools/list: %w%s", err, proc.stderrNote())
		}
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	s.askForLogs(cctx, session)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		session.Close()
		return nil, errClosed
	}
	s.session, s.proc, s.defs, s.names, s.lastError = session, proc, defs, names, ""
	return session, nil
}

// refreshAfterChange re-lists the tools after tools/list_changed: tools
// that disappeared are unsupported from now on.
func (s *server) refreshAfterChange() {
	for {
		pending := s.refreshes.Load()
		s.refreshTools()
		if s.refreshes.Add(-pending) == 0 {
			return
		}
	}
}

// refreshTools lists the tools again and keeps the new list.
func (s *server) refreshTools() {
	s.mu.Lock()
	session := s.session
	s.mu.Unlock()
	if session == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.m.opts.ConnectTimeout)
	defer cancel()
	defs, names, err := s.listTools(ctx, session)
	if err != nil {
		s.logger().Warn("MCP server announced a tool list change but tools/list failed; keeping the previous list", "error", err)
		return
	}
	s.mu.Lock()
	if s.session == session {
		s.defs, s.names = defs, names
	}
	s.mu.Unlock()
	s.logger().Info("MCP server tool list changed", "tools", names)
}

// listTools turns the server's tools into definitions. A tool whose name
// or schema Fenix cannot use is skipped with a warning (see usableNames).
func (s *server) listTools(ctx context.Context, session *sdk.ClientSession) (map[string]tools.Definition, []string, error) {
	listed, err := s.boundedTools(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	defs := map[string]tools.Definition{}
	var names []string
	for _, t := range s.usableNames(listed) {
		d, err := s.define(t)
		if err != nil {
			s.logger().Warn(fmt.Sprintf("MCP tool %q of server %q skipped: %v", t.Name, s.cfg.Name, err), "tool", t.Name)
			continue
		}
		if d.SchemaUnchecked() {
			s.logger().Info(fmt.Sprintf("MCP tool %q of server %q has an input schema that refers back into itself: Fenix bounds its arguments' size and leaves the rest to the server (validating them could take time exponential in their depth)", t.Name, s.cfg.Name), "tool", t.Name)
		}
		defs[d.Name] = d
		names = append(names, d.Name)
		s.upstream.Store(d.Name, t.Name)
	}
	return defs, names, nil
}

// Bounds of a server's tools/list: a server answering 8 MB pages, each
// with a next cursor, held a gigabyte of the worker's memory until the
// connect timeout, on every connection and every list change.
const (
	maxToolPages = 50
	maxTools     = 2000
	// maxToolListBytes bounds the listed tools, as encoded.
	maxToolListBytes = 16 << 20
)

// boundedTools reads the server's tools/list pages within the bounds
// above; past one, it keeps what it read and says so in the log.
func (s *server) boundedTools(ctx context.Context, session *sdk.ClientSession) ([]*sdk.Tool, error) {
	var listed []*sdk.Tool
	budget := maxToolListBytes
	cursor := ""
	for page := 0; ; page++ {
		if page == maxToolPages {
			s.logger().Warn(fmt.Sprintf("MCP server %q lists more than %d pages of tools: the rest are not served", s.cfg.Name, maxToolPages))
			return listed, nil
		}
		res, err := session.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			raw, _ := json.Marshal(t)
			if len(listed) == maxTools || !spend(&budget, len(raw)) {
				s.logger().Warn(fmt.Sprintf("MCP server %q lists more than %d tools or %d MiB of them: the rest are not served", s.cfg.Name, maxTools, maxToolListBytes>>20))
				return listed, nil
			}
			listed = append(listed, t)
		}
		if res.NextCursor == "" {
			return listed, nil
		}
		cursor = res.NextCursor
	}
}

// maxUpstreamName is the MCP spec's bound on a tool name (2025-11-25,
// "Tool names": 1 to 128 characters of A-Za-z0-9_-.).
const maxUpstreamName = 128

// usableNames keeps the tools whose names can be served unambiguously,
// so a hook matcher or permission rule written for one name never reaches
// another tool. A name outside the spec's characters is refused: a Unicode
// look-alike ("reаd" with a Cyrillic a) would otherwise be normalized into
// a name of its own that rules for the real one do not cover. Names that
// become the same mcp__<server>__<tool> ('.' is served as '_') or differ
// only in case are all refused, not the first kept: the order of
// tools/list is the server's to change, and with it which tool a rule
// would reach.
func (s *server) usableNames(listed []*sdk.Tool) []*sdk.Tool {
	byName := map[string][]string{}
	var valid []*sdk.Tool
	for _, t := range listed {
		if err := checkUpstreamName(t.Name); err != nil {
			s.logger().Warn(fmt.Sprintf("MCP tool %q of server %q skipped: %v", t.Name, s.cfg.Name, err), "tool", t.Name)
			continue
		}
		key := strings.ToLower(ToolName(s.cfg.Name, t.Name))
		byName[key] = append(byName[key], t.Name)
		valid = append(valid, t)
	}
	var out []*sdk.Tool
	for _, t := range valid {
		if same := byName[strings.ToLower(ToolName(s.cfg.Name, t.Name))]; len(same) > 1 {
			s.logger().Warn(fmt.Sprintf("MCP tool %q of server %q skipped: the server's tools %q would all be served as %s (ignoring case), so none of them is",
				t.Name, s.cfg.Name, same, ToolName(s.cfg.Name, t.Name)), "tool", t.Name)
			continue
		}
		out = append(out, t)
	}
	return out
}

// checkUpstreamName applies the MCP spec's tool-name rules.
func checkUpstreamName(name string) error {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("the name has %q (U+%04X), outside the characters MCP tool names may use (A-Z, a-z, 0-9, '_', '-', '.')", r, r)
		}
	}
	if name == "" || len(name) > maxUpstreamName {
		return fmt.Errorf("the name is %d characters; MCP tool names are 1 to %d", len(name), maxUpstreamName)
	}
	return nil
}

// define makes a registry definition of one server tool. Server
// annotations are recorded in the description's metadata and not trusted
// for retries: every MCP call is non-idempotent (never retried once
// started) and pinned to this host. readOnlyHint alone is honoured, as
// Claude Code's plan mode honours it: a tool without it is refused there.
func (s *server) define(t *sdk.Tool) (tools.Definition, error) {
	name := ToolName(s.cfg.Name, t.Name)
	if len(name) > maxNameBytes {
		return tools.Definition{}, fmt.Errorf("name %q is %d bytes, over the %d model APIs accept", name, len(name), maxNameBytes)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return tools.Definition{}, fmt.Errorf("inputSchema does not encode: %w", err)
	}
	if string(schema) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	resource := s.m.resourceID(s.cfg.Name)
	toolName := t.Name
	annotations := t.Annotations
	return tools.DefineDynamic(tools.DynamicSpec{
		Spec: tools.Spec{
			Name:             name,
			Description:      describe(t),
			RegistryBacked:   true,
			ReadOnly:         annotations != nil && annotations.ReadOnlyHint,
			WatchesWorkspace: true,
			Timeout:          s.m.opts.CallTimeout,
			Heartbeat:        heartbeat,
			Owner:            func(map[string]any) string { return resource },
			Declared:         s.declared(t),
		},
		Schema: schema,
		Execute: func(ctx context.Context, env *tools.Env, args map[string]any) (json.RawMessage, error) {
			res, err := s.call(ctx, env, toolName, args)
			if err != nil {
				return nil, err
			}
			res.Annotations = annotations
			return marshal(res)
		},
		Project: project,
	})
}

// declared is what the server declared of t for the MCP gateway's clients
// (tools.Declared): its title, output schema and annotations. An output
// schema over its bound is left out with a warning (the gateway then
// serves the tool without one, and its calls' structured content as
// Fenix's metadata).
func (s *server) declared(t *sdk.Tool) *tools.Declared {
	d := &tools.Declared{Title: cut(t.Title, maxDeclaredTitle)}
	if t.OutputSchema != nil {
		raw, err := json.Marshal(t.OutputSchema)
		switch {
		case err != nil:
			s.logger().Warn("MCP tool's output schema does not encode; served without it", "tool", t.Name, "error", err)
		case len(raw) > maxDeclaredOutputSchema:
			s.logger().Warn("MCP tool's output schema is too large; served without it", "tool", t.Name, "bytes", len(raw), "limit", maxDeclaredOutputSchema)
		case string(raw) != "null":
			d.OutputSchema = raw
		}
	}
	if t.Annotations != nil {
		if raw, err := json.Marshal(t.Annotations); err == nil {
			d.Annotations = raw
		}
	}
	if d.Title == "" && d.OutputSchema == nil && d.Annotations == nil {
		return nil
	}
	return d
}

func describe(t *sdk.Tool) string {
	d := t.Description
	if d == "" {
		d = t.Title
	}
	return d
}

// tool returns a registry definition, or the reason it cannot be served.
func (s *server) tool(name string) (tools.Definition, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return tools.Definition{}, false, unavailable(name, s.cfg.Name, s.lastError)
	}
	d, ok := s.defs[name]
	return d, ok, nil
}

func (s *server) definitions() []tools.Definition {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]tools.Definition, 0, len(s.names))
	for _, n := range s.names {
		out = append(out, s.defs[n])
	}
	return out
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{
		Name: s.cfg.Name, Type: s.cfg.Type, Connected: s.session != nil, Tools: append([]string(nil), s.names...),
		Attempts: s.attempts, Restarts: s.restarts, LastError: s.lastError,
		CancelsSent: int(s.cancels.Load()), ListChanges: int(s.listChanges.Load()),
	}
	if s.proc != nil && s.session != nil {
		st.PID = s.proc.pid()
	}
	return st
}

func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	session := s.session
	s.mu.Unlock()
	if session != nil {
		session.Close()
	}
}

// call runs tools/call with a progress token whose notifications become
// the call's progress (heartbeat details and reports). A canceled ctx
// makes the SDK send notifications/cancelled and the call end canceled.
func (s *server) call(ctx context.Context, env *tools.Env, tool string, args map[string]any) (CallResult, error) {
	s.mu.Lock()
	session := s.session
	lastErr := s.lastError
	s.mu.Unlock()
	name := ToolName(s.cfg.Name, tool)
	if session == nil {
		return CallResult{}, unavailable(name, s.cfg.Name, lastErr)
	}
	token := fmt.Sprintf("fenix-%d", s.nextToken.Add(1))
	var offset int64
	var mu sync.Mutex
	s.tokens.Store(token, func(p *sdk.ProgressNotificationParams) {
		text := progressLine(p)
		mu.Lock()
		env.Progress(progressChunk(env.CallID, text, offset))
		offset += int64(len(text))
		mu.Unlock()
	})
	defer s.tokens.Delete(token)
	if args == nil {
		args = map[string]any{}
	}
	params := &sdk.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(token)
	// A server writes where its own configuration lets it (a filesystem
	// server rooted at the project can rewrite .claude/ and .mcp.json):
	// what it changed among the protected paths is reported as an
	// exec_command's is.
	var protectedBefore workspace.ProtectedState
	if env.Workspace != nil {
		protectedBefore = env.Workspace.ProtectedState()
	}
	// The call's own bound (MCP_TOOL_TIMEOUT), which ends it with a
	// result and a notifications/cancelled to the server rather than
	// leaving it to the activity's deadline.
	callCtx, cancel := context.WithTimeout(ctx, s.m.opts.CallTimeout)
	defer cancel()
	inflight := &inflightCall{ctx: callCtx, env: env, tool: name}
	done := s.inflight.add(inflight)
	res, err := session.CallTool(callCtx, params)
	done()
	var changed []string
	if env.Workspace != nil {
		if changed = protectedBefore.Changed(env.Workspace.ProtectedState()); len(changed) > 0 && s.m.opts.Logger != nil {
			s.m.opts.Logger.Warn("an MCP tool call changed protected paths; the loaded hooks, settings and MCP servers keep governing until an operator accepts the change",
				"tool", name, "paths", changed)
		}
	}
	if ctx.Err() != nil {
		return CallResult{}, ctx.Err()
	}
	if callCtx.Err() != nil {
		return CallResult{}, fenixerr.New(fenixerr.TypeToolTimeout, "MCP tool %q of server %q did not answer within %s (MCP_TOOL_TIMEOUT); it was sent notifications/cancelled",
			tool, s.cfg.Name, s.m.opts.CallTimeout).WithTool(name).WithCode("mcp_call_timeout")
	}
	if err != nil {
		return CallResult{}, fenixerr.Runtime("MCP server %q failed tools/call %q: %v", s.cfg.Name, tool, err).WithTool(name).WithCode("mcp_call_failed")
	}
	out, err := projectResult(ctx, s.m.opts, s.cfg.Name, tool, res)
	if err != nil {
		return CallResult{}, fenixerr.As(err).WithTool(name)
	}
	if res.IsError {
		return CallResult{}, fenixerr.Runtime("MCP tool %q of server %q reported an error: %s%s", tool, s.cfg.Name, errorText(out), tools.ProtectedChangeNote(changed)).WithTool(name).WithCode("mcp_tool_error")
	}
	out.ProtectedPathsChanged = changed
	out.Logs = inflight.logs.taken()
	return out, nil
}

func progressLine(p *sdk.ProgressNotificationParams) string {
	var b strings.Builder
	fmt.Fprintf(&b, "progress %g", p.Progress)
	if p.Total > 0 {
		fmt.Fprintf(&b, "/%g", p.Total)
	}
	if p.Message != "" {
		b.WriteString(": " + p.Message)
	}
	b.WriteString("\n")
	return b.String()
}
