package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools"
)

// A server that offers resource subscriptions tells its client when a
// resource it subscribed to changes (notifications/resources/updated).
// The client that wants to know (an MCP gateway's, on another host) has
// no line to the worker holding the subscription but Temporal, so
// watch_mcp_resource is a governed run that waits: called without
// `since` it subscribes and returns the resource's version at once (so a
// hook or rule refusing the subscription refuses it then); called with
// that version it returns when the resource has changed from it, or after
// maxWatchWait with the same version. The gateway runs one after the
// other while its client is subscribed. The worker keeps an upstream
// subscription watchLinger past its last watch, so an update between two
// watches is not lost.
const WatchResourceTool = "watch_mcp_resource"

const (
	// maxWatchWait bounds one watch; well within the call timeout.
	maxWatchWait = 5 * time.Minute
	// watchLinger is how long an upstream subscription outlives its last
	// watch before the worker unsubscribes.
	watchLinger = 2 * time.Minute
	// maxWaitingWatches bounds the watches waiting on one worker: each
	// holds an activity slot, and clients subscribing without end must
	// not take every slot from the calls.
	maxWaitingWatches = 64
)

// CodeTooManyWatches is the error code of a watch refused because
// maxWaitingWatches are waiting.
const CodeTooManyWatches = "too_many_watches"

// WatchResourceArgs are watch_mcp_resource's arguments.
type WatchResourceArgs struct {
	Server string `json:"server" jsonschema:"minLength=1,maxLength=200,description=The MCP server (its name in .mcp.json) that exposes the resource"`
	URI    string `json:"uri" jsonschema:"minLength=1,maxLength=8192,description=The resource's URI"`
	Since  string `json:"since,omitempty" jsonschema:"maxLength=512,description=The version a previous watch returned: wait until the resource changes from it. Empty: subscribe and return its version at once"`
}

// WatchResourceResult is watch_mcp_resource's raw result.
type WatchResourceResult struct {
	Server  string `json:"server"`
	URI     string `json:"uri"`
	Version string `json:"version"`
	// Updated says the resource may have changed since the version the
	// watch was given: the server said so, or the version is one this
	// worker's subscription cannot vouch for (another host's, an earlier
	// session's), where an update may have been missed.
	Updated bool `json:"updated"`
}

// subscriptions are a server's upstream resource subscriptions, for the
// session they were made on.
type subscriptions struct {
	mu      sync.Mutex
	session *sdk.ClientSession
	// epoch names the session in versions: a version of another session
	// (or host) cannot tell whether an update was missed.
	epoch   string
	watched map[string]*watched
	// gone is closed when the session ends.
	gone chan struct{}
}

// watched is one subscribed resource.
type watched struct {
	// ready is closed once the upstream subscription is made (err set
	// when it failed).
	ready   chan struct{}
	err     error
	updates uint64
	// changed is closed and replaced at each update.
	changed chan struct{}
	waiting int
	idle    *time.Timer
}

// subscriptionTools are the Manager's subscription tool.
func (m *Manager) subscriptionTools() []tools.Definition {
	spec := m.toolSpec(WatchResourceTool,
		"Subscribe to a resource an MCP server exposes and wait until it changes: without since, returns its version at once; with it, returns when the resource changes from that version (updated) or after a few minutes (not updated).")
	// A version names the host whose subscription it is: the next watch
	// goes back to that host, whose version it can vouch for (one whose
	// host is gone fails after the pinned call's start timeout).
	spec.Owner = func(args map[string]any) string {
		if since, _ := args["since"].(string); strings.HasPrefix(since, watchKind+"_") {
			if _, ok := tools.HostOfResource(since); ok {
				return since
			}
		}
		return m.resourceID("")
	}
	return []tools.Definition{tools.Define(spec, m.watchResource, func(a WatchResourceArgs, r WatchResourceResult) tools.Projection {
		content := fmt.Sprintf("Subscribed to resource %s of MCP server %q.", r.URI, r.Server)
		switch {
		case r.Updated:
			content = fmt.Sprintf("Resource %s of MCP server %q changed.", r.URI, r.Server)
		case a.Since != "":
			content = fmt.Sprintf("Resource %s of MCP server %q did not change.", r.URI, r.Server)
		}
		return tools.Projection{Content: content, Metadata: map[string]any{"server": r.Server, "uri": r.URI, "version": r.Version, "updated": r.Updated}}
	})}
}

func (m *Manager) watchResource(ctx context.Context, _ *tools.Env, a WatchResourceArgs) (WatchResourceResult, error) {
	s, err := m.namedServer(WatchResourceTool, a.Server)
	if err != nil {
		return WatchResourceResult{}, err
	}
	session, err := s.sessionFor(subscriptionsFeature)
	if err != nil {
		return WatchResourceResult{}, fenixerr.As(err).WithTool(WatchResourceTool)
	}
	w, epoch := s.subs.join(session, a.URI)
	defer s.subs.leave(session, a.URI, w)
	select {
	case <-w.ready:
	case <-ctx.Done():
		return WatchResourceResult{}, ctx.Err()
	}
	if w.err != nil {
		return WatchResourceResult{}, fenixerr.Runtime("MCP server %q refused a subscription to resource %q: %v", s.cfg.Name, a.URI, w.err).WithTool(WatchResourceTool).WithCode("mcp_call_failed")
	}
	out := WatchResourceResult{Server: s.cfg.Name, URI: a.URI}
	version, changed, gone := s.subs.state(w, m.opts.HostID, epoch)
	out.Version = version
	if a.Since == "" {
		return out, nil
	}
	if a.Since != version {
		out.Updated = true
		return out, nil
	}
	if m.waitingWatches.Add(1) > maxWaitingWatches {
		m.waitingWatches.Add(-1)
		return WatchResourceResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "%d resource watches are waiting on this worker, as many as it keeps: watch resource %q again later", maxWaitingWatches, a.URI).WithTool(WatchResourceTool).WithCode(CodeTooManyWatches)
	}
	defer m.waitingWatches.Add(-1)
	timer := time.NewTimer(maxWatchWait)
	defer timer.Stop()
	select {
	case <-changed:
		out.Version, _, _ = s.subs.state(w, m.opts.HostID, epoch)
		out.Updated = true
	case <-gone:
		// The next watch subscribes on the server's new session.
		out.Updated = true
	case <-timer.C:
	case <-ctx.Done():
		return WatchResourceResult{}, ctx.Err()
	}
	return out, nil
}

// join counts a watch of uri on session, subscribing upstream when it is
// the first; the subscriptions of an earlier session are forgotten.
func (subs *subscriptions) join(session *sdk.ClientSession, uri string) (*watched, string) {
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.session != session {
		subs.session, subs.epoch, subs.watched, subs.gone = session, newEpoch(), map[string]*watched{}, make(chan struct{})
	}
	w, ok := subs.watched[uri]
	if !ok {
		w = &watched{ready: make(chan struct{}), changed: make(chan struct{})}
		subs.watched[uri] = w
		// Not under the lock: the answer comes on the session's read loop,
		// which also delivers updates (updated takes the lock).
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			w.err = session.Subscribe(ctx, &sdk.SubscribeParams{URI: uri})
			close(w.ready)
			if w.err != nil {
				subs.mu.Lock()
				if subs.watched[uri] == w {
					delete(subs.watched, uri)
				}
				subs.mu.Unlock()
			}
		}()
	}
	w.waiting++
	if w.idle != nil {
		w.idle.Stop()
		w.idle = nil
	}
	return w, subs.epoch
}

// leave ends a watch of uri; the last one leaves the subscription to
// lapse after watchLinger unless another watch comes.
func (subs *subscriptions) leave(session *sdk.ClientSession, uri string, w *watched) {
	subs.mu.Lock()
	defer subs.mu.Unlock()
	w.waiting--
	if w.waiting > 0 || subs.watched[uri] != w {
		return
	}
	w.idle = time.AfterFunc(watchLinger, func() {
		subs.mu.Lock()
		lapsed := subs.watched[uri] == w && w.waiting == 0
		if lapsed {
			delete(subs.watched, uri)
		}
		subs.mu.Unlock()
		if lapsed {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = session.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri})
		}
	})
}

// state is w's version, the channel its next update closes and the one
// its session's end closes.
func (subs *subscriptions) state(w *watched, host, epoch string) (version string, changed, gone <-chan struct{}) {
	subs.mu.Lock()
	defer subs.mu.Unlock()
	return watchVersion(host, epoch, w.updates), w.changed, subs.gone
}

// watchKind is the resource kind of a watch's version.
const watchKind = "mcpwatch"

// watchVersion is a resource's version after n updates on the session
// called epoch: a resource ID of the host (tools.HostOfResource), so the
// next watch is routed back to it.
func watchVersion(host, epoch string, n uint64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", epoch, n))
	return watchKind + "_" + host + "_" + hex.EncodeToString(sum[:8])
}

// ended notes that session ended, and its subscriptions with it.
func (subs *subscriptions) ended(session *sdk.ClientSession) {
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.session == session && subs.gone != nil {
		close(subs.gone)
		subs.session, subs.watched, subs.gone = nil, nil, nil
	}
}

// updated notes the server's notifications/resources/updated.
func (subs *subscriptions) updated(session *sdk.ClientSession, uri string) {
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.session != session {
		return
	}
	if w, ok := subs.watched[uri]; ok {
		w.updates++
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

func newEpoch() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
