package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/internal/harness/logbuf"
	"github.com/fenixrt/fenix/mcpserver"
)

// A client on protocol 2026-07-28 (the Go SDK's default, over stdio)
// checks fields the gateway's own answers to the resource and prompt
// methods left out, where the SDK fills them in for what its handlers
// build: a cache scope on every listing and read (the Python SDK's v2
// refused "cacheScope": "") and the result type of a read and a prompt.
func TestResourceAndPromptAnswersCarryTheFieldsOfProtocol20260728(t *testing.T) {
	w, _ := startEverythingWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wire := &logbuf.Buffer{}
	cs := stdioClient(ctx, t, mcpserver.Config{TaskQueue: w.queue, Contexts: w.contexts(t)}, nil, wire)

	_, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	_, err = cs.ListPrompts(ctx, nil)
	require.NoError(t, err)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/features.md"})
	require.NoError(t, err)
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Paris"}})
	require.NoError(t, err)

	got := answers(wire.String())
	require.Len(t, got, 4)
	for i, want := range []struct {
		cacheScope, resultType bool
	}{{true, false}, {true, false}, {true, true}, {false, true}} {
		if want.cacheScope {
			assert.Equal(t, "private", got[i]["cacheScope"], "answer %d: %v", i, got[i])
		}
		if want.resultType {
			assert.Equal(t, "complete", got[i]["resultType"], "answer %d: %v", i, got[i])
		}
	}
}

// answers are the results of the gateway's answers after initialize, in
// order, ignoring notifications.
func answers(wire string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(wire, "\n") {
		_, msg, ok := strings.Cut(line, "read: ")
		if !ok {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(msg), &m) != nil {
			continue
		}
		if result, ok := m["result"].(map[string]any); ok && m["id"] != nil {
			_, initialize := result["protocolVersion"]
			_, discover := result["supportedVersions"]
			if !initialize && !discover {
				out = append(out, result)
			}
		}
	}
	return out
}

// On protocol 2026-07-28 a server may not ask its client anything while
// it serves a request (multi round-trip requests, SEP-2322), so the
// approval question of a call parked for permission never reached a
// client on it (the Go SDK's default, the Python SDK's v2): the call
// waited for an operator until the client gave up. The call now answers
// with the question as an input request; the client asks its user and
// sends the call again with the answer, which decides the same run: with
// -elicit-approval allow, accept runs the call and decline denies it.
func TestApprovalReachesAClientOnProtocol20260728(t *testing.T) {
	w := startWorker(t)
	for _, answer := range []string{"accept", "decline"} {
		t.Run(answer, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var asked []string
			var mu sync.Mutex
			cs := stdioClient(ctx, t, mcpserver.Config{TaskQueue: w.queue, Allow: []string{"workspace_list"}, ElicitApproval: mcpserver.ElicitAllow},
				&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: answer, Content: map[string]any{}}, nil
				}}, nil)

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workspace_list", Arguments: map[string]any{"path": "."}})
			require.NoError(t, err)
			mu.Lock()
			require.Len(t, asked, 1, "the client was asked once")
			assert.Contains(t, asked[0], "workspace_list")
			mu.Unlock()
			text := ""
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
			if answer == "accept" {
				assert.False(t, res.IsError, text)
				assert.Contains(t, text, "README.md")
			} else {
				assert.True(t, res.IsError, text)
				assert.Contains(t, text, "declined by the MCP client's user")
			}
		})
	}
}

// stdioClient is a Go SDK client (opts) on protocol 2026-07-28, its
// default, of a gateway of its own (cfg) served over stdio: a `starter
// mcp` process is one stdio session, whose request IDs name its calls'
// runs. wire, when set, logs what crosses it.
func stdioClient(ctx context.Context, t *testing.T, cfg mcpserver.Config, opts *mcp.ClientOptions, wire io.Writer) *mcp.ClientSession {
	t.Helper()
	cfg.Client = env.Server.Client()
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := mcpserver.New(context.Background(), cfg)
	require.NoError(t, err)
	toGateway, fromClient := io.Pipe()
	toClient, fromGateway := io.Pipe()
	go func() { _ = g.ServeStdio(ctx, toGateway, fromGateway); _ = fromGateway.Close() }()
	var transport mcp.Transport = &mcp.IOTransport{Reader: toClient, Writer: fromClient}
	if wire != nil {
		transport = &mcp.LoggingTransport{Transport: transport, Writer: wire}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "protocol-2026", Version: "1"}, opts).Connect(ctx, transport, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
	return cs
}
