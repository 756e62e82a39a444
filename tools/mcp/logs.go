//lint:file-ignore SA1019 SEP-2577 deprecates MCP logging as of protocol 2026-07-28, yet servers still log and it stays functional for the deprecation window.

package mcp

import (
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/tools"
)

// A server's log messages (notifications/message) while a call is in
// flight to it belong to that call: its result carries them (so the
// audit has them, and the MCP gateway's client gets them as its own).
// Notifications name no request, so a message goes to the call only when
// it is the one in flight, as a server's question does (elicitation.go);
// with several, it could belong to another run, and goes to the worker's
// log at debug level instead.

// Bounds of the log messages one call keeps.
const (
	maxCallLogs    = 32
	maxLogDataSize = 4 << 10
)

// upstreamLogLevel is the level Fenix asks servers to log at: all of it,
// as what a call keeps is bounded and the gateway's clients filter by the
// level each sets.
const upstreamLogLevel = "debug"

// callLogs gathers one call's log messages.
type callLogs struct {
	mu      sync.Mutex
	msgs    []tools.LogMessage
	dropped int
}

func (l *callLogs) add(m tools.LogMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.msgs) == maxCallLogs {
		l.dropped++
		return
	}
	l.msgs = append(l.msgs, m)
}

// taken are the messages gathered, with a last one counting those over
// the bound.
func (l *callLogs) taken() []tools.LogMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.msgs
	if l.dropped > 0 {
		note, _ := json.Marshal(map[string]any{"fenix": "log messages over the bound of one call were left out", "left_out": l.dropped})
		out = append(out, tools.LogMessage{Level: "warning", Logger: "fenix", Data: note})
	}
	return out
}

// logMessage takes a server's log message for the one call in flight.
func (s *server) logMessage(_ context.Context, req *sdk.LoggingMessageRequest) {
	if req == nil || req.Params == nil {
		return
	}
	p := req.Params
	data, err := json.Marshal(p.Data)
	if err != nil || len(data) > maxLogDataSize {
		preview := string(data)
		if err != nil {
			preview = err.Error()
		}
		data, _ = json.Marshal(cut(preview, maxLogDataSize) + "…")
	}
	m := tools.LogMessage{Level: string(p.Level), Logger: cut(p.Logger, 256), Data: data}
	call, n := s.inflight.only()
	if n != 1 {
		s.logger().Debug("MCP server log message outside of one call in flight", "calls", n, "level", m.Level, "data", string(m.Data))
		return
	}
	call.logs.add(m)
}

// askForLogs asks a server that logs to send what it logs at
// upstreamLogLevel and above.
func (s *server) askForLogs(ctx context.Context, session *sdk.ClientSession) {
	init := session.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	if err := session.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: upstreamLogLevel}); err != nil {
		s.logger().Debug("MCP server refused logging/setLevel", "error", err)
	}
}
