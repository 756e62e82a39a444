package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
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
	keys := oidc.NewRemoteKeySet(oidc.ClientContext(context.WithoutCancel(ctx), cfg.HTTPClient), asm.JWKSURI)
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
