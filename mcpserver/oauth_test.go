package mcpserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/fenixrt/fenix/internal/harness/oauthmcp"
)

// countingTransport counts the requests for the issuer's key set.
type countingTransport struct{ jwks atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/jwks") {
		c.jwks.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Forged tokens naming key IDs the issuer never published do not turn
// into a request to the IdP each: at most one per keyRefetchInterval,
// and the issuer's own tokens still verify meanwhile.
func TestForgedKeyIDsDoNotFloodTheIssuer(t *testing.T) {
	as := oauthmcp.Start(t, time.Hour)
	resource := "http://127.0.0.1:1/mcp"
	as.AllowResource(resource)
	counter := &countingTransport{}
	o, err := NewOAuthResource(context.Background(), OAuthConfig{Issuer: as.Issuer, Resource: resource, HTTPClient: &http.Client{Transport: counter}})
	if err != nil {
		t.Fatal(err)
	}
	start := counter.jwks.Load()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for i := range 50 {
		signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "forged-"+string(rune('a'+i%26))))
		jws, _ := signer.Sign([]byte(`{"iss":"` + as.Issuer + `","sub":"mallory","aud":"` + resource + `","exp":4102444800}`))
		forged, _ := jws.CompactSerialize()
		if _, err := o.verify(context.Background(), forged, nil); err == nil {
			t.Fatal("a forged token verified")
		}
	}
	if fetched := counter.jwks.Load() - start; fetched > 1 {
		t.Fatalf("50 forged tokens fetched the key set %d times, want at most 1", fetched)
	}
	info, err := o.verify(context.Background(), as.TokenFor(resource, time.Minute), nil)
	if err != nil {
		t.Fatalf("the issuer's token after the forged ones: %v", err)
	}
	if info.UserID != oauthmcp.User {
		t.Fatalf("subject %q", info.UserID)
	}
}
