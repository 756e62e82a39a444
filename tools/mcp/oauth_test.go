package mcp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/internal/harness/oauthmcp"
	"github.com/fenixrt/fenix/tools/mcp"
)

// secureServer is .mcp.json's entry for s, as a user adds a hosted server
// (`claude mcp add --transport http secure URL`).
func secureServer(t *testing.T, url, oauth string) mcp.ServerConfig {
	t.Helper()
	return secureServerOver(t, mcp.TransportHTTP, url, oauth)
}

// secureServerOver is secureServer over transport ("http" or "sse").
func secureServerOver(t *testing.T, transport, url, oauth string) mcp.ServerConfig {
	t.Helper()
	entry := `{"type": "` + transport + `", "url": "` + url + `"`
	if oauth != "" {
		entry += `, "oauth": ` + oauth
	}
	entry += "}"
	servers, warnings, err := mcp.Parse([]byte(`{"mcpServers": {"secure": `+entry+`}}`), "/srv/project/.mcp.json", func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Len(t, servers, 1, "%v", warnings)
	return servers[0]
}

func signIn(t *testing.T, server mcp.ServerConfig, store *mcp.CredentialStore) mcp.LoginResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := mcp.Login(ctx, server, store, mcp.LoginOptions{Open: oauthmcp.Browse})
	require.NoError(t, err)
	return res
}

// signedInManager runs server with store's sign-ins, as the worker does.
func signedInManager(t *testing.T, server mcp.ServerConfig, store *mcp.CredentialStore) *mcp.Manager {
	t.Helper()
	m, err := mcp.NewManager([]mcp.ServerConfig{server}, mcp.Options{HostID: "test-host", Credentials: store})
	require.NoError(t, err)
	m.Start(10 * time.Second)
	t.Cleanup(m.Close)
	return m
}

func whoami(t *testing.T, m *mcp.Manager) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := m.Call(ctx, "secure", "whoami", map[string]any{})
	if err != nil {
		return "", err
	}
	return res.Text(), nil
}

// A hosted server that answers 401: the operator signs in once (dynamic
// registration, PKCE, the resource indicator), the tokens are stored out
// of the agent's reach, and the worker's connection sends them.
func TestASignInIsStoredAndUsedByTheWorker(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	server := secureServer(t, srv.URL, "")
	store := mcp.NewCredentialStore(filepath.Join(t.TempDir(), "mcp-oauth"))

	res := signIn(t, server, store)
	assert.Equal(t, 1, res.Tools)
	assert.EqualValues(t, 1, srv.Registrations.Load())
	assert.NotEmpty(t, res.Credentials.Token.RefreshToken, "a refresh token was granted")
	info, err := os.Stat(store.Dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	files, err := filepath.Glob(filepath.Join(store.Dir(), "secure-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	info, err = os.Stat(files[0])
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	m := signedInManager(t, server, store)
	text, err := whoami(t, m)
	require.NoError(t, err)
	assert.Equal(t, "signed in as "+oauthmcp.User, text)
	assert.Zero(t, srv.Refreshes.Load(), "a valid token is sent as it is")
}

// Access tokens expire (here at once: oauth2 refreshes one within ten
// seconds of its expiry) or are revoked before their time; the worker
// trades the refresh token for a new one, saves the rotated refresh
// token, and the call goes through.
func TestTheWorkerRefreshesAndSavesTheToken(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		srv := oauthmcp.Start(t, 5*time.Second)
		server := secureServer(t, srv.URL, "")
		store := mcp.NewCredentialStore(t.TempDir())
		first := signIn(t, server, store).Credentials.Token.RefreshToken
		m := signedInManager(t, server, store)
		for range 2 {
			text, err := whoami(t, m)
			require.NoError(t, err)
			assert.Contains(t, text, oauthmcp.User)
		}
		assert.GreaterOrEqual(t, srv.Refreshes.Load(), int64(1))
		saved, err := store.Load(server)
		require.NoError(t, err)
		assert.NotEqual(t, first, saved.Token.RefreshToken, "the rotated refresh token was saved (the first is spent)")

		// A worker restarted on the data directory goes on from it.
		restarted := signedInManager(t, server, store)
		_, err = whoami(t, restarted)
		require.NoError(t, err)
	})
	t.Run("revoked", func(t *testing.T) {
		srv := oauthmcp.Start(t, time.Hour)
		server := secureServer(t, srv.URL, "")
		store := mcp.NewCredentialStore(t.TempDir())
		signIn(t, server, store)
		m := signedInManager(t, server, store)
		_, err := whoami(t, m)
		require.NoError(t, err)
		srv.RevokeAccessTokens()
		text, err := whoami(t, m)
		require.NoError(t, err, "a 401 to a signed-in server refreshes and retries once")
		assert.Contains(t, text, oauthmcp.User)
		assert.EqualValues(t, 1, srv.Refreshes.Load())
	})
}

// Without a sign-in, or once the grant is withdrawn, the server's tools
// fail naming the command that helps; the worker never opens a browser.
func TestAServerThatNeedsASignInNamesTheCommand(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	server := secureServer(t, srv.URL, "")
	store := mcp.NewCredentialStore(t.TempDir())
	m := signedInManager(t, server, store)
	require.Eventually(t, func() bool { return strings.Contains(m.Status()[0].LastError, "worker mcp-login secure") },
		10*time.Second, 50*time.Millisecond, "%+v", m.Status())
	_, err := whoami(t, m)
	require.Error(t, err)
	assert.Zero(t, srv.Authorizations.Load(), "the worker started no authorization")

	signIn(t, server, store)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, m.WaitReady(ctx), "the next connection attempt takes the new sign-in")
	_, err = whoami(t, m)
	require.NoError(t, err)

	srv.RevokeAll()
	_, err = whoami(t, m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker mcp-login secure")
	assert.Contains(t, err.Error(), "invalid_grant")
}

// A sign-in is for the url it was made at: a configuration that points
// the server's name elsewhere (an agent's rewrite of .mcp.json that an
// operator reloaded) sends nothing there.
func TestASignInStaysWithItsURL(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	store := mcp.NewCredentialStore(t.TempDir())
	signIn(t, secureServer(t, srv.URL, ""), store)

	var mu sync.Mutex
	var seen []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(elsewhere.Close)
	m := signedInManager(t, secureServer(t, elsewhere.URL+"/mcp", ""), store)
	require.Eventually(t, func() bool { return m.Status()[0].LastError != "" }, 10*time.Second, 50*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for _, h := range seen {
		assert.Empty(t, h, "the token went to another url")
	}
}

// .mcp.json's oauth object, as Claude Code reads it.
func TestOAuthConfiguration(t *testing.T) {
	s := secureServer(t, "https://mcp.example.com/mcp", `{"clientId": "fenix-fleet", "callbackPort": 8765, "scopes": "notes:read notes:write"}`)
	require.NotNil(t, s.OAuth)
	assert.Equal(t, mcp.OAuthConfig{ClientID: "fenix-fleet", CallbackPort: 8765, Scopes: []string{"notes:read", "notes:write"}}, *s.OAuth)

	for oauth, want := range map[string]string{
		`{"callbackPort": 0}`:                              "oauth.callbackPort 0",
		`{"callbackPort": "8080"}`:                         "oauth.callbackPort \"8080\"",
		`{"callbackPort": 70000}`:                          "oauth.callbackPort 70000",
		`{"scopes": "  "}`:                                 "oauth.scopes",
		`{"authServerMetadataUrl": "http://as.example/x"}`: "want an https:// URL",
	} {
		_, warnings, err := mcp.Parse([]byte(`{"mcpServers": {"secure": {"type": "http", "url": "https://mcp.example.com/mcp", "oauth": `+oauth+`}}}`), "/p/.mcp.json", nil)
		require.NoError(t, err)
		assert.Contains(t, strings.Join(warnings, "\n"), want, "%s", oauth)
	}
	servers, warnings, err := mcp.Parse([]byte(`{"mcpServers": {"secure": {"command": "npx", "oauth": {}}}}`), "/p/.mcp.json", nil)
	require.NoError(t, err)
	assert.Empty(t, servers)
	assert.Contains(t, strings.Join(warnings, "\n"), "runs over stdio")
	servers, _, err = mcp.Parse([]byte(`{"mcpServers": {"secure": {"type": "sse", "url": "https://h.example/sse", "oauth": {"clientId": "fenix"}}}}`), "/p/.mcp.json", nil)
	require.NoError(t, err)
	require.Len(t, servers, 1, "an sse server signs in as an http one does")
	assert.Equal(t, "fenix", servers[0].OAuth.ClientID)
	pinned := secureServer(t, "https://mcp.example.com/mcp", `{"authServerMetadataUrl": "https://login.example.com/tenant/v2.0/.well-known/openid-configuration"}`)
	assert.Equal(t, "https://login.example.com/tenant/v2.0/.well-known/openid-configuration", pinned.OAuth.AuthServerMetadataURL)
}

// An authorization server discovery cannot find (the server's 401 names
// no metadata, and the provider's is at a path of its own): without
// oauth.authServerMetadataUrl the sign-in fails; with it, as in Claude
// Code, a user's sign-in over Streamable HTTP and HTTP+SSE and a service
// account's go to the authorization server it names, and the worker
// refreshes at that server's token endpoint.
func TestAuthServerMetadataURLNamesAnUndiscoverableAuthorizationServer(t *testing.T) {
	srv := oauthmcp.StartUndiscoverable(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := mcp.Login(ctx, secureServer(t, srv.URL, ""), mcp.NewCredentialStore(t.TempDir()), mcp.LoginOptions{Open: oauthmcp.Browse})
	require.Error(t, err, "discovery finds no authorization server")

	pinned := `{"authServerMetadataUrl": "` + srv.MetadataURL + `"}`
	for _, server := range []mcp.ServerConfig{secureServer(t, srv.URL, pinned), secureServerOver(t, mcp.TransportSSE, srv.SSEURL, pinned)} {
		store := mcp.NewCredentialStore(t.TempDir())
		res := signIn(t, server, store)
		assert.Equal(t, 1, res.Tools, server.Type)
		assert.Equal(t, srv.Issuer+"/token", res.Credentials.TokenURL, server.Type)
		m := signedInManager(t, server, store)
		require.NoError(t, m.WaitReady(ctx), server.Type)
		text, err := whoami(t, m)
		require.NoError(t, err, server.Type)
		assert.Equal(t, "signed in as "+oauthmcp.User, text)
		refreshes := srv.Refreshes.Load()
		srv.RevokeAccessTokens()
		_, err = whoami(t, m)
		require.NoError(t, err, "%s: refreshed at the pinned token endpoint", server.Type)
		assert.Equal(t, refreshes+1, srv.Refreshes.Load(), server.Type)
	}

	srv.ServiceAccount("fenix-fleet", "s3cret")
	account := secureServer(t, srv.URL, `{"clientId": "fenix-fleet", "authServerMetadataUrl": "`+srv.MetadataURL+`"}`)
	store := mcp.NewCredentialStore(t.TempDir())
	res, err := mcp.Login(ctx, account, store, mcp.LoginOptions{ClientCredentials: true, ClientSecret: "s3cret"})
	require.NoError(t, err)
	assert.Equal(t, srv.Issuer, res.Credentials.Issuer)
	m := signedInManager(t, account, store)
	require.NoError(t, m.WaitReady(ctx))
	text, err := whoami(t, m)
	require.NoError(t, err)
	assert.Contains(t, text, oauthmcp.User)
}

// A pre-registered client's redirect URI is fixed: oauth.callbackPort is
// where the sign-in listens, and a port in use is named.
func TestLoginListensOnTheCallbackPort(t *testing.T) {
	busy, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { busy.Close() })
	port := busy.Addr().(*net.TCPAddr).Port
	srv := oauthmcp.Start(t, time.Hour)
	server := secureServer(t, srv.URL, fmt.Sprintf(`{"callbackPort": %d}`, port))
	_, err = mcp.Login(context.Background(), server, mcp.NewCredentialStore(t.TempDir()), mcp.LoginOptions{Open: oauthmcp.Browse})
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("localhost:%d (oauth.callbackPort)", port))

	busy.Close()
	var redirect string
	res, err := mcp.Login(context.Background(), server, mcp.NewCredentialStore(t.TempDir()), mcp.LoginOptions{Open: func(ctx context.Context, u, r string) error {
		redirect = r
		return oauthmcp.Browse(ctx, u, r)
	}})
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("http://localhost:%d/callback", port), redirect)
	assert.Equal(t, redirect, res.Credentials.RedirectURL)
}

// A service account (the client credentials grant): signed in once
// without a browser, the worker takes a token at each connection, held
// to the authorization server the sign-in met.
func TestAServiceAccountSignsInWithoutABrowser(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	srv.ServiceAccount("fenix-fleet", "s3cret")
	server := secureServer(t, srv.URL, `{"clientId": "fenix-fleet"}`)
	store := mcp.NewCredentialStore(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := mcp.Login(ctx, server, store, mcp.LoginOptions{ClientCredentials: true, ClientSecret: "wrong"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_client")

	res, err := mcp.Login(ctx, server, store, mcp.LoginOptions{ClientCredentials: true, ClientSecret: "s3cret"})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Tools)
	assert.Equal(t, mcp.GrantClientCredentials, res.Credentials.Grant)
	assert.Equal(t, srv.Issuer, res.Credentials.Issuer)
	assert.Zero(t, srv.Registrations.Load(), "no dynamic registration for a service account")

	m := signedInManager(t, server, store)
	text, err := whoami(t, m)
	require.NoError(t, err)
	assert.Contains(t, text, oauthmcp.User)

	// A sign-in held to another issuer (the server now names another
	// authorization server) does not send the secret.
	creds, err := store.Load(server)
	require.NoError(t, err)
	creds.Issuer = "https://elsewhere.example"
	require.NoError(t, store.Save(server, creds))
	moved := signedInManager(t, server, store)
	require.Eventually(t, func() bool {
		return strings.Contains(moved.Status()[0].LastError, "does not match pre-registered credentials issuer")
	},
		10*time.Second, 50*time.Millisecond, "%+v", moved.Status())

	_, err = mcp.Login(ctx, secureServer(t, srv.URL, ""), store, mcp.LoginOptions{ClientCredentials: true, ClientSecret: "s3cret"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "oauth.clientId")
}

// A hosted server reached over HTTP+SSE ("type": "sse", the transport
// many hosted servers still speak) signs in as a Streamable HTTP one
// does: without a sign-in its tools fail naming the command; after
// `worker mcp-login` the stream and every posted message carry the
// token; a revoked token is refreshed and the message sent again.
func TestAnSSEServerSignsIn(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	server := secureServerOver(t, mcp.TransportSSE, srv.SSEURL, "")
	store := mcp.NewCredentialStore(t.TempDir())
	m := signedInManager(t, server, store)
	require.Eventually(t, func() bool { return strings.Contains(m.Status()[0].LastError, "worker mcp-login secure") },
		10*time.Second, 50*time.Millisecond, "%+v", m.Status())

	res := signIn(t, server, store)
	assert.Equal(t, 1, res.Tools)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, m.WaitReady(ctx), "the next connection attempt takes the new sign-in")
	text, err := whoami(t, m)
	require.NoError(t, err)
	assert.Equal(t, "signed in as "+oauthmcp.User, text)

	srv.RevokeAccessTokens()
	text, err = whoami(t, m)
	require.NoError(t, err, "a 401 to a posted message refreshes and sends it again")
	assert.Contains(t, text, oauthmcp.User)
	assert.EqualValues(t, 1, srv.Refreshes.Load())
}

// An operator who publishes a Client ID Metadata Document for their
// workers (SEP-991) names it to the sign-in: an authorization server that
// supports such documents gets its URL as the client's ID and nothing is
// registered; the worker refreshes as that client.
func TestASignInUsesTheOperatorsClientMetadataDocument(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	free, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := free.Addr().(*net.TCPAddr).Port
	const document = "https://fleet.example.com/fenix-client.json"
	srv.ClientMetadataDocument(document, fmt.Sprintf("http://localhost:%d/callback", port))
	server := secureServer(t, srv.URL, fmt.Sprintf(`{"callbackPort": %d}`, port))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	_, err = mcp.Login(ctx, server, mcp.NewCredentialStore(t.TempDir()), mcp.LoginOptions{Open: oauthmcp.Browse, ClientMetadataURL: "http://fleet.example.com/fenix-client.json"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want an https URL with a path")

	store := mcp.NewCredentialStore(t.TempDir())
	require.NoError(t, free.Close())
	res, err := mcp.Login(ctx, server, store, mcp.LoginOptions{Open: oauthmcp.Browse, ClientMetadataURL: document})
	require.NoError(t, err)
	assert.Equal(t, document, res.Credentials.ClientID)
	assert.Zero(t, srv.Registrations.Load(), "no client registered")
	m := signedInManager(t, server, store)
	require.NoError(t, m.WaitReady(ctx))
	srv.RevokeAccessTokens()
	text, err := whoami(t, m)
	require.NoError(t, err, "refreshed as the document's client")
	assert.Contains(t, text, oauthmcp.User)
	assert.EqualValues(t, 1, srv.Refreshes.Load())
}

// A service account that proves itself with a key (private_key_jwt,
// RFC 7523) instead of a secret: the sign-in and each worker connection
// sign a fresh assertion for the authorization server, the key is kept
// with the sign-in, and a key the server refuses or cannot take is named.
func TestAServiceAccountSignsWithItsKey(t *testing.T) {
	srv := oauthmcp.Start(t, time.Hour)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srv.ServiceAccountKey("fenix-fleet", &key.PublicKey)
	pemKey := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	server := secureServer(t, srv.URL, `{"clientId": "fenix-fleet"}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	login := func(opts mcp.LoginOptions) (mcp.LoginResult, error) {
		opts.ClientCredentials = true
		return mcp.Login(ctx, server, mcp.NewCredentialStore(t.TempDir()), opts)
	}

	store := mcp.NewCredentialStore(t.TempDir())
	res, err := mcp.Login(ctx, server, store, mcp.LoginOptions{ClientCredentials: true, ClientKey: pemKey(key)})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Tools)
	assert.Equal(t, srv.Issuer, res.Credentials.Issuer)
	assert.Empty(t, res.Credentials.ClientSecret)
	assert.EqualValues(t, 1, srv.Assertions.Load())
	m := signedInManager(t, server, store)
	require.NoError(t, m.WaitReady(ctx))
	text, err := whoami(t, m)
	require.NoError(t, err)
	assert.Contains(t, text, oauthmcp.User)
	assert.EqualValues(t, 2, srv.Assertions.Load(), "the worker's connection signed its own")

	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	_, err = login(mcp.LoginOptions{ClientKey: pemKey(other)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_client")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	_, err = login(mcp.LoginOptions{ClientKey: pemKey(rsaKey)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "signs client assertions with ES256, EdDSA, not the client key's RS256")
	_, err = login(mcp.LoginOptions{ClientKey: []byte("s3cret")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the client key is not PEM")
	_, err = login(mcp.LoginOptions{ClientKey: pemKey(key), ClientSecret: "s3cret"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not both")
}
