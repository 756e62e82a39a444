// Package oauthmcp serves, for tests, a remote MCP server that needs
// OAuth as hosted ones do: a Streamable HTTP endpoint behind the go-sdk's
// bearer-token middleware, whose 401 names its protected resource
// metadata (RFC 9728), and an authorization server on the same origin
// with RFC 8414 metadata, dynamic client registration (RFC 7591), the
// authorization code grant with PKCE (S256) whose authorize endpoint
// approves at once (the user's consent), and rotating refresh tokens.
// Access tokens are JWTs (ES256, RFC 9068 claims) whose audience is the
// resource they were asked for, signed with a key the server publishes
// (jwks_uri), so the authorization server also serves another resource
// (AllowResource): the Fenix gateway as an OAuth protected resource.
package oauthmcp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// User is whom every sign-in is for; the whoami tool names them.
const User = "ana@example.com"

// Server is the MCP server and its authorization server.
type Server struct {
	// URL is the MCP endpoint (the .mcp.json url); SSEURL is the same
	// server over HTTP+SSE ("type": "sse").
	URL, SSEURL string
	// Issuer is the authorization server.
	Issuer string
	// MetadataURL is where the authorization server's metadata is: at
	// its issuer's RFC 8414 location, or, from StartUndiscoverable, at
	// a path of its own that only .mcp.json's authServerMetadataUrl
	// finds.
	MetadataURL string
	// Registrations, Authorizations and Refreshes count what the
	// authorization server granted.
	Registrations, Authorizations, Refreshes atomic.Int64

	lifetime time.Duration
	key      *ecdsa.PrivateKey
	signer   jose.Signer
	mu       sync.Mutex
	clients  map[string]string // client ID -> redirect URI
	codes    map[string]codeGrant
	access   map[string]time.Time // access token -> expiry
	refresh  map[string]grant     // refresh token -> what it was granted for
	// resources are those tokens may be asked for: the MCP endpoint, and
	// what AllowResource adds.
	resources map[string]bool
	// services are service accounts' secrets by client ID (the client
	// credentials grant, authenticated with HTTP Basic); serviceKeys
	// their public keys, for those that sign assertions instead.
	services       map[string]string
	serviceKeys    map[string]any
	usedAssertions map[string]bool
	// Assertions counts the client assertions taken.
	Assertions atomic.Int64
}

type codeGrant struct {
	client, redirect, challenge, resource string
}

type grant struct {
	client, resource string
}

// keyID names the signing key in the JWKS.
const keyID = "oauthmcp-1"

// Start serves a Server on loopback until tb ends; access tokens live
// for lifetime.
func Start(tb testing.TB, lifetime time.Duration) *Server {
	return start(tb, lifetime, false)
}

// StartUndiscoverable serves a Server whose authorization server
// discovery cannot find, as an OIDC provider of a company's (Entra ID,
// Keycloak) often is to a server that publishes no protected resource
// metadata: the MCP endpoint's 401 names no metadata, and the
// authorization server (issuer <origin>/idp) has its endpoints under
// /idp and its metadata only at /idp/.well-known/openid-configuration.
func StartUndiscoverable(tb testing.TB, lifetime time.Duration) *Server {
	return start(tb, lifetime, true)
}

func start(tb testing.TB, lifetime time.Duration, undiscoverable bool) *Server {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", keyID))
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{lifetime: lifetime, key: key, signer: signer, clients: map[string]string{}, codes: map[string]codeGrant{},
		access: map[string]time.Time{}, refresh: map[string]grant{}, resources: map[string]bool{}, services: map[string]string{}, serviceKeys: map[string]any{}}
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	tb.Cleanup(hs.Close)
	s.Issuer, s.URL, s.SSEURL = hs.URL, hs.URL+"/mcp", hs.URL+"/sse"
	s.MetadataURL = s.Issuer + "/.well-known/oauth-authorization-server"
	prefix := ""
	if undiscoverable {
		prefix = "/idp"
		s.Issuer += prefix
		s.MetadataURL = s.Issuer + "/.well-known/openid-configuration"
	}
	s.resources[s.URL], s.resources[s.SSEURL] = true, true
	mux.HandleFunc("GET "+prefix+"/jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: keyID, Algorithm: string(jose.ES256), Use: "sig"}}})
	})
	metadataPath := strings.TrimPrefix(s.MetadataURL, hs.URL)
	mux.HandleFunc("GET "+metadataPath, jsonBody(fmt.Sprintf(`{"issuer": %[1]q,
  "authorization_endpoint": "%[1]s/authorize", "token_endpoint": "%[1]s/token", "registration_endpoint": "%[1]s/register", "jwks_uri": "%[1]s/jwks",
  "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
  "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "private_key_jwt"],
  "token_endpoint_auth_signing_alg_values_supported": ["ES256", "EdDSA"],
  "client_id_metadata_document_supported": true}`, s.Issuer)))
	mux.HandleFunc("POST "+prefix+"/register", s.register)
	mux.HandleFunc("GET "+prefix+"/authorize", s.authorize)
	mux.HandleFunc("POST "+prefix+"/token", s.token)
	resourceMetadata := func(resource string) string {
		if undiscoverable {
			return ""
		}
		path := "/.well-known/oauth-protected-resource" + strings.TrimPrefix(resource, hs.URL)
		mux.HandleFunc("GET "+path, jsonBody(fmt.Sprintf(`{"resource": %q, "authorization_servers": [%q], "bearer_methods_supported": ["header"]}`, resource, s.Issuer)))
		return hs.URL + path
	}

	mcpServer := sdk.NewServer(&sdk.Implementation{Name: "secure-notes", Version: "1"}, nil)
	sdk.AddTool(mcpServer, &sdk.Tool{Name: "whoami", Description: "Names the signed-in user."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "signed in as " + User}}}, nil, nil
		})
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpServer }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: resourceMetadata(s.URL),
	})(streamable))
	// The same server over HTTP+SSE (the 2024-11-05 transport), a
	// resource of its own: the stream's GET and the posted messages both
	// need the token.
	sse := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return mcpServer }, nil)
	mux.Handle("/sse", auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: resourceMetadata(s.SSEURL),
	})(sse))
	return s
}

// IssueToken mints an access token for the MCP endpoint as a company's
// CLI would hand one to a script (a headersHelper's
// `print-access-token`), outside any sign-in.
func (s *Server) IssueToken() string {
	return s.TokenFor(s.URL, s.lifetime)
}

// TokenFor mints an access token for resource (its audience) that
// expires after lifetime (negative: already expired).
func (s *Server) TokenFor(resource string, lifetime time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mintLocked(resource, lifetime)
}

// ServiceAccount registers a confidential client for the client
// credentials grant.
func (s *Server) ServiceAccount(clientID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.services[clientID] = secret
}

// ServiceAccountKey registers a confidential client for the client
// credentials grant that proves itself with assertions its key signs
// (private_key_jwt): publicKey verifies them.
func (s *Server) ServiceAccountKey(clientID string, publicKey any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serviceKeys[clientID] = publicKey
}

// ClientMetadataDocument is a Client ID Metadata Document (SEP-991) the
// authorization server takes as published at url with redirectURI: a
// client whose ID is url is that client, registered by no one.
func (s *Server) ClientMetadataDocument(url, redirectURI string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[url] = redirectURI
}

// AllowResource lets clients ask for tokens for resource (another
// protected resource trusting this authorization server).
func (s *Server) AllowResource(resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources[resource] = true
}

// mintLocked signs an access token for resource.
func (s *Server) mintLocked(resource string, lifetime time.Duration) string {
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{
		"iss": s.Issuer, "sub": User, "aud": resource, "client_id": "oauthmcp",
		"iat": now.Unix(), "exp": now.Add(lifetime).Unix(), "jti": rand.Text(), "scope": "tools",
	})
	jws, err := s.signer.Sign(claims)
	if err != nil {
		panic(err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	s.access[token] = now.Add(lifetime)
	return token
}

// RevokeAccessTokens makes every access token issued so far invalid
// before its expiry (the refresh tokens stay good), as a server that
// rotated its keys does.
func (s *Server) RevokeAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// RevokeAll makes every token invalid: the grant is withdrawn and only a
// new sign-in helps.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

func jsonBody(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	expiry, ok := s.access[token]
	if !ok || time.Now().After(expiry) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Expiration: expiry, UserID: User}, nil
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	id := "client-" + rand.Text()[:8]
	s.mu.Lock()
	s.clients[id] = req.RedirectURIs[0]
	s.mu.Unlock()
	s.Registrations.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	redirect, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	switch {
	case !known || redirect != q.Get("redirect_uri"):
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE with S256 is required", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	allowed := s.resources[q.Get("resource")]
	s.mu.Unlock()
	if !allowed {
		http.Error(w, "unknown resource "+q.Get("resource"), http.StatusBadRequest)
		return
	}
	code := rand.Text()
	s.mu.Lock()
	s.codes[code] = codeGrant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource")}
	s.mu.Unlock()
	s.Authorizations.Add(1)
	back, _ := url.Parse(redirect)
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var granted grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code, ok := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		// A client names itself in the form or, as golang.org/x/oauth2
		// does first for a client without a secret, in HTTP Basic,
		// form-encoded (RFC 6749 section 2.3.1).
		client := r.PostForm.Get("client_id")
		if id, _, basic := r.BasicAuth(); basic && client == "" {
			client, _ = url.QueryUnescape(id)
		}
		if !ok || code.client != client || code.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		granted = grant{client: code.client, resource: code.resource}
	case "refresh_token":
		var ok bool
		if granted, ok = s.refresh[r.PostForm.Get("refresh_token")]; !ok {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		// Rotation: the used refresh token is spent.
		delete(s.refresh, r.PostForm.Get("refresh_token"))
		s.Refreshes.Add(1)
	case "client_credentials":
		if r.PostForm.Has("client_assertion") {
			if err := s.checkAssertionLocked(r.PostForm); err != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": err.Error()})
				return
			}
			s.Assertions.Add(1)
		} else if id, secret, ok := r.BasicAuth(); !ok || s.services[id] == "" || s.services[id] != secret {
			oauthError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
		resource := r.PostForm.Get("resource")
		if resource == "" {
			resource = s.URL
		}
		access := s.mintLocked(resource, s.lifetime)
		s.Authorizations.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(s.lifetime.Seconds())})
		return
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	access, refresh := s.mintLocked(granted.resource, s.lifetime), "rt-"+rand.Text()
	s.refresh[refresh] = granted
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(s.lifetime.Seconds()), "refresh_token": refresh})
}

// checkAssertionLocked verifies a private_key_jwt client assertion
// (RFC 7523 section 2.2): signed by the client's key, issued by and for
// the client, for this authorization server, unexpired, used once.
func (s *Server) checkAssertionLocked(form url.Values) error {
	if form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return fmt.Errorf("client_assertion_type %q", form.Get("client_assertion_type"))
	}
	key, known := s.serviceKeys[form.Get("client_id")]
	if !known {
		return fmt.Errorf("unknown client %q", form.Get("client_id"))
	}
	token, err := jwt.ParseSigned(form.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
	if err != nil {
		return err
	}
	var claims jwt.Claims
	if err := token.Claims(key, &claims); err != nil {
		return err
	}
	if err := claims.Validate(jwt.Expected{Issuer: form.Get("client_id"), Subject: form.Get("client_id"), AnyAudience: jwt.Audience{s.Issuer}}); err != nil {
		return err
	}
	if s.usedAssertions == nil {
		s.usedAssertions = map[string]bool{}
	}
	if claims.ID == "" || s.usedAssertions[claims.ID] {
		return fmt.Errorf("assertion ID %q missing or used before", claims.ID)
	}
	s.usedAssertions[claims.ID] = true
	return nil
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// Browse plays the operator's browser for mcp.LoginOptions.Open: it
// follows the authorization URL's redirects (the consent is given at
// once) to the sign-in's callback, and fails unless that page loads.
func Browse(ctx context.Context, authorizationURL, _ string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizationURL, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var body [512]byte
		n, _ := resp.Body.Read(body[:])
		return fmt.Errorf("the browser ended on %s %s: %s", resp.Request.URL.Redacted(), resp.Status, body[:n])
	}
	return nil
}
