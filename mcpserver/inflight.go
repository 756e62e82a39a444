package mcpserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/fenixrt/fenix/workflows"
)

// Why the gateway cancels a call's run when its client goes away. A
// gateway that stops (Drain) cancels nothing: its runs complete in
// Temporal.
const (
	reasonAborted       = "the MCP client aborted its HTTP request before the answer"
	reasonDeleted       = "the MCP client closed its MCP session (HTTP DELETE)"
	reasonStdioClosed   = "the MCP client closed its MCP session (end of its stdio input)"
	reasonStreamClosed  = "the MCP client closed its SSE stream (HTTP+SSE transport)"
	reasonNotifiedCalls = "cancelled by the MCP client (notifications/cancelled): "
)

// signalTimeout bounds sending one cancel signal.
const signalTimeout = 10 * time.Second

// inflight is the calls in flight, per MCP session and request ID, so the
// calls of a client that goes away can be found and cancelled.
type inflight struct {
	mu    sync.Mutex
	calls map[string]map[string]*call
	// pending counts cancellations asked for before their run started;
	// ServeStdio waits for them before it returns (and `starter mcp`
	// exits).
	pending sync.WaitGroup
}

func newInflight() *inflight { return &inflight{calls: map[string]map[string]*call{}} }

func (f *inflight) add(c *call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.calls[c.session]
	if m == nil {
		m = map[string]*call{}
		f.calls[c.session] = m
	}
	m[c.requestID] = c
}

func (f *inflight) remove(c *call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.calls[c.session]; m[c.requestID] == c {
		delete(m, c.requestID)
		if len(m) == 0 {
			delete(f.calls, c.session)
		}
	}
}

func (f *inflight) get(session, requestID string) *call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[session][requestID]
}

// cancelSession cancels the runs of every call in flight in a session.
func (f *inflight) cancelSession(session, reason string) {
	f.mu.Lock()
	var calls []*call
	for _, c := range f.calls[session] {
		calls = append(calls, c)
	}
	f.mu.Unlock()
	for _, c := range calls {
		c.cancelRun(reason)
	}
}

// waitPending waits up to d for cancellations asked for before their run
// started to be sent.
func (f *inflight) waitPending(d time.Duration) {
	done := make(chan struct{})
	go func() { f.pending.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// cancelRun asks the call's run to cancel, once (the first reason wins).
// Before the run has started the request is kept, and sent once it has.
func (c *call) cancelRun(reason string) {
	c.cancelMu.Lock()
	if c.cancelReason != "" {
		c.cancelMu.Unlock()
		return
	}
	c.cancelReason = reason
	if !c.started {
		c.pendingCancel = true
		c.g.calls.pending.Add(1)
		c.cancelMu.Unlock()
		return
	}
	c.cancelMu.Unlock()
	c.signalCancel(reason)
}

// markStarted records that the run exists, and sends a cancellation asked
// for before.
func (c *call) markStarted() {
	c.cancelMu.Lock()
	c.started = true
	reason, pending := c.cancelReason, c.pendingCancel
	c.pendingCancel = false
	c.cancelMu.Unlock()
	if reason != "" {
		c.signalCancel(reason)
	}
	if pending {
		c.g.calls.pending.Done()
	}
}

// settle releases a cancellation that never reached a run (its start
// failed).
func (c *call) settle() {
	c.cancelMu.Lock()
	pending := c.pendingCancel
	c.pendingCancel = false
	c.cancelMu.Unlock()
	if pending {
		c.g.calls.pending.Done()
	}
}

func (c *call) cancelRequested() bool {
	c.cancelMu.Lock()
	defer c.cancelMu.Unlock()
	return c.cancelReason != ""
}

func (c *call) signalCancel(reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	err := c.g.cfg.Client.SignalWorkflow(ctx, c.workflowID, "", workflows.SignalCancel, workflows.CancelRequest{Reason: reason})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		// The run already ended.
	case err != nil:
		c.g.cfg.Logger.Warn("mcp gateway: could not cancel the run of a call", "workflow_id", c.workflowID, "reason", reason, "error", err)
	}
}
