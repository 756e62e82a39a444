package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/fenixrt/fenix/fenixerr"
)

// OAuthConfig makes the HTTP endpoint an OAuth 2.1 protected resource, as
// the MCP specification's authorization has it: clients that only sign in
// (hosted agent platforms' connectors, which cannot send a static header)
// find the authorization server through the endpoint's protected resource
// metadata (RFC 9728) and bring a JWT access token issued for it.
type OAuthConfig struct {
	// Issuer is the authorization server (the operator's IdP: a Keycloak
	// realm, an Auth0 tenant); its metadata (RFC 8414 or OpenID
	// discovery) names the keys (jwks_uri) tokens are signed with.
	Issuer string
	// Resource is the endpoint's canonical URI as clients reach it
	// (https://fenix.example.com/mcp, behind any proxy): a token must
	// name it in its audience (RFC 8707), so one issued for another
	// service is refused.
	Resource string
	// Scopes are those every token must carry (none: any token for the
	// resource).
	Scopes []string
	// HTTPClient reaches the authorization server (default: 30 s timeout).
	HTTPClient *http.Client
}

// OAuthResource verifies the tokens of an OAuthConfig; NewOAuthResource
// makes one.
type OAuthResource struct {
	cfg      OAuthConfig
	verifier *oidc.IDTokenVerifier
	// metadataURL is where the protected resource metadata is served.
	metadataURL string
	metadata    *oauthex.ProtectedResourceMetadata
}

// signingAlgorithms are the JWS algorithms accepted (never "none").
var signingAlgorithms = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// NewOAuthResource reads the authorization server's metadata and keeps
// its keys (fetched again when a token names a key not seen yet); ctx
// bounds the metadata read, and the key set lives as long as the process.
func NewOAuthResource(ctx context.Context, cfg OAuthConfig) (*OAuthResource, error) {
	res, err := url.Parse(cfg.Resource)
	if err != nil || (res.Scheme != "https" && res.Scheme != "http") || res.Host == "" || res.Fragment != "" {
		return nil, fenixerr.Validation("OAuth resource %q: want the endpoint's absolute URL as clients reach it (https://host/mcp)", cfg.Resource)
	}
	if cfg.Issuer == "" {
		return nil, fenixerr.Validation("OAuth needs the authorization server's issuer URL")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	metaCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	asm, err := auth.GetAuthServerMetadata(metaCtx, cfg.Issuer, cfg.HTTPClient)
	switch {
	case err != nil:
		return nil, fmt.Errorf("OAuth: the metadata of authorization server %s: %w", cfg.Issuer, err)
	case asm == nil:
		return nil, fmt.Errorf("OAuth: authorization server %s publishes no metadata (RFC 8414 or OpenID discovery)", cfg.Issuer)
	case asm.JWKSURI == "":
		return nil, fmt.Errorf("OAuth: authorization server %s names no jwks_uri: the gateway verifies JWT access tokens with the server's keys", cfg.Issuer)
	}
	known, err := keyIDs(metaCtx, cfg.HTTPClient, asm.JWKSURI)
	if err != nil {
		return nil, fmt.Errorf("OAuth: the keys of authorization server %s: %w", cfg.Issuer, err)
	}
	keys := &throttledKeys{remote: oidc.NewRemoteKeySet(oidc.ClientContext(context.WithoutCancel(ctx), cfg.HTTPClient), asm.JWKSURI), known: known}
	metadataURL := *res
	metadataURL.Path = "/.well-known/oauth-protected-resource" + res.Path
	metadataURL.RawQuery = ""
	return &OAuthResource{
		cfg: cfg,
		// The audience check is the resource's: oidc calls it ClientID.
		verifier:    oidc.NewVerifier(asm.Issuer, keys, &oidc.Config{ClientID: cfg.Resource, SupportedSigningAlgs: signingAlgorithms}),
		metadataURL: metadataURL.String(),
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               cfg.Resource,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "Fenix governed tools",
		},
	}, nil
}

// verify is the bearer middleware's TokenVerifier: a JWT signed with one
// of the issuer's keys, from that issuer, for this resource, unexpired.
func (o *OAuthResource) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	t, err := o.verifier.Verify(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	var claims struct {
		Scope string   `json:"scope"`
		Scp   []string `json:"scp"`
	}
	if err := t.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: claims: %v", auth.ErrInvalidToken, err)
	}
	if t.Subject == "" {
		return nil, fmt.Errorf("%w: the token names no subject", auth.ErrInvalidToken)
	}
	scopes := strings.Fields(claims.Scope)
	for _, s := range claims.Scp {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	return &auth.TokenInfo{Scopes: scopes, Expiration: t.Expiry, UserID: t.Subject}, nil
}

// protect wraps h with the bearer check; the 401 names the metadata.
func (o *OAuthResource) protect(h http.Handler) http.Handler {
	return auth.RequireBearerToken(o.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: o.metadataURL,
		Scopes:              o.cfg.Scopes,
		// Issuers and the gateway's host drift by seconds.
		ClockSkew: 30 * time.Second,
	})(h)
}

// serveMetadata adds the protected resource metadata to mux: at the path
// RFC 9728 inserts for the resource's path, and at the root, where
// clients of the 2025-03-26 revision look.
func (o *OAuthResource) serveMetadata(mux *http.ServeMux) {
	h := auth.ProtectedResourceMetadataHandler(o.metadata)
	path := strings.TrimPrefix(o.metadataURL, originOf(o.metadataURL))
	mux.Handle(path, h)
	if path != "/.well-known/oauth-protected-resource" {
		mux.Handle("/.well-known/oauth-protected-resource", h)
	}
}

// originOf is scheme://host of an absolute URL.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// subjectOf is the signed-in user of a request, "" without OAuth.
func subjectOf(info *auth.TokenInfo) string {
	if info == nil {
		return ""
	}
	return info.UserID
}

var errOAuthAndToken = errors.New("the HTTP endpoint takes a bearer token (FENIX_MCP_TOKEN) or OAuth (-oauth-issuer), not both: an OAuth client cannot send the static token, and the static token would bypass the IdP")

// keyRefetchInterval is how often a token naming a key not seen yet may
// make the gateway fetch the issuer's keys again.
const keyRefetchInterval = 10 * time.Second

// throttledKeys is the issuer's key set as go-oidc keeps it, which
// fetches the keys again for every token naming an unknown key ID: a
// flood of forged tokens would become a flood of requests to the IdP. A
// key ID that verified a token is known; an unknown one may cause a fetch
// once per keyRefetchInterval (a rotated key is taken at its first
// token), and otherwise fails at once.
type throttledKeys struct {
	remote *oidc.RemoteKeySet
	mu     sync.Mutex
	known  map[string]bool
	// lastUnknown is when a token with an unknown key ID was last let
	// through to the remote set.
	lastUnknown time.Time
}

func (k *throttledKeys) VerifySignature(ctx context.Context, token string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(token, signingAlgorithmsJOSE)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("not a signed JWT: %v", err)
	}
	kid := jws.Signatures[0].Header.KeyID
	k.mu.Lock()
	if !k.known[kid] {
		if time.Since(k.lastUnknown) < keyRefetchInterval {
			k.mu.Unlock()
			return nil, fmt.Errorf("the token names key %q, which the issuer's key set did not hold when last fetched", kid)
		}
		k.lastUnknown = time.Now()
	}
	k.mu.Unlock()
	payload, err := k.remote.VerifySignature(ctx, token)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.known[kid] = true
	k.mu.Unlock()
	return payload, nil
}

// keyIDs reads the key IDs of the key set at jwksURI.
func keyIDs(ctx context.Context, client *http.Client, jwksURI string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURI, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", jwksURI, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("%s: %w", jwksURI, err)
	}
	ids := map[string]bool{}
	for _, k := range set.Keys {
		ids[k.KeyID] = true
	}
	return ids, nil
}

// signingAlgorithmsJOSE are signingAlgorithms for go-jose's parser.
var signingAlgorithmsJOSE = func() []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(signingAlgorithms))
	for i, a := range signingAlgorithms {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}()
