//lint:file-ignore SA1019 SEP-2577 deprecates MCP logging as of protocol 2026-07-28, yet servers still log and it stays functional for the deprecation window.

package mcp

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's log message goes to the one call in flight to it; with none,
// or several (it could be another run's), to no call; a call keeps at
// most maxCallLogs, a message's data at most maxLogDataSize, and says
// what it left out.
func TestLogMessagesGoToTheOneCallInFlight(t *testing.T) {
	s := &server{cfg: ServerConfig{Name: "docs"}, m: &Manager{opts: Options{Logger: slog.New(slog.DiscardHandler)}}}
	msg := func(data any) *sdk.LoggingMessageRequest {
		return &sdk.LoggingMessageRequest{Params: &sdk.LoggingMessageParams{Level: "info", Logger: "docs", Data: data}}
	}
	ctx := context.Background()
	s.logMessage(ctx, msg("before any call")) // nobody to give it to

	first := &inflightCall{tool: "mcp__docs__a"}
	done := s.inflight.add(first)
	s.logMessage(ctx, msg("indexing"))
	second := &inflightCall{tool: "mcp__docs__b"}
	doneSecond := s.inflight.add(second)
	s.logMessage(ctx, msg("whose is this?"))
	doneSecond()
	s.logMessage(ctx, msg(strings.Repeat("x", maxLogDataSize+10)))
	for range maxCallLogs + 3 {
		s.logMessage(ctx, msg("again"))
	}
	done()

	got := first.logs.taken()
	if len(got) != maxCallLogs+1 {
		t.Fatalf("kept %d messages, want %d and a note", len(got), maxCallLogs+1)
	}
	if string(got[0].Data) != `"indexing"` || got[0].Level != "info" || got[0].Logger != "docs" {
		t.Errorf("first = %+v", got[0])
	}
	if len(got[1].Data) > maxLogDataSize+8 || !strings.HasSuffix(string(got[1].Data), `…"`) {
		t.Errorf("a long message is cut: %d bytes", len(got[1].Data))
	}
	if note := got[len(got)-1]; note.Logger != "fenix" || !strings.Contains(string(note.Data), `"left_out":5`) {
		t.Errorf("note = %+v, want the 5 left out counted", note)
	}
	if n := len(second.logs.taken()); n != 0 {
		t.Errorf("the second call got %d messages; a message while two were in flight belongs to neither", n)
	}
}
