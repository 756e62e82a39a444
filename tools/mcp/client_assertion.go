package mcp

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// A service account whose authorization server wants it to prove itself
// with a key instead of a secret (private_key_jwt, RFC 7523 section 2.2,
// as SEP-1046 allows) signs a short-lived JWT for each token request.
// The go-sdk's client credentials handler knows only secrets, so it runs
// with a placeholder one, and the handler's HTTP client turns its token
// requests into assertions: the placeholder and any Authorization
// header are dropped, client_assertion and the resource (RFC 8707) are
// added. Discovery, scopes and the issuer pin stay the SDK's.

// assertionPlaceholder stands in for the secret the SDK's handler
// requires; clientAssertion removes it from every token request.
const assertionPlaceholder = "fenix-private-key-jwt"

// assertionLifetime bounds a signed assertion's validity.
const assertionLifetime = 5 * time.Minute

// clientKey is a service account's signing key and the JWS algorithm it
// signs with.
type clientKey struct {
	key crypto.Signer
	alg jose.SignatureAlgorithm
}

// parseClientKey reads a PEM private key (PKCS #8, SEC 1 or PKCS #1):
// ES256/384/512 for P-256/384/521, RS256 for RSA, EdDSA for Ed25519.
func parseClientKey(pemData []byte) (clientKey, error) {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return clientKey{}, errors.New("the client key is not PEM: want a PRIVATE KEY block (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)")
	}
	var parsed any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		parsed, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		parsed, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return clientKey{}, fmt.Errorf("the client key's %s block: %w", block.Type, err)
	}
	switch k := parsed.(type) {
	case *ecdsa.PrivateKey:
		algs := map[elliptic.Curve]jose.SignatureAlgorithm{elliptic.P256(): jose.ES256, elliptic.P384(): jose.ES384, elliptic.P521(): jose.ES512}
		alg, ok := algs[k.Curve]
		if !ok {
			return clientKey{}, fmt.Errorf("the client key's curve %s: want P-256, P-384 or P-521", k.Curve.Params().Name)
		}
		return clientKey{key: k, alg: alg}, nil
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return clientKey{}, fmt.Errorf("the client key is RSA with %d bits: want 2048 or more", k.N.BitLen())
		}
		return clientKey{key: k, alg: jose.RS256}, nil
	case ed25519.PrivateKey:
		return clientKey{key: k, alg: jose.EdDSA}, nil
	}
	return clientKey{}, fmt.Errorf("the client key is a %T: want an EC, RSA or Ed25519 private key", parsed)
}

// clientAssertion is the RoundTripper that signs a service account's
// token requests (see above). It learns the authorization server's
// issuer, the assertion's audience, from the metadata discovery reads.
type clientAssertion struct {
	base     http.RoundTripper
	clientID string
	key      clientKey
	// resource is the MCP server's URL, the token's audience.
	resource string

	mu     sync.Mutex
	issuer string
	algs   []string
}

func (c *clientAssertion) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil && strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(req.Body) // written by golang.org/x/oauth2 here
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		form, err := url.ParseQuery(string(body))
		if err == nil && form.Get("grant_type") == "client_credentials" {
			if req, err = c.sign(req, form); err != nil {
				return nil, err
			}
		} else {
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	meta, ok, err := sniffMetadata(req, resp)
	if ok {
		c.mu.Lock()
		c.issuer, c.algs = meta.Issuer, meta.SigningAlgs
		c.mu.Unlock()
	}
	return resp, err
}

// sign returns req with form's client authentication replaced by a
// signed assertion.
func (c *clientAssertion) sign(req *http.Request, form url.Values) (*http.Request, error) {
	c.mu.Lock()
	issuer, algs := c.issuer, c.algs
	c.mu.Unlock()
	if issuer == "" {
		// No metadata (the 2025-03-26 fallback): the token endpoint's
		// authorization server is its origin.
		issuer = (&url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host}).String()
	}
	if len(algs) > 0 && !slices.Contains(algs, string(c.key.alg)) {
		return nil, fmt.Errorf("the authorization server %s signs client assertions with %s, not the client key's %s", issuer, strings.Join(algs, ", "), c.key.alg)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: c.key.alg, Key: c.key.key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("client key: %w", err)
	}
	now := time.Now()
	assertion, err := jwt.Signed(signer).Claims(jwt.Claims{
		Issuer: c.clientID, Subject: c.clientID, Audience: jwt.Audience{issuer}, ID: rand.Text(),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-30 * time.Second)), Expiry: jwt.NewNumericDate(now.Add(assertionLifetime)),
	}).Serialize()
	if err != nil {
		return nil, fmt.Errorf("signing the client assertion: %w", err)
	}
	form.Del("client_secret")
	form.Set("client_id", c.clientID)
	form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	form.Set("client_assertion", assertion)
	if form.Get("resource") == "" {
		form.Set("resource", c.resource)
	}
	encoded := form.Encode()
	signed := req.Clone(req.Context())
	signed.Header.Del("Authorization")
	signed.Body = io.NopCloser(strings.NewReader(encoded))
	signed.ContentLength = int64(len(encoded))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(encoded)), nil }
	return signed, nil
}
