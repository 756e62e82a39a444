package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcptools "github.com/fenixrt/fenix/tools/mcp"
)

// A client's resources/subscribe runs the workers' watch_mcp_resource
// once, a governed run that subscribes (a hook or rule refusing it
// refuses the client's request), then the gateway keeps watching: one
// watch run after another while any of its sessions is subscribed to the
// URI, and notifications/resources/updated to each of them (the SDK keeps
// who is subscribed) when a watch says the resource changed. The last
// session to unsubscribe, or to close, cancels the watch in flight.

const methodSubscribe = "resources/subscribe"

// subscription is the gateway's watch of one URI.
type subscription struct {
	server   string
	sessions map[*mcp.ServerSession]*mcp.RequestExtra
	cancel   context.CancelFunc
	// watching is the session and request ID of the watch in flight,
	// whose run unsubscribing cancels.
	watching  *mcp.ServerSession
	requestID string
}

// codeWorkerLost is the error code of a run whose pinned call found no
// worker of its host (fenixerr's WorkerLostError).
const codeWorkerLost = "worker_lost"

// watchRetry bounds the wait before a failed watch is tried again.
const watchRetry = time.Minute

// Bounds of the subscriptions: each URI watched keeps a run waiting on a
// worker (and an activity slot there).
const (
	maxSessionSubscriptions = 32
	maxSubscriptions        = 256
)

func (g *Gateway) subscribe(ctx context.Context, r *mcp.SubscribeRequest) error {
	uri := r.Params.URI
	if err := g.roomFor(r.Session, uri); err != nil {
		return err
	}
	server, err := g.serverOf(ctx, r.Session, r.Extra, uri)
	if err != nil {
		return err
	}
	res, err := g.resourceTool(ctx, r.Session, r.Extra, r.Params.GetMeta(), mcptools.WatchResourceTool, map[string]any{"server": server, "uri": uri})
	switch {
	case err != nil:
		return err
	case res == nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: no worker serves subscriptions to resource %q (no MCP server behind Fenix offers them, or -allow leaves out %s)", uri, mcptools.WatchResourceTool)}
	case res.IsError:
		return refused(fmt.Sprintf("subscribing to resource %q of MCP server %q", uri, server), res)
	}
	data, _ := res.StructuredContent.(map[string]any)
	version, _ := data["version"].(string)
	if version == "" {
		return internalError("subscribing to resource %q of MCP server %q: the worker's %s gave no version", uri, server, mcptools.WatchResourceTool)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.roomForLocked(r.Session, uri); err != nil {
		return err
	}
	if g.subscriptions == nil {
		g.subscriptions = map[string]*subscription{}
	}
	sub, ok := g.subscriptions[uri]
	if !ok {
		watchCtx, cancel := context.WithCancel(context.Background())
		sub = &subscription{server: server, sessions: map[*mcp.ServerSession]*mcp.RequestExtra{}, cancel: cancel}
		g.subscriptions[uri] = sub
		go g.watch(watchCtx, uri, sub, version)
	}
	if _, known := sub.sessions[r.Session]; !known && !g.subscriber(r.Session) {
		// The SDK forgets a closed session's subscriptions without asking
		// the handler: the gateway must see it close too.
		go func(ss *mcp.ServerSession) {
			_ = ss.Wait()
			g.unsubscribeAll(ss)
		}(r.Session)
	}
	sub.sessions[r.Session] = r.Extra
	return nil
}

// roomFor refuses a subscription over the bounds: per session, and
// URIs watched by the gateway. subscribe asks before its run and again
// as it adds the subscription, so requests at once cannot pass it
// together.
func (g *Gateway) roomFor(ss *mcp.ServerSession, uri string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.roomForLocked(ss, uri)
}

// roomForLocked is roomFor with g.mu held.
func (g *Gateway) roomForLocked(ss *mcp.ServerSession, uri string) error {
	if sub, ok := g.subscriptions[uri]; ok {
		if _, again := sub.sessions[ss]; again {
			return nil
		}
	}
	held := 0
	for _, sub := range g.subscriptions {
		if _, ok := sub.sessions[ss]; ok {
			held++
		}
	}
	switch {
	case held >= maxSessionSubscriptions:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: this session is subscribed to %d resources, as many as a session may be: unsubscribe from one before subscribing to %q", held, uri)}
	case g.subscriptions[uri] == nil && len(g.subscriptions) >= maxSubscriptions:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("mcp gateway: its clients are subscribed to %d resources, as many as it watches: resource %q cannot be subscribed to now", len(g.subscriptions), uri)}
	}
	return nil
}

// subscriber says whether ss is subscribed to any URI. g.mu is held.
func (g *Gateway) subscriber(ss *mcp.ServerSession) bool {
	for _, sub := range g.subscriptions {
		if _, ok := sub.sessions[ss]; ok {
			return true
		}
	}
	return false
}

func (g *Gateway) unsubscribe(_ context.Context, r *mcp.UnsubscribeRequest) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.leave(r.Session, r.Params.URI)
	return nil
}

// unsubscribeAll ends a closed session's subscriptions.
func (g *Gateway) unsubscribeAll(ss *mcp.ServerSession) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for uri := range g.subscriptions {
		g.leave(ss, uri)
	}
}

// leave takes ss off uri's subscribers; the last one ends the watch,
// cancelling its run. g.mu is held.
func (g *Gateway) leave(ss *mcp.ServerSession, uri string) {
	sub, ok := g.subscriptions[uri]
	if !ok {
		return
	}
	delete(sub.sessions, ss)
	if len(sub.sessions) > 0 {
		return
	}
	delete(g.subscriptions, uri)
	if sub.watching != nil {
		g.cancels.note(sub.watching.ID(), sub.requestID, "no client is subscribed to resource "+uri+" any more")
	}
	sub.cancel()
}

// watch runs watch_mcp_resource after itself while sub lasts, as one of
// its sessions, and tells them all when the resource changed. A version
// pins the next watch to the worker host holding the subscription; when
// that host is gone (worker_lost) the next watch subscribes again
// wherever it runs, and its success is told as an update, as one may
// have been missed meanwhile.
func (g *Gateway) watch(ctx context.Context, uri string, sub *subscription, version string) {
	failures := 0
	for ctx.Err() == nil {
		g.mu.Lock()
		var session *mcp.ServerSession
		var extra *mcp.RequestExtra
		for ss, e := range sub.sessions {
			session, extra = ss, e
			break
		}
		requestID := "watch-" + randomID()
		sub.watching, sub.requestID = session, requestID
		g.mu.Unlock()
		if session == nil {
			return
		}
		res, err := g.resourceTool(ctx, session, extra, mcp.Meta{metaRequestID: requestID}, mcptools.WatchResourceTool,
			map[string]any{"server": sub.server, "uri": uri, "since": version})
		if ctx.Err() != nil {
			return
		}
		if err == nil && res != nil && !res.IsError {
			failures = 0
			data, _ := res.StructuredContent.(map[string]any)
			resubscribed := version == ""
			if v, _ := data["version"].(string); v != "" {
				version = v
			}
			if updated, _ := data["updated"].(bool); updated || resubscribed {
				if err := g.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
					g.cfg.Logger.Warn("mcp gateway: telling subscribers of an update failed", "uri", uri, "error", err)
				}
			}
			continue
		}
		failures++
		if res != nil && res.Meta[MetaErrorCode] == codeWorkerLost {
			// The host holding the subscription is gone.
			version = ""
		}
		why := "no worker serves " + mcptools.WatchResourceTool
		switch {
		case err != nil:
			why = err.Error()
		case res != nil:
			why = textOf(res)
		}
		wait := min(time.Duration(failures)*5*time.Second, watchRetry)
		g.cfg.Logger.Warn("mcp gateway: watching a subscribed resource failed; trying again", "uri", uri, "server", sub.server, "error", why, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
