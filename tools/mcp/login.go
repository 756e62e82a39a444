package mcp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/fenixrt/fenix/netguard"
)

// LoginOptions are how Login reaches the operator and the network.
type LoginOptions struct {
	// Open directs the operator to the authorization URL (prints it; a
	// test fetches it as a browser would). The browser's redirect then
	// lands on the callback Login listens on.
	Open func(ctx context.Context, authorizationURL, redirectURL string) error
	// ClientSecret goes with a pre-registered oauth.clientId (Claude
	// Code's --client-secret; MCP_CLIENT_SECRET for the worker's
	// mcp-login).
	ClientSecret string
	// Net is the outbound policy the server's own requests go through,
	// as in the worker (Options.Net); the authorization server's
	// requests are the operator's and go out as any program's.
	Net netguard.Policy
	// HTTPClient reaches the authorization server (default: a client
	// with a 30 s timeout).
	HTTPClient *http.Client
	// ClientCredentials signs in as a service account (the client
	// credentials grant, SEP-1046): oauth.clientId and ClientSecret, no
	// browser. The worker takes a new token at each connection.
	ClientCredentials bool
	// ClientKey, for ClientCredentials instead of ClientSecret, is the
	// service account's PEM private key: it signs an assertion for each
	// token request (private_key_jwt, RFC 7523), and the worker keeps it
	// with the sign-in in its data directory.
	ClientKey []byte
	// ClientMetadataURL is the https URL of a Client ID Metadata
	// Document the operator publishes for their workers (SEP-991): an
	// authorization server that supports such documents takes the URL
	// as the client's ID instead of a registration. Its redirect_uris
	// must hold http://localhost:PORT/callback (oauth.callbackPort).
	ClientMetadataURL string
}

// LoginResult is what a sign-in stored and what the server then served.
type LoginResult struct {
	Credentials *Credentials
	// Tools is how many tools the server lists with the new token.
	Tools int
}

// Login signs the operator in to an http or sse server that needs OAuth, as
// Claude Code's /mcp does: it connects, and on the server's 401 follows
// its protected resource metadata to the authorization server, registers
// a client there (dynamically, or oauth.clientId), opens the
// authorization URL with PKCE and the resource indicator, takes the code
// the browser's redirect brings to http://localhost:PORT/callback, trades
// it for tokens (asking for a refresh token) and stores them for the
// worker. It ends by listing the server's tools with the new token.
func Login(ctx context.Context, server ServerConfig, store *CredentialStore, opts LoginOptions) (LoginResult, error) {
	if server.Type != TransportHTTP && server.Type != TransportSSE {
		return LoginResult{}, fmt.Errorf("MCP server %q is a %s server: only servers reached over HTTP (\"type\": \"http\" or \"sse\") sign in", server.Name, server.Type)
	}
	if opts.Open == nil && !opts.ClientCredentials {
		return LoginResult{}, errors.New("LoginOptions.Open is required: something must direct the operator to the authorization URL")
	}
	oauth := server.OAuth
	if oauth == nil {
		oauth = &OAuthConfig{}
	}
	if opts.ClientCredentials {
		return loginClientCredentials(ctx, server, store, opts, oauth)
	}
	if opts.ClientMetadataURL != "" {
		if u, err := url.Parse(opts.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return LoginResult{}, fmt.Errorf("client metadata document %q: want an https URL with a path (https://fleet.example.com/fenix-client.json)", opts.ClientMetadataURL)
		}
	}
	callback, err := listenForCallback(oauth.CallbackPort)
	if err != nil {
		return LoginResult{}, fmt.Errorf("MCP server %q: %w", server.Name, err)
	}
	defer callback.close()
	asClient := opts.HTTPClient
	if asClient == nil {
		asClient = &http.Client{Timeout: 30 * time.Second}
	}

	asClient, pinned := pinDiscovery(server, asClient)
	var signedIn *Credentials
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         callback.redirectURL,
		RequestRefreshToken: true,
		Client:              asClient,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if err := opts.Open(ctx, args.URL, callback.redirectURL); err != nil {
				return nil, fmt.Errorf("opening the authorization URL: %w", err)
			}
			return callback.await(ctx)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			signedIn = &Credentials{
				Server: server.Name, URL: server.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
				AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle,
				RedirectURL: c.RedirectURL, Scopes: c.Scopes,
			}
			return c.TokenSource(ctx, tok), nil
		},
	}
	if opts.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: opts.ClientMetadataURL}
	}
	if oauth.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: oauth.ClientID}
		if opts.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: opts.ClientSecret}
		}
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{callback.redirectURL},
			ClientName:              "Fenix worker",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}}
	}
	if len(oauth.Scopes) > 0 {
		cfg.ScopeFilter = func([]string) []string { return oauth.Scopes }
	}
	handler, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return LoginResult{}, fmt.Errorf("MCP server %q: %w", server.Name, err)
	}
	// The session is closed before the token is taken: its last request
	// (its DELETE) may refresh a short-lived token, spending the refresh
	// token a save before it would have kept.
	tools, err := listTools(ctx, server, opts.Net, pinned.handler(handler))
	if err != nil {
		return LoginResult{}, err
	}
	if signedIn == nil {
		return LoginResult{}, fmt.Errorf("MCP server %q at %s answered without asking to sign in (no 401): nothing to store", server.Name, server.URL)
	}
	// The token the session ended with (a step-up or a refresh may have
	// replaced the first).
	ts, err := handler.TokenSource(ctx)
	if err != nil || ts == nil {
		return LoginResult{}, fmt.Errorf("MCP server %q: no token after sign-in: %v", server.Name, err)
	}
	tok, err := ts.Token()
	if err != nil {
		return LoginResult{}, fmt.Errorf("MCP server %q: the token after sign-in: %w", server.Name, err)
	}
	signedIn.Token = tok
	signedIn.SignedInAt = time.Now().UTC()
	if err := store.Save(server, signedIn); err != nil {
		return LoginResult{}, err
	}
	return LoginResult{Credentials: signedIn, Tools: tools}, nil
}

// callbackServer takes the authorization server's redirect on loopback.
type callbackServer struct {
	redirectURL string
	servers     []*http.Server
	results     chan callbackResult
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// listenForCallback listens on port (0: a free one) of 127.0.0.1 and, where
// the host has it, ::1: a browser may resolve localhost to either.
func listenForCallback(port int) (*callbackServer, error) {
	first, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in's redirect on localhost:%d (oauth.callbackPort): %w", port, err)
	}
	port = first.Addr().(*net.TCPAddr).Port
	listeners := []net.Listener{first}
	if v6, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		listeners = append(listeners, v6)
	}
	c := &callbackServer{redirectURL: fmt.Sprintf("http://localhost:%d/callback", port), results: make(chan callbackResult, 1)}
	for _, l := range listeners {
		srv := &http.Server{Handler: http.HandlerFunc(c.serve), ReadHeaderTimeout: 10 * time.Second}
		c.servers = append(c.servers, srv)
		go func() { _ = srv.Serve(l) }()
	}
	return c, nil
}

func (c *callbackServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	var result callbackResult
	switch {
	case q.Get("error") != "":
		result.err = fmt.Errorf("the authorization server refused: %s %s", q.Get("error"), q.Get("error_description"))
	case q.Get("code") == "":
		http.Error(w, "no authorization code in the redirect", http.StatusBadRequest)
		return
	default:
		result.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	select {
	case c.results <- result:
	default:
		http.Error(w, "a redirect was already taken; start the sign-in again", http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if result.err != nil {
		fmt.Fprintf(w, "<p>Fenix: the sign-in failed: %s</p>", html.EscapeString(result.err.Error()))
		return
	}
	fmt.Fprint(w, "<p>Fenix: signed in. You can close this tab.</p>")
}

// await waits for the redirect of the authorization just opened.
func (c *callbackServer) await(ctx context.Context) (*auth.AuthorizationResult, error) {
	select {
	case r := <-c.results:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the browser's redirect to %s: %w", c.redirectURL, ctx.Err())
	}
}

func (c *callbackServer) close() {
	for _, s := range c.servers {
		_ = s.Close()
	}
}

// listTools connects to server with handler answering its 401, lists its
// tools and closes the session.
func listTools(ctx context.Context, server ServerConfig, net netguard.Policy, handler auth.OAuthHandler) (int, error) {
	httpc, err := httpClient(server, net)
	if err != nil {
		return 0, fmt.Errorf("MCP server %q: %w", server.Name, err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "fenix-mcp-login", Version: "1"}, nil)
	var transport sdk.Transport = &sdk.StreamableClientTransport{Endpoint: server.URL, HTTPClient: httpc, OAuthHandler: handler, MaxRetries: 2}
	if server.Type == TransportSSE {
		httpc.Transport = &authorizingTransport{base: httpc.Transport, handler: handler}
		transport = &sdk.SSEClientTransport{Endpoint: server.URL, HTTPClient: httpc, MaxEventSize: MaxMessageBytes}
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return 0, fmt.Errorf("MCP server %q at %s: signing in: %w", server.Name, server.URL, err)
	}
	defer session.Close()
	var tools int
	for _, err := range session.Tools(ctx, nil) {
		if err != nil {
			return 0, fmt.Errorf("MCP server %q: listing its tools after sign-in: %w", server.Name, err)
		}
		tools++
	}
	return tools, nil
}
