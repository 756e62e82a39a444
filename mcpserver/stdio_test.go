package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/internal/harness/logbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdioPeer is a raw client of ServeStdio: it writes lines and reads the
// gateway's answers, one JSON object per line.
type stdioPeer struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan []byte
	done  chan error
}

func serveStdioForTest(t *testing.T, g *Gateway) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, lines: make(chan []byte, 16), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { p.done <- g.ServeStdio(ctx, inR, outW); _ = outW.Close() }()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
	})
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(p.t, err)
}

// reply is the next message the gateway writes; it fails the test when the
// session ended instead.
func (p *stdioPeer) reply() map[string]any {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			select {
			case err := <-p.done:
				p.t.Fatalf("the stdio session ended: %v", err)
			default:
				p.t.Fatal("the stdio session ended")
			}
		}
		var m map[string]any
		require.NoError(p.t, json.Unmarshal(line, &m), string(line))
		return m
	case <-time.After(20 * time.Second):
		p.t.Fatal("no reply within 20s")
	}
	return nil
}

func (p *stdioPeer) initialize() map[string]any {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r := p.reply()
	require.Contains(p.t, r, "result")
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r["result"].(map[string]any)
}

// The gateway declares what it serves: logging among them, since it
// answers logging/setLevel and passes its servers' log messages on.
func TestStdioInitializeDeclaresTheGatewaysCapabilities(t *testing.T) {
	g, err := newGateway(Config{Conversation: "stdio-test"})
	require.NoError(t, err)
	caps, _ := serveStdioForTest(t, g).initialize()["capabilities"].(map[string]any)
	for _, c := range []string{"tools", "resources", "prompts", "completions", "logging"} {
		assert.Contains(t, caps, c)
	}
}

// logBuffer collects a gateway's log lines.
type logBuffer = logbuf.Buffer

// A message over the stdio limit is dropped and answered with an error
// naming the limit; the session goes on serving. The ID is found whether
// it comes before the huge params (Go SDK order) or after them (the
// TypeScript SDK's order); an oversized notification is logged.
func TestStdioOversizedMessageIsAnsweredAndTheSessionGoesOn(t *testing.T) {
	logs := &logBuffer{}
	g, err := newGateway(Config{Conversation: "stdio-test", Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	p := serveStdioForTest(t, g)
	p.initialize()

	huge := strings.Repeat("x", MaxMessageBytes)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"` + huge + `"}}}`)
	r := p.reply()
	assert.EqualValues(t, 2, r["id"])
	e, _ := r["error"].(map[string]any)
	require.NotNil(t, e, "an error response: %v", r)
	assert.EqualValues(t, -32600, e["code"])
	assert.Contains(t, e["message"], "4 MiB")
	assert.Contains(t, e["message"], fmt.Sprint(MaxMessageBytes))
	assert.Contains(t, e["message"], "tools/call")

	p.send(`{"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"` + huge + `"}},"jsonrpc":"2.0","id":"late-id"}`)
	r = p.reply()
	assert.Equal(t, "late-id", r["id"])
	assert.Contains(t, r["error"].(map[string]any)["message"], "4 MiB")

	p.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` + huge + `"}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	r = p.reply()
	assert.EqualValues(t, 3, r["id"], "the session still serves: %v", r)
	assert.Contains(t, r, "result")
	assert.Contains(t, logs.String(), "notifications/progress")
	assert.Contains(t, logs.String(), "4 MiB")
}

// A line that is not JSON, or JSON that is not a JSON-RPC message, is
// dropped: a request whose ID can be read is answered (-32700 for what is
// not JSON, -32600 for an invalid message), anything else is logged, and
// the session goes on serving.
func TestStdioMalformedLinesAreAnsweredAndTheSessionGoesOn(t *testing.T) {
	logs := &logBuffer{}
	g, err := newGateway(Config{Conversation: "stdio-test", Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	p := serveStdioForTest(t, g)
	p.initialize()

	p.send(`this is not json`)
	r := p.reply()
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": nil, "error": r["error"]}, r, "answered with a null id")
	assert.EqualValues(t, -32700, r["error"].(map[string]any)["code"])
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/list",`)
	r = p.reply()
	assert.EqualValues(t, 5, r["id"])
	e, _ := r["error"].(map[string]any)
	require.NotNil(t, e, "an error response: %v", r)
	assert.EqualValues(t, -32700, e["code"])
	assert.Contains(t, e["message"], "not JSON")

	p.send(`{"jsonrpc":"1.0","id":6,"method":"tools/list"}`)
	r = p.reply()
	assert.EqualValues(t, 6, r["id"])
	e, _ = r["error"].(map[string]any)
	require.NotNil(t, e, "an error response: %v", r)
	assert.EqualValues(t, -32600, e["code"])
	assert.Contains(t, e["message"], "version")

	p.send(`{"hello":"world"}`)
	r = p.reply()
	assert.Contains(t, r, "id")
	assert.Nil(t, r["id"], "an object that is no message is answered with a null id: %v", r)
	assert.EqualValues(t, -32600, r["error"].(map[string]any)["code"])
	p.send(`{"jsonrpc":"2.0","method":"notifications/bogus","params":[1,2,3]}`)
	p.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	r = p.reply()
	assert.EqualValues(t, 7, r["id"], "the session still serves, a notification is never answered: %v", r)
	assert.Contains(t, r, "result")
	assert.Contains(t, logs.String(), "is not JSON")
	assert.Contains(t, logs.String(), "not a valid message")
}

// A request whose id is not a JSON-RPC ID (an object, an array, a number
// out of range, a boolean) is answered with -32600 and
// a null id, as JSON-RPC 2.0 asks, and the session goes on; so is a request
// with a valid ID after it.
func TestStdioRequestsWithUnreadableIDsAreAnsweredWithANullID(t *testing.T) {
	g, err := newGateway(Config{Conversation: "stdio-test"})
	require.NoError(t, err)
	p := serveStdioForTest(t, g)
	p.initialize()
	for _, id := range []string{`{"a":1}`, `[1]`, `1e400`, `true`} {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
		r := p.reply()
		require.Contains(t, r, "id", "id %s: %v", id, r)
		assert.Nil(t, r["id"], "id %s", id)
		e, _ := r["error"].(map[string]any)
		require.NotNil(t, e, "id %s: an error response: %v", id, r)
		assert.EqualValues(t, -32600, e["code"], "id %s", id)
		assert.Contains(t, e["message"], "tools/list", "id %s", id)
	}
	p.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	r := p.reply()
	assert.EqualValues(t, 8, r["id"], "the session still serves: %v", r)
	assert.Contains(t, r, "result")
}
