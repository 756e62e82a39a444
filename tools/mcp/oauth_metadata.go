package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// A server whose authorization server cannot be found by discovery (no
// protected resource metadata, or metadata at a path of its own, as
// Entra ID's and many OIDC providers' are) names its metadata in
// .mcp.json's oauth.authServerMetadataUrl, and Claude Code then skips the
// discovery chain. The go-sdk's handlers always discover, so a sign-in
// with that setting sees the discovery answered from the configured
// document: the server's protected resource metadata names its issuer,
// the issuer's metadata is the document, and the challenge's own
// resource_metadata, which could name another authorization server, is
// not followed.

// pinnedMetadata is the RoundTripper of the authorization server's client
// in a sign-in with oauth.authServerMetadataUrl.
type pinnedMetadata struct {
	base        http.RoundTripper
	metadataURL string

	mu       sync.Mutex
	document []byte
	issuer   string
}

// pinDiscovery returns client with its discovery answered from server's
// oauth.authServerMetadataUrl, or client itself (and nil) when server
// names none.
func pinDiscovery(server ServerConfig, client *http.Client) (*http.Client, *pinnedMetadata) {
	if server.OAuth == nil || server.OAuth.AuthServerMetadataURL == "" {
		return client, nil
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	pinned := &pinnedMetadata{base: base, metadataURL: server.OAuth.AuthServerMetadataURL}
	pinnedClient := *client
	pinnedClient.Transport = pinned
	return &pinnedClient, pinned
}

// handler is h taking the server's challenges without their
// resource_metadata when discovery is pinned (p is not nil).
func (p *pinnedMetadata) handler(h auth.OAuthHandler) auth.OAuthHandler {
	if p == nil {
		return h
	}
	return challengeWithoutMetadata{h}
}

// Issuer is the issuer of the configured metadata, "" before it was read.
func (p *pinnedMetadata) Issuer() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.issuer
}

// load reads the configured document once.
func (p *pinnedMetadata) load(ctx context.Context) ([]byte, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.document != nil {
		return p.document, p.issuer, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metadataURL, nil)
	if err != nil {
		return nil, "", fmt.Errorf("oauth.authServerMetadataUrl %q: %w", p.metadataURL, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.base.RoundTrip(req)
	if err != nil {
		return nil, "", fmt.Errorf("reading oauth.authServerMetadataUrl %s: %w", p.metadataURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading oauth.authServerMetadataUrl %s: %w", p.metadataURL, err)
	}
	if len(body) > maxMetadataBytes {
		return nil, "", fmt.Errorf("oauth.authServerMetadataUrl %s: the document is larger than %d bytes", p.metadataURL, maxMetadataBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("oauth.authServerMetadataUrl %s answered %s", p.metadataURL, resp.Status)
	}
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(body, &meta); err != nil || meta.Issuer == "" {
		return nil, "", fmt.Errorf("oauth.authServerMetadataUrl %s is not authorization server metadata (RFC 8414: a JSON object with an issuer)", p.metadataURL)
	}
	if _, err := url.Parse(meta.Issuer); err != nil {
		return nil, "", fmt.Errorf("oauth.authServerMetadataUrl %s names issuer %q: %w", p.metadataURL, meta.Issuer, err)
	}
	p.document, p.issuer = body, meta.Issuer
	return body, meta.Issuer, nil
}

const (
	// maxMetadataBytes bounds the document, as the go-sdk bounds what
	// discovery reads.
	maxMetadataBytes     = 1 << 20
	resourceMetadataPath = "/.well-known/oauth-protected-resource"
	oauthMetadataPath    = "/.well-known/oauth-authorization-server"
	openIDMetadataPath   = "/.well-known/openid-configuration"
)

func (p *pinnedMetadata) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.String() == p.metadataURL {
		return p.base.RoundTrip(req)
	}
	switch path := req.URL.Path; {
	case path == resourceMetadataPath || strings.HasPrefix(path, resourceMetadataPath+"/"):
		_, issuer, err := p.load(req.Context())
		if err != nil {
			return nil, err
		}
		// The resource the SDK expects for this metadata URL: its own
		// URL with the well-known prefix taken off the path.
		resource := *req.URL
		resource.Path = strings.TrimPrefix(path, resourceMetadataPath)
		resource.RawPath = ""
		body, err := json.Marshal(oauthex.ProtectedResourceMetadata{Resource: resource.String(), AuthorizationServers: []string{issuer}})
		if err != nil {
			return nil, err
		}
		return jsonResponse(req, body), nil
	case strings.HasPrefix(path, oauthMetadataPath), strings.HasPrefix(path, openIDMetadataPath), strings.HasSuffix(path, openIDMetadataPath):
		document, issuer, err := p.load(req.Context())
		if err != nil {
			return nil, err
		}
		if iu, err := url.Parse(issuer); err == nil && iu.Scheme == req.URL.Scheme && iu.Host == req.URL.Host {
			return jsonResponse(req, document), nil
		}
	}
	return p.base.RoundTrip(req)
}

func jsonResponse(req *http.Request, body []byte) *http.Response {
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// challengeWithoutMetadata hands the inner handler the server's 401 or
// 403 without the challenge's resource_metadata, so discovery starts at
// the well-known URLs pinnedMetadata answers; scope and error stay.
type challengeWithoutMetadata struct {
	auth.OAuthHandler
}

func (h challengeWithoutMetadata) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err == nil {
		var kept []string
		for _, c := range challenges {
			var params []string
			for _, name := range []string{"realm", "scope", "error", "error_description"} {
				if v, ok := c.Params[name]; ok {
					params = append(params, fmt.Sprintf("%s=%q", name, v))
				}
			}
			kept = append(kept, strings.TrimSpace(c.Scheme+" "+strings.Join(params, ", ")))
		}
		resp.Header = resp.Header.Clone()
		resp.Header.Del("WWW-Authenticate")
		for _, k := range kept {
			resp.Header.Add("WWW-Authenticate", k)
		}
	}
	return h.OAuthHandler.Authorize(ctx, req, resp)
}

// seenMetadata is what a sign-in notes of the authorization server's
// metadata as discovery reads it.
type seenMetadata struct {
	Issuer      string   `json:"issuer"`
	SigningAlgs []string `json:"token_endpoint_auth_signing_alg_values_supported"`
}

// sniffMetadata returns what resp says when it is discovery's successful
// read of an authorization server's metadata (RFC 8414 or OpenID), and
// leaves resp's body for the caller; ok is false for any other response.
func sniffMetadata(req *http.Request, resp *http.Response) (meta seenMetadata, ok bool, err error) {
	path := req.URL.Path
	isMetadata := strings.Contains(path, oauthMetadataPath) || strings.Contains(path, openIDMetadataPath)
	if req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !isMetadata {
		return seenMetadata{}, false, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return seenMetadata{}, false, err
	}
	if json.Unmarshal(body, &meta) != nil || meta.Issuer == "" {
		return seenMetadata{}, false, nil
	}
	return meta, true, nil
}
