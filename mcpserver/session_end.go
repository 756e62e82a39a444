package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/api/serviceerror"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/sessions"
)

// endSessionTimeout bounds ending a closed MCP session's conversation.
const endSessionTimeout = 30 * time.Second

// endWithSession ends the conversation's Claude Code session when the MCP
// session that is the conversation closes (SessionEnd, reason other): a
// configured conversation, or one a client names with the
// Fenix-Conversation-Id header, outlives its MCP sessions and is left
// alone. A session that never ran a call has nothing to end.
func (g *Gateway) endWithSession(_ context.Context, req *mcp.InitializedRequest) {
	if g.cfg.Conversation != "" || req == nil || req.Session == nil {
		return
	}
	ss := req.Session
	conversation := ss.ID()
	if conversation == "" {
		conversation = g.stdioSession
	}
	g.ending.Add(1)
	go func() {
		defer g.ending.Done()
		_ = ss.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), endSessionTimeout)
		defer cancel()
		res, err := sessions.End(ctx, g.cfg.Client, g.cfg.TaskQueue, conversation, hooks.EndReasonOther)
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
		case err != nil:
			g.cfg.Logger.Warn("ending the conversation of a closed MCP session failed", "conversation_id", conversation, "error", err)
		case res.Ended:
			g.cfg.Logger.Info("MCP session closed: its conversation's session ended", "conversation_id", conversation)
		}
	}()
}

// waitEnding waits, up to d, for the conversations of closed sessions to
// end: `starter mcp` over stdio exits when its client closes, and ended
// the Temporal client under the end it had just begun.
func (g *Gateway) waitEnding(d time.Duration) {
	done := make(chan struct{})
	go func() {
		g.ending.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		g.cfg.Logger.Warn("mcp gateway: a closed session's conversation did not end in time", "waited", d)
	}
}
