package mcpserver

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/internal/harness/oauthmcp"
	"github.com/fenixrt/fenix/mcpserver"
	"github.com/fenixrt/fenix/tools/mcp"
)

// oauthGateway serves the gateway as an OAuth protected resource of as's
// authorization server, at its own URL (the resource).
func oauthGateway(t *testing.T, w *testWorker, as *oauthmcp.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	resource := "http://" + ln.Addr().String() + mcpserver.Path
	as.AllowResource(resource)
	oauth, err := mcpserver.NewOAuthResource(context.Background(), mcpserver.OAuthConfig{Issuer: as.Issuer, Resource: resource})
	require.NoError(t, err)
	cfg := mcpserver.Config{Client: env.Server.Client(), TaskQueue: w.queue, Allow: []string{"calculator"}}
	g, err := mcpserver.New(context.Background(), cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeHTTP(ctx, ln, mcpserver.HTTPOptions{Addr: ln.Addr().String(), OAuth: oauth}) }()
	t.Cleanup(func() { cancel(); <-done })
	return resource
}

// Clients that only sign in — hosted agent platforms' connectors, which
// cannot send a static header — reach the gateway through the operator's
// authorization server: the 401 names the gateway's protected resource
// metadata, which names the server; a JWT issued for the gateway is
// accepted, one issued for another resource or expired is not. Fenix's
// own client (as `worker mcp-login` signs in) and the official TypeScript
// SDK client sign in and call a governed tool; a signed-in user's
// conversation names are their own.
func TestClientsSignInToTheGatewayWithOAuth(t *testing.T) {
	w := startWorker(t)
	as := oauthmcp.Start(t, time.Hour)
	resource := oauthGateway(t, w, as)

	resp, err := http.Post(resource, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	challenge := resp.Header.Get("WWW-Authenticate")
	metadataURL := strings.TrimSuffix(resource, mcpserver.Path) + "/.well-known/oauth-protected-resource/mcp"
	assert.Contains(t, challenge, `resource_metadata="`+metadataURL+`"`)
	resp, err = http.Get(metadataURL)
	require.NoError(t, err)
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&prm))
	resp.Body.Close()
	assert.Equal(t, resource, prm.Resource)
	assert.Equal(t, []string{as.Issuer}, prm.AuthorizationServers)

	for name, token := range map[string]string{
		"for another resource": as.IssueToken(),
		"expired":              as.TokenFor(resource, -time.Minute),
		"not a JWT":            "at-opaque",
	} {
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a token %s", name)
	}

	t.Run("Fenix's client", func(t *testing.T) {
		server := mcp.ServerConfig{Name: "fenix", Key: "fenix", Type: mcp.TransportHTTP, URL: resource, Path: "the test"}
		store := mcp.NewCredentialStore(t.TempDir())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		login, err := mcp.Login(ctx, server, store, mcp.LoginOptions{Open: oauthmcp.Browse})
		require.NoError(t, err)
		assert.Equal(t, 1, login.Tools)
		m, err := mcp.NewManager([]mcp.ServerConfig{server}, mcp.Options{HostID: "test-host", Credentials: store})
		require.NoError(t, err)
		defer m.Close()
		m.Start(30 * time.Second)
		require.NoError(t, m.WaitReady(ctx))
		res, err := m.Call(ctx, "fenix", "calculator", map[string]any{"expression": "6 * 7"})
		require.NoError(t, err)
		assert.Contains(t, res.Text(), "42")
	})

	t.Run("the TypeScript SDK client", func(t *testing.T) {
		d := startDriver(t, map[string]any{"transport": "http", "url": resource, "oauth": true,
			"headers": map[string]string{mcpserver.HeaderConversation: "shared"},
			"steps":   []any{step("list"), call("calculator", map[string]any{"expression": "2 + 2"})}})
		d.next(30*time.Second, "authorized")
		d.next(30*time.Second, "connected")
		assert.Equal(t, []string{"calculator"}, toolNames(d.next(30*time.Second, "tools")))
		res := d.result(time.Minute)
		require.False(t, res.IsError, res.text())
		assert.Contains(t, res.text(), "4")
		// The conversation a signed-in user names is theirs alone.
		assert.Regexp(t, `^assignment-mcp-u[0-9a-f]{12}-shared-`, res.workflowID())
		d.next(30*time.Second, "done")
	})
}
