package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/fenixrt/fenix/internal/atomicfile"
	"github.com/fenixrt/fenix/internal/readlimit"
	"github.com/fenixrt/fenix/netguard"
)

// Remote servers that need OAuth (a 401 naming their protected resource
// metadata, RFC 9728): an operator signs in once per worker host with
// Login (the worker's mcp-login), which stores the client registration
// and the tokens in the data directory; the worker sends the access token
// and refreshes it with the refresh token, saving each new one. The
// worker never starts a sign-in itself: it runs unattended, and a
// browser's redirect has nowhere to land. A server that asks for one
// fails to connect with a SignInNeededError naming the command.

// OAuthConfig is an http server's "oauth" object as Claude Code reads it.
type OAuthConfig struct {
	// ClientID is a client registered with the authorization server in
	// advance, for servers without dynamic client registration; its
	// secret, if any, is given to Login (MCP_CLIENT_SECRET).
	ClientID string
	// CallbackPort fixes the redirect URI's port
	// (http://localhost:PORT/callback), as a pre-registered client's
	// redirect URI must match; 0 picks a free one.
	CallbackPort int
	// Scopes, when set, are requested instead of those the server's
	// metadata or challenge names.
	Scopes []string
	// AuthServerMetadataURL names the authorization server's metadata
	// (RFC 8414 or OpenID discovery) where discovery would not find it;
	// a sign-in then uses that authorization server (pinDiscovery).
	AuthServerMetadataURL string
}

func parseOAuth(e oauthEntry, exp *expander, where string) (*OAuthConfig, error) {
	c := &OAuthConfig{ClientID: exp.expand(e.ClientID)}
	if len(e.CallbackPort) > 0 && string(e.CallbackPort) != "null" {
		port, err := strconv.Atoi(string(e.CallbackPort))
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("%s has oauth.callbackPort %s: want a port number from 1 to 65535", where, e.CallbackPort)
		}
		c.CallbackPort = port
	}
	if e.Scopes != "" {
		if c.Scopes = strings.Fields(exp.expand(e.Scopes)); len(c.Scopes) == 0 {
			return nil, fmt.Errorf("%s has oauth.scopes %q: want scopes separated by spaces", where, e.Scopes)
		}
	}
	if e.AuthServerMetadataURL != "" {
		raw := exp.expand(e.AuthServerMetadataURL)
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && netguard.IsLoopbackHost(u.Hostname()))) {
			return nil, fmt.Errorf("%s has oauth.authServerMetadataUrl %q: want an https:// URL (http only on loopback)", where, e.AuthServerMetadataURL)
		}
		c.AuthServerMetadataURL = raw
	}
	return c, nil
}

// Credentials are what a sign-in stored for one server: its client
// registration, the authorization server's endpoints and the tokens.
type Credentials struct {
	// Server and URL are the server's name and url at sign-in; the
	// credentials are used for that url only.
	Server string `json:"server"`
	URL    string `json:"url"`
	// Grant is "" for the authorization code grant (a user's sign-in,
	// refreshed with Token's refresh token) or GrantClientCredentials.
	Grant        string `json:"grant,omitempty"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientKey is a service account's PEM signing key, for an
	// authorization server that takes private_key_jwt assertions.
	ClientKey   string           `json:"client_key,omitempty"`
	AuthURL     string           `json:"auth_url"`
	TokenURL    string           `json:"token_url"`
	AuthStyle   oauth2.AuthStyle `json:"auth_style"`
	RedirectURL string           `json:"redirect_url"`
	Scopes      []string         `json:"scopes,omitempty"`
	Token       *oauth2.Token    `json:"token,omitempty"`
	SignedInAt  time.Time        `json:"signed_in_at"`
	// Issuer and AuthHosts are, for GrantClientCredentials, the
	// authorization server the sign-in met and the hosts it reached.
	Issuer    string   `json:"issuer,omitempty"`
	AuthHosts []string `json:"auth_hosts,omitempty"`
}

// oauthConfig is the client the credentials describe.
func (c *Credentials) oauthConfig() *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: c.RedirectURL, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: c.AuthURL, TokenURL: c.TokenURL, AuthStyle: c.AuthStyle},
	}
}

// maxCredentialBytes bounds a credentials file as read.
const maxCredentialBytes = 1 << 20

// CredentialStore keeps each server's Credentials in a directory of the
// worker's data directory, which commands, hooks and the stdio servers
// cannot read. A file is named after the server and a hash of its url:
// a configuration that points the name at another url (an agent that
// rewrote .mcp.json, and an operator who reloaded it) finds nothing to
// send there.
type CredentialStore struct {
	dir string
}

// NewCredentialStore keeps credentials in dir, made (0700) at the first
// Save.
func NewCredentialStore(dir string) *CredentialStore { return &CredentialStore{dir: dir} }

// Dir is where the credentials are kept.
func (s *CredentialStore) Dir() string { return s.dir }

func (s *CredentialStore) fileName(server ServerConfig) string {
	sum := sha256.Sum256([]byte(server.URL))
	return server.Name + "-" + hex.EncodeToString(sum[:6]) + ".json"
}

// Load returns server's credentials, or nil when it has none.
func (s *CredentialStore) Load(server ServerConfig) (*Credentials, error) {
	path := filepath.Join(s.dir, s.fileName(server))
	data, err := readlimit.File(path, maxCredentialBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: reading its OAuth credentials: %w", server.Name, err)
	}
	var c Credentials
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("MCP server %q: OAuth credentials %s are not valid JSON: %w", server.Name, path, err)
	}
	if c.URL != server.URL || (c.Token == nil && c.Grant != GrantClientCredentials) {
		return nil, nil
	}
	return &c, nil
}

// Save stores server's credentials, replacing what it had.
func (s *CredentialStore) Save(server ServerConfig, c *Credentials) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("MCP OAuth credentials directory: %w", err)
	}
	if err := atomicfile.WriteJSON(s.dir, s.fileName(server), c); err != nil {
		return fmt.Errorf("MCP server %q: saving its OAuth credentials: %w", server.Name, err)
	}
	return nil
}

// SignInNeededError is a server's refusal of the worker's requests (401)
// that only a sign-in can answer: it has no stored credentials, or they
// can no longer be refreshed.
type SignInNeededError struct {
	Server string
	// Why says what was tried.
	Why string
}

func (e *SignInNeededError) Error() string {
	return fmt.Sprintf("MCP server %q needs an OAuth sign-in (%s): run `worker mcp-login %s` on this host with the worker's -data-dir and configuration flags, then wait for the server's next connection attempt", e.Server, e.Why, e.Server)
}

// storedSignIn is the OAuth handler (auth.OAuthHandler) of an http
// server in the worker: it sends the stored access token, refreshes it
// when it expires or the server refuses it, and saves every new one.
type storedSignIn struct {
	server ServerConfig
	store  *CredentialStore
	// net is the worker's outbound policy; the token endpoint's host is
	// added to it.
	net netguard.Policy

	mu    sync.Mutex
	creds *Credentials
}

// oauthHandler is the OAuth handler of server's connection: a service
// account's (clientCredentialsHandler) or a user's sign-in (storedSignIn,
// also when there is none yet).
func oauthHandler(server ServerConfig, store *CredentialStore, net netguard.Policy) (auth.OAuthHandler, error) {
	creds, err := store.Load(server)
	if err != nil {
		return nil, err
	}
	if creds != nil && creds.Grant == GrantClientCredentials {
		return clientCredentialsHandler(server, creds, net)
	}
	return &storedSignIn{server: server, store: store, net: net, creds: creds}, nil
}

func urlHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("url %q: %w", raw, err)
	}
	return u.Hostname(), nil
}

// tokenClient reaches the stored token endpoint through the outbound
// guard (the worker's policy plus that endpoint's host, as for the
// server's own url).
func (h *storedSignIn) tokenClient() *http.Client {
	host, _ := urlHost(h.creds.TokenURL)
	setting := "FENIX_FETCH_ALLOW (or the token endpoint a sign-in stored in " + h.store.Dir() + ")"
	return &http.Client{Transport: guardedTransport(h.net, setting, host), Timeout: 30 * time.Second}
}

// TokenSource sends the stored access token, refreshed when it expired;
// none without credentials (the configured headers go alone).
func (h *storedSignIn) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.creds == nil {
		return nil, nil
	}
	return tokenSourceFunc(h.token), nil
}

type tokenSourceFunc func() (*oauth2.Token, error)

func (f tokenSourceFunc) Token() (*oauth2.Token, error) { return f() }

// token returns a valid access token, refreshing and saving one as
// needed.
func (h *storedSignIn) token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.creds.Token.Valid() {
		return h.creds.Token, nil
	}
	if err := h.refreshLocked(); err != nil {
		return nil, err
	}
	return h.creds.Token, nil
}

// refreshLocked trades the refresh token for a new access token and
// saves it. A sign-in stored since (by mcp-login while the worker runs)
// is taken instead.
func (h *storedSignIn) refreshLocked() error {
	if fresh, err := h.store.Load(h.server); err == nil && fresh != nil && fresh.Grant == "" && fresh.Token.AccessToken != h.creds.Token.AccessToken && fresh.Token.Valid() {
		h.creds = fresh
		return nil
	}
	if h.creds.Token.RefreshToken == "" {
		return &SignInNeededError{Server: h.server.Name, Why: "its access token expired or was refused, and the sign-in gave no refresh token"}
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, h.tokenClient()), 30*time.Second)
	defer cancel()
	expired := *h.creds.Token
	expired.Expiry = time.Unix(1, 0)
	tok, err := h.creds.oauthConfig().TokenSource(ctx, &expired).Token()
	if err != nil {
		return &SignInNeededError{Server: h.server.Name, Why: "refreshing its access token at " + h.creds.TokenURL + " failed: " + err.Error()}
	}
	next := *h.creds
	next.Token = tok
	if err := h.store.Save(h.server, &next); err != nil {
		// The new token still serves this worker until it stops; a
		// rotated refresh token not saved is lost with it.
		return err
	}
	h.creds = &next
	return nil
}

// Authorize answers a 401: with credentials, one refresh (or the sign-in
// stored since), after which the transport retries once; without, a
// SignInNeededError. A 403 for scope needs a new sign-in too.
func (h *storedSignIn) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.creds == nil {
		if fresh, err := h.store.Load(h.server); err == nil && fresh != nil {
			if fresh.Grant == GrantClientCredentials {
				return fmt.Errorf("MCP server %q: a service account's sign-in was stored; the server's next connection uses it", h.server.Name)
			}
			h.creds = fresh
			return nil
		}
		if h.server.HeadersHelper != "" || hasHeader(h.server.Headers, "Authorization") {
			return fmt.Errorf("MCP server %q refused the configured credentials (%s): check its Authorization header or headersHelper; if it signs in with OAuth instead, run `worker mcp-login %s`", h.server.Name, resp.Status, h.server.Name)
		}
		return &SignInNeededError{Server: h.server.Name, Why: fmt.Sprintf("it answered %s and this host has no stored sign-in for %s", resp.Status, h.server.URL)}
	}
	if resp.StatusCode == http.StatusForbidden {
		if challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate")); err == nil {
			for _, c := range challenges {
				if c.Params["error"] == "insufficient_scope" {
					return &SignInNeededError{Server: h.server.Name, Why: fmt.Sprintf("it answered 403 insufficient_scope to the stored token and asks for scope %q: add it to the server's oauth.scopes and sign in again", c.Params["scope"])}
				}
			}
		}
		// The server's own refusal, not the token's: the retry reports it.
		return nil
	}
	return h.refreshLocked()
}

func hasHeader(headers map[string]string, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
