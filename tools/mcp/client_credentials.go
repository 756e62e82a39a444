package mcp

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/fenixrt/fenix/netguard"
)

// GrantClientCredentials is the Grant of a service account's sign-in:
// the worker trades the client's ID and secret (or an assertion its key
// signs) for a token at each connection (the client credentials grant,
// SEP-1046), no user involved.
const GrantClientCredentials = "client_credentials"

// loginClientCredentials checks a service account against server: it
// connects with the go-sdk's client credentials handler, lists the tools
// and stores the client and where its authorization server was (its
// issuer, which the worker then holds it to, and the hosts it reached).
func loginClientCredentials(ctx context.Context, server ServerConfig, store *CredentialStore, opts LoginOptions, oauth *OAuthConfig) (LoginResult, error) {
	if oauth.ClientID == "" {
		return LoginResult{}, fmt.Errorf("MCP server %q: the client credentials grant needs the service account's ID in .mcp.json's oauth.clientId", server.Name)
	}
	switch {
	case opts.ClientSecret == "" && len(opts.ClientKey) == 0:
		return LoginResult{}, fmt.Errorf("MCP server %q: the client credentials grant needs the service account's secret (MCP_CLIENT_SECRET) or signing key (-client-key)", server.Name)
	case opts.ClientSecret != "" && len(opts.ClientKey) > 0:
		return LoginResult{}, fmt.Errorf("MCP server %q: give the service account's secret or its signing key, not both", server.Name)
	}
	creds := &Credentials{Server: server.Name, URL: server.URL, Grant: GrantClientCredentials, ClientID: oauth.ClientID,
		ClientSecret: opts.ClientSecret, ClientKey: string(opts.ClientKey)}
	asClient := opts.HTTPClient
	if asClient == nil {
		asClient = &http.Client{Timeout: 30 * time.Second}
	}
	seen := &authServerRecorder{base: asClient.Transport}
	if seen.base == nil {
		seen.base = http.DefaultTransport
	}
	handler, pinned, err := serviceAccountHandler(server, creds, seen, asClient.Timeout)
	if err != nil {
		return LoginResult{}, err
	}
	tools, err := listTools(ctx, server, opts.Net, handler)
	if err != nil {
		return LoginResult{}, err
	}
	issuer, hosts := seen.result()
	if pinned != nil {
		issuer = pinned.Issuer()
	}
	if len(hosts) == 0 {
		return LoginResult{}, fmt.Errorf("MCP server %q at %s answered without asking to sign in (no 401): nothing to store", server.Name, server.URL)
	}
	creds.Issuer, creds.AuthHosts, creds.SignedInAt = issuer, hosts, time.Now().UTC()
	if err := store.Save(server, creds); err != nil {
		return LoginResult{}, err
	}
	return LoginResult{Credentials: creds, Tools: tools}, nil
}

// clientCredentialsHandler is the worker's handler for a service
// account's sign-in: held to the issuer the sign-in met (a server that
// names another authorization server later does not get the secret sent
// there), reaching the hosts the sign-in reached.
func clientCredentialsHandler(server ServerConfig, creds *Credentials, base netguard.Policy) (auth.OAuthHandler, error) {
	u, err := urlHost(server.URL)
	if err != nil {
		return nil, err
	}
	setting := "FENIX_FETCH_ALLOW (or the authorization server a sign-in reached)"
	handler, _, err := serviceAccountHandler(server, creds, guardedTransport(base, setting, append([]string{u}, creds.AuthHosts...)...), 30*time.Second)
	return handler, err
}

// serviceAccountHandler is the go-sdk's client credentials handler for
// creds (its Issuer, when set, the one it must meet) reaching the
// authorization server through transport, its discovery pinned as
// server's oauth says, proving itself with creds' secret or, with a
// ClientKey, a signed assertion (clientAssertion).
func serviceAccountHandler(server ServerConfig, creds *Credentials, transport http.RoundTripper, timeout time.Duration) (auth.OAuthHandler, *pinnedMetadata, error) {
	client, pinned := pinDiscovery(server, &http.Client{Transport: transport, Timeout: timeout})
	secret := creds.ClientSecret
	if creds.ClientKey != "" {
		key, err := parseClientKey([]byte(creds.ClientKey))
		if err != nil {
			return nil, nil, fmt.Errorf("MCP server %q: %w", server.Name, err)
		}
		client.Transport = &clientAssertion{base: client.Transport, clientID: creds.ClientID, key: key, resource: server.URL}
		secret = assertionPlaceholder
	}
	handler, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: creds.ClientID, Issuer: creds.Issuer,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
		HTTPClient: client,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server %q: %w", server.Name, err)
	}
	return pinned.handler(handler), pinned, nil
}

// authServerRecorder notes, of the requests a sign-in sends to find and
// use the authorization server, the hosts and the issuer the metadata
// names.
type authServerRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	issuer string
	hosts  []string
}

func (r *authServerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if host := req.URL.Hostname(); !slices.Contains(r.hosts, host) {
		r.hosts = append(r.hosts, host)
	}
	meta, ok, err := sniffMetadata(req, resp)
	if err != nil {
		return nil, err
	}
	if ok {
		r.issuer = meta.Issuer
	}
	return resp, nil
}

func (r *authServerRecorder) result() (issuer string, hosts []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.issuer, slices.Clone(r.hosts)
}
