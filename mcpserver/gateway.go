// Package mcpserver serves Fenix's governed tools over the Model Context
// Protocol (stdio and Streamable HTTP) on the official Go SDK.
//
// The gateway holds no tool code. tools/list is the registry of a worker
// on the task queue, fetched with the ListTools workflow (so tools the
// workers add by configuration, such as MCP clients' mcp__<server>__<tool>,
// appear without the gateway knowing them) and filtered by the gateway's
// allow-list. Every tools/call is an ExecuteAssignment run with the full
// pipeline: review, hooks, approval, audit. Its workflow ID derives from the
// conversation (the MCP session, or a name the client gives), the session,
// the JSON-RPC request ID and the call itself, so a request retried in its
// session gets the recorded result instead of a second execution, and a
// new session's request is never answered with an old one's result.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
	"github.com/fenixrt/fenix/workflows"
)

// Config configures a gateway.
type Config struct {
	// Client reaches the Temporal namespace the workers serve.
	Client client.Client
	// TaskQueue is the workers' shared task queue (default "fenix").
	TaskQueue string
	// Allow filters the tools served: exact names, shell-style globs
	// ("workspace_*") or "mcp__<server>" for every tool of that MCP server.
	// Empty serves every tool the workers serve.
	Allow []string
	// WorkspaceRoot is the assignments' workspace_root; empty leaves the
	// worker's default (FENIX_WORKSPACE_ROOT).
	WorkspaceRoot string
	// Profile is the agent profile of the assignments (default "main").
	Profile string
	// Conversation, when set, is the conversation_id of every call; else
	// each MCP session is its own conversation (an HTTP client may name it
	// with the Fenix-Conversation-Id header).
	Conversation string
	// ApprovalTimeout bounds how long a call waits for a permission
	// decision (0: the workflow's default, 10 minutes).
	ApprovalTimeout time.Duration
	// ElicitApproval is what a client supporting elicitation is asked when
	// a call waits for permission: ElicitDeny (the default), ElicitAllow or
	// ElicitOff.
	ElicitApproval string
	// PollInterval is how often a call in flight reads its reports and
	// pending permissions (default 300 ms; the first read is after one
	// interval, so fast calls never poll).
	PollInterval time.Duration
	// WaitingReminder is how often a call parked for permission says again
	// that it waits, as a progress notification when the client gave a
	// progress token (default 15 s): a proxy in front of the gateway then
	// sees the request's stream move and does not close it for idling.
	WaitingReminder time.Duration
	// RefreshInterval is how often the tool list is read again (default
	// 30 s); changes reach clients as notifications/tools/list_changed.
	RefreshInterval time.Duration
	Logger          *slog.Logger
	// Contexts, when set, is the workers' context store (FENIX_CONTEXT_STORE,
	// or the data directory of a worker on this host): a result's
	// attachments (images, audio, resources a tool returned) are read from
	// it and sent to the client as MCP content. Without it the client gets
	// the narrative's line naming each.
	Contexts BlobReader
	// MaxAttachmentBytes bounds the attachment bytes one result carries to
	// the client (default DefaultMaxAttachmentBytes).
	MaxAttachmentBytes int
	// Version is reported in serverInfo.
	Version string
}

// Modes of Config.ElicitApproval. The MCP client is the agent whose call
// waits for permission, and the gateway cannot tell whether a human or the
// agent's own code answers its elicitation, so by default an accept is no
// approval: an agent could otherwise approve its own risky call.
const (
	// ElicitDeny asks the client; its decline denies the call, and an
	// approval comes only from an operator (starter approve, the
	// decide_permission update).
	ElicitDeny = "deny"
	// ElicitAllow asks the client; accept allows, decline denies. Use it
	// only when the client shows elicitation to a human (Claude Code does).
	ElicitAllow = "allow"
	// ElicitOff never asks the client; progress says how to approve.
	ElicitOff = "off"
)

// Gateway is one MCP server in front of Fenix's workers.
type Gateway struct {
	cfg     Config
	server  *mcp.Server
	cancels *cancelLedger
	calls   *inflight
	// inputs are the calls waiting for their clients' answers to input
	// requests (multiround.go).
	inputs *inputLedger
	// stopping is set by Drain: requests that end from then on leave their
	// runs to complete in Temporal.
	stopping atomic.Bool
	// stdioSession names the conversation of the stdio session, which has
	// no transport session ID.
	stdioSession string
	// ending counts the closed sessions whose conversations are ending.
	ending sync.WaitGroup

	mu     sync.Mutex
	served map[string][]byte // tool name -> descriptor JSON
	// catalog is what is served, by tool name.
	catalog map[string]tools.Descriptor
	// resourceHosts is the last resource listing's servers by URI, and
	// templateHosts its servers' templates.
	resourceHosts map[string][]string
	templateHosts []resourceHost
	// promptHosts is the last prompt listing's prompts by served name.
	promptHosts map[string]promptHost
	// subscriptions are the resources the gateway's sessions are
	// subscribed to, by URI (subscriptions.go).
	subscriptions map[string]*subscription
}

// New builds a gateway and reads the tool list once: it fails when no
// worker answers on the task queue.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("mcp gateway: no Temporal client")
	}
	g, err := newGateway(cfg)
	if err != nil {
		return nil, err
	}
	if err := g.Refresh(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// newGateway checks the configuration and builds the MCP server, serving
// no tools yet.
func newGateway(cfg Config) (*Gateway, error) {
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = workflows.DefaultTaskQueue
	}
	if cfg.Profile == "" {
		cfg.Profile = "main"
	}
	if cfg.WaitingReminder <= 0 {
		cfg.WaitingReminder = 15 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 300 * time.Millisecond
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.MaxAttachmentBytes <= 0 {
		cfg.MaxAttachmentBytes = DefaultMaxAttachmentBytes
	}
	switch cfg.ElicitApproval {
	case "":
		cfg.ElicitApproval = ElicitDeny
	case ElicitDeny, ElicitAllow, ElicitOff:
	default:
		return nil, fenixerr.Validation("elicitation approval mode %q is not one of off, deny or allow", cfg.ElicitApproval)
	}
	if cfg.Conversation != "" {
		if err := checkName("conversation", cfg.Conversation); err != nil {
			return nil, err
		}
	}
	for _, p := range cfg.Allow {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fenixerr.Validation("allow-list pattern %q is not a valid glob: %v", p, err)
		}
	}
	g := &Gateway{cfg: cfg, cancels: newCancelLedger(), calls: newInflight(), inputs: newInputLedger(), stdioSession: "stdio-" + randomID(), served: map[string][]byte{}}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "fenix", Title: "Fenix governed tools", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "Every tool call runs as a durable, governed Fenix ExecuteAssignment workflow on Temporal (review, hooks, approval, audit).",
		Logger:       cfg.Logger,
		// Logging: the gateway serves logging/setLevel and passes its
		// servers' log messages on, which a server must declare (clients
		// that check capabilities offer no log level without it).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Resources: &mcp.ResourceCapabilities{Subscribe: true},
			Prompts: &mcp.PromptCapabilities{}, Completions: &mcp.CompletionCapabilities{},
			//lint:ignore SA1019 SEP-2577 deprecates MCP logging, which clients still read during its deprecation window.
			Logging: &mcp.LoggingCapabilities{}},
		CompletionHandler:  g.complete,
		SubscribeHandler:   g.subscribe,
		UnsubscribeHandler: g.unsubscribe,
		GetSessionID:       func() string { return "mcp-" + randomID() },
		// The MCP session closing ends its conversation's session.
		InitializedHandler: g.endWithSession,
	})
	g.server.AddReceivingMiddleware(g.resourceMethods)
	return g, nil
}

// Server is the MCP server, for transports other than the two built in.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Tools lists the names served, sorted.
func (g *Gateway) Tools() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, 0, len(g.served))
	for n := range g.served {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KeepFresh reads the tool list every RefreshInterval until ctx ends.
func (g *Gateway) KeepFresh(ctx context.Context) {
	t := time.NewTicker(g.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := g.Refresh(ctx); err != nil {
				g.cfg.Logger.Warn("mcp gateway: refreshing the tool list failed; serving the previous list", "error", err)
			}
		}
	}
}

// listTimeout bounds one ListTools run, including waiting for a worker.
const listTimeout = 15 * time.Second

// Refresh reads the workers' tool list and updates the tools served.
func (g *Gateway) Refresh(ctx context.Context) error {
	cat, err := g.listTools(ctx)
	if err != nil {
		return err
	}
	want := map[string]tools.Descriptor{}
	for _, d := range cat.WithDeclared() {
		if !g.allowed(d.Name) {
			continue
		}
		if !objectSchema(d.Schema) {
			g.cfg.Logger.Warn("mcp gateway: tool not served: its argument schema is not a JSON object schema", "tool", d.Name)
			continue
		}
		want[d.Name] = d
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.catalog = want
	var gone []string
	for name := range g.served {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(g.served, name)
		}
	}
	if len(gone) > 0 {
		g.server.RemoveTools(gone...)
	}
	for name, d := range want {
		raw, _ := json.Marshal(struct {
			tools.Descriptor
			Declared *tools.Declared `json:"declared"`
		}{d, d.Declared})
		if bytes.Equal(g.served[name], raw) {
			continue
		}
		if err := g.addTool(d); err != nil {
			g.cfg.Logger.Warn("mcp gateway: tool not served", "tool", d.Name, "error", err)
			continue
		}
		g.served[name] = raw
	}
	return nil
}

// addTool serves d. The SDK panics on a tool it cannot serve (an
// x-mcp-header annotation on an object, two on one header): an MCP
// server's tool list must not take the gateway down with it.
func (g *Gateway) addTool(d tools.Descriptor) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the MCP SDK refuses it: %v", r)
		}
	}()
	g.server.AddTool(mcpTool(d, g.cfg.Logger), g.callHandler(d))
	return nil
}

func (g *Gateway) listTools(ctx context.Context) (activities.ToolCatalog, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	run, err := g.cfg.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.ListToolsWorkflowID + "-" + randomID(),
		TaskQueue:                g.cfg.TaskQueue,
		WorkflowExecutionTimeout: listTimeout,
	}, workflows.ListToolsWorkflow, workflows.ListToolsRequest{Requester: "mcp-gateway " + g.cfg.Version})
	if err != nil {
		return activities.ToolCatalog{}, fmt.Errorf("mcp gateway: start %s on task queue %q: %w", workflows.ListToolsWorkflow, g.cfg.TaskQueue, err)
	}
	var cat activities.ToolCatalog
	if err := run.Get(ctx, &cat); err != nil {
		return cat, fmt.Errorf("mcp gateway: no tool list from a worker on task queue %q within %s (is a worker running there?): %w", g.cfg.TaskQueue, listTimeout, err)
	}
	return cat, nil
}

// allowed applies the allow-list.
func (g *Gateway) allowed(name string) bool {
	if len(g.cfg.Allow) == 0 {
		return true
	}
	for _, p := range g.cfg.Allow {
		if p == name || (strings.HasPrefix(p, "mcp__") && !strings.Contains(p[len("mcp__"):], "__") && strings.HasPrefix(name, p+"__")) {
			return true
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func objectSchema(raw json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(raw, &s) == nil && s.Type == "object"
}

// mcpTool is d as the gateway's clients see it: an MCP server's tool
// with what its server declared (title, output schema, hints), Fenix's
// own with hints from its descriptor.
func mcpTool(d tools.Descriptor, logger *slog.Logger) *mcp.Tool {
	openWorld := d.RegistryBacked || strings.HasPrefix(d.Name, "mcp__") || strings.HasPrefix(d.Name, "web_")
	desc := d.Description
	if desc == "" { // clients (and the spec's conformance suite) expect one
		desc = "Fenix tool " + d.Name + "."
	}
	t := &mcp.Tool{
		Name:        d.Name,
		Description: desc,
		InputSchema: d.Schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: d.ReadOnly, IdempotentHint: d.Idempotent || d.ReadOnly, OpenWorldHint: &openWorld},
	}
	if decl := d.Declared; decl != nil {
		t.Title = decl.Title
		if len(decl.OutputSchema) > 0 {
			t.OutputSchema = decl.OutputSchema
		}
		if len(decl.Annotations) > 0 {
			var hints mcp.ToolAnnotations
			if err := json.Unmarshal(decl.Annotations, &hints); err != nil {
				logger.Warn("mcp gateway: the tool's declared annotations do not decode; Fenix's served instead", "tool", d.Name, "error", err)
			} else {
				t.Annotations = &hints
			}
		}
	}
	return t
}

// checkName keeps names that become part of workflow IDs readable.
func checkName(what, s string) error {
	if len(s) > 64 {
		return fenixerr.Validation("%s %q is longer than 64 characters", what, s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fenixerr.Validation("%s %q may only hold letters, digits, '-', '_' and '.'", what, s)
		}
	}
	return nil
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
