package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/tools/mcp"
)

// tokenServer is a Streamable HTTP server behind a gateway that wants
// `Authorization: Bearer <token>`; it records each request's headers.
type tokenServer struct {
	URL   string
	token string
	mu    sync.Mutex
	seen  []http.Header
}

func startTokenServer(t *testing.T, token string) *tokenServer {
	s := &tokenServer{token: token}
	srv := sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "ping", Description: "Answers pong."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
		})
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Clone())
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			http.Error(w, "gateway: no valid token", http.StatusUnauthorized)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	s.URL = hs.URL + "/mcp"
	return s
}

func (s *tokenServer) lastHeaders() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

// helperProject is a project whose .mcp.json names the gateway with a
// headersHelper script, as a team writes one: it reads a token a CLI
// left in the user's cache and prints the headers.
func helperProject(t *testing.T, url, helper, script string) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "get-headers.sh"), []byte(script), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"gateway": {
  "type": "http", "url": "`+url+`",
  "headers": {"X-Tenant": "static", "X-Client": "fenix"},
  "headersHelper": "`+helper+`"}}}`), 0o644))
	return dir
}

func startHelperManager(t *testing.T, dir string) *mcp.Manager {
	loaded, err := mcp.Load([]string{dir}, nil)
	require.NoError(t, err)
	require.Len(t, loaded.Servers, 1, "%v", loaded.Warnings)
	m, err := mcp.NewManager(loaded.Servers, mcp.Options{HostID: "test-host", Credentials: mcp.NewCredentialStore(t.TempDir())})
	require.NoError(t, err)
	m.Start(15 * time.Second)
	t.Cleanup(m.Close)
	return m
}

// Claude Code's headersHelper: its JSON output adds headers at each
// connection, over the static ones, and it learns which server it serves.
func TestHeadersHelperSuppliesTheConnectionsHeaders(t *testing.T) {
	gw := startTokenServer(t, "tok-42")
	dir := helperProject(t, gw.URL, "./get-headers.sh", `#!/bin/sh
token=$(cat "$(dirname "$0")/token-cache" 2>/dev/null || echo tok-42)
printf '{"Authorization": "Bearer %s", "X-Tenant": "acme", "X-Served": "%s %s"}' "$token" "$CLAUDE_CODE_MCP_SERVER_NAME" "$CLAUDE_CODE_MCP_SERVER_URL"
`)
	m := startHelperManager(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, m.WaitReady(ctx), "%+v", m.Status())
	res, err := m.Call(ctx, "gateway", "ping", map[string]any{})
	require.NoError(t, err)
	assert.Equal(t, "pong", res.Text())
	h := gw.lastHeaders()
	assert.Equal(t, "acme", h.Get("X-Tenant"), "the helper's header wins over the static one")
	assert.Equal(t, "fenix", h.Get("X-Client"), "the static headers still go")
	assert.Equal(t, "gateway "+gw.URL, h.Get("X-Served"))
}

// A helper that fails, prints something else than a JSON object of
// strings or a header the transport owns leaves the server down, named
// in its status — without repeating what it printed, which holds a token.
func TestHeadersHelperFailuresAreNamed(t *testing.T) {
	gw := startTokenServer(t, "tok-42")
	for name, c := range map[string]struct{ script, want string }{
		"exits 1":     {"#!/bin/sh\necho 'vault: permission denied' >&2\nexit 1\n", "vault: permission denied"},
		"not JSON":    {"#!/bin/sh\necho 'Bearer tok-secret'\n", "not a JSON object"},
		"not strings": {"#!/bin/sh\necho '{\"X-Retries\": 3}'\n", "not a JSON object"},
		"header CRLF": {"#!/bin/sh\nprintf '{\"X-A\": \"a\\\\r\\\\nX-B: b\"}'\n", "not a valid HTTP header"},
		"owned":       {"#!/bin/sh\necho '{\"Content-Type\": \"text/plain\"}'\n", "the MCP transport sets itself"},
	} {
		t.Run(name, func(t *testing.T) {
			m := startHelperManager(t, helperProject(t, gw.URL, "./get-headers.sh", c.script))
			require.Eventually(t, func() bool { return m.Status()[0].LastError != "" }, 15*time.Second, 20*time.Millisecond)
			st := m.Status()[0]
			assert.False(t, st.Connected)
			assert.Contains(t, st.LastError, `headersHelper "./get-headers.sh"`)
			assert.Contains(t, st.LastError, c.want)
			assert.NotContains(t, st.LastError, "tok-secret")
		})
	}
}

// A helper's token the gateway refuses is named as such, not as a
// missing OAuth sign-in.
func TestARefusedHelperTokenIsNamed(t *testing.T) {
	gw := startTokenServer(t, "tok-42")
	m := startHelperManager(t, helperProject(t, gw.URL, "./get-headers.sh", "#!/bin/sh\necho '{\"Authorization\": \"Bearer expired\"}'\n"))
	require.Eventually(t, func() bool { return m.Status()[0].LastError != "" }, 15*time.Second, 20*time.Millisecond)
	assert.Contains(t, m.Status()[0].LastError, `MCP server "gateway" refused the configured credentials (401 Unauthorized)`)
}

func TestHeadersHelperIsRefusedOnStdio(t *testing.T) {
	servers, warnings, err := mcp.Parse([]byte(`{"mcpServers": {"local": {"command": "npx", "headersHelper": "./h.sh"}}}`), "/p/.mcp.json", nil)
	require.NoError(t, err)
	assert.Empty(t, servers)
	assert.Contains(t, strings.Join(warnings, "\n"), `"headersHelper" but runs over stdio`)
}
