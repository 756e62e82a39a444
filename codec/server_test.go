package codec

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const (
	testToken  = "s3cret-token"
	testOrigin = "http://localhost:8233"
)

func newTestServer(t *testing.T, c *Codec, cfg ServerConfig) *httptest.Server {
	t.Helper()
	h, err := NewHTTPHandler(c, cfg)
	if err != nil {
		t.Fatalf("NewHTTPHandler: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/codec/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func decodeRequest(t *testing.T, url string, payloads []*commonpb.Payload, header map[string]string) *http.Response {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/codec/decode", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestCodecServerRequiresBearerToken(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	srv := newTestServer(t, c, ServerConfig{Tokens: []string{testToken}, UIOrigins: []string{testOrigin}})
	enc, _ := c.Encode([]*commonpb.Payload{jsonPayload(t, "x")})

	for name, header := range map[string]map[string]string{
		"no header":    nil,
		"wrong token":  {"Authorization": "Bearer nope"},
		"token prefix": {"Authorization": "Bearer " + testToken[:4]},
		"basic scheme": {"Authorization": "Basic " + testToken},
	} {
		resp := decodeRequest(t, srv.URL, enc, header)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", name)
		}
	}
	// A browser must be able to read the 401, so CORS headers come with it.
	resp := decodeRequest(t, srv.URL, enc, map[string]string{"Origin": testOrigin})
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != testOrigin {
		t.Errorf("401 from the UI origin: status %d, Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestCodecServerDecodesForAuthorizedUser(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	srv := newTestServer(t, c, ServerConfig{Tokens: []string{"old-token", testToken}, UIOrigins: []string{testOrigin}})
	orig := jsonPayload(t, map[string]string{"tool": "exec_command"})
	enc, err := c.Encode([]*commonpb.Payload{orig})
	if err != nil {
		t.Fatal(err)
	}

	resp := decodeRequest(t, srv.URL, enc, map[string]string{"Authorization": "bearer " + testToken, "Origin": testOrigin, "X-Namespace": "default"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != testOrigin {
		t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, testOrigin)
	}
	if got := resp.Header.Get("Access-Control-Allow-Credentials"); got != "true" {
		t.Errorf("Access-Control-Allow-Credentials = %q, want true", got)
	}
	var out commonpb.Payloads
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(body, &out); err != nil {
		t.Fatalf("response is not Payloads JSON: %v\n%s", err, body)
	}
	if len(out.Payloads) != 1 || !proto.Equal(out.Payloads[0], orig) {
		t.Errorf("decoded %v, want %v", out.Payloads, orig)
	}
}

// The SDK's own remote codec client (what tctl-style tools use) works
// against the server with a token.
func TestCodecServerWithSDKRemoteCodec(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	srv := newTestServer(t, c, ServerConfig{Tokens: []string{testToken}})
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
		Endpoint: srv.URL + "/codec",
		ModifyRequest: func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+testToken)
			return nil
		},
	})
	orig := jsonPayload(t, "remote round trip")
	enc, err := remote.Encode([]*commonpb.Payload{orig})
	if err != nil {
		t.Fatalf("remote Encode: %v", err)
	}
	if string(enc[0].GetMetadata()[MetadataEncoding]) != EncodingEncrypted {
		t.Fatalf("remote Encode did not encrypt: %v", enc[0])
	}
	dec, err := remote.Decode(enc)
	if err != nil {
		t.Fatalf("remote Decode: %v", err)
	}
	if !proto.Equal(dec[0], orig) {
		t.Errorf("remote round trip = %v, want %v", dec[0], orig)
	}

	unauthorized := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL + "/codec"})
	if _, err := unauthorized.Decode(enc); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("Decode without a token: error = %v, want Unauthorized", err)
	}
}

func TestCodecServerCORSPreflight(t *testing.T) {
	srv := newTestServer(t, newCodec(t, newKey(t, "k1")), ServerConfig{Tokens: []string{testToken}, UIOrigins: []string{testOrigin + "/"}})
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace,authorization")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	resp := preflight(testOrigin)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight status %d, want 204", resp.StatusCode)
	}
	want := map[string]string{
		"Access-Control-Allow-Origin":      testOrigin,
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Allow-Headers":     "Content-Type, X-Namespace, Authorization",
		"Access-Control-Allow-Methods":     "POST, OPTIONS",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}

	resp = preflight("http://evil.example")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: status %d, Allow-Origin %q; want 403 and none", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestCodecServerNamespaceRestriction(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	srv := newTestServer(t, c, ServerConfig{Tokens: []string{testToken}, Namespaces: []string{"fenix-prod"}})
	enc, _ := c.Encode([]*commonpb.Payload{jsonPayload(t, "x")})
	auth := "Bearer " + testToken

	if resp := decodeRequest(t, srv.URL, enc, map[string]string{"Authorization": auth, "X-Namespace": "other"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("other namespace: status %d, want 403", resp.StatusCode)
	}
	if resp := decodeRequest(t, srv.URL, enc, map[string]string{"Authorization": auth}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("no namespace: status %d, want 403", resp.StatusCode)
	}
	if resp := decodeRequest(t, srv.URL, enc, map[string]string{"Authorization": auth, "X-Namespace": "fenix-prod"}); resp.StatusCode != http.StatusOK {
		t.Errorf("allowed namespace: status %d, want 200", resp.StatusCode)
	}
}

func TestCodecServerRejectsOtherMethodsAndLargeBodies(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	srv := newTestServer(t, c, ServerConfig{Tokens: []string{testToken}, MaxRequestBytes: 64})
	resp, err := http.Get(srv.URL + "/codec/decode")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	enc, _ := c.Encode([]*commonpb.Payload{jsonPayload(t, strings.Repeat("x", 200))})
	if resp := decodeRequest(t, srv.URL, enc, map[string]string{"Authorization": "Bearer " + testToken}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("oversized body: status %d, want 400", resp.StatusCode)
	}
}

func TestNewHTTPHandlerConfigErrors(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	tests := []struct {
		name string
		cfg  ServerConfig
		want string
	}{
		{"no token", ServerConfig{}, "no bearer token configured (FENIX_CODEC_AUTH_TOKEN)"},
		{"blank token", ServerConfig{Tokens: []string{" "}}, "empty bearer token"},
		{"wildcard origin", ServerConfig{Tokens: []string{"t"}, UIOrigins: []string{"*"}}, `UI origin "*"`},
		{"origin with path", ServerConfig{Tokens: []string{"t"}, UIOrigins: []string{"http://ui:8080/web"}}, `UI origin "http://ui:8080/web"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHTTPHandler(c, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := NewHTTPHandler(c, ServerConfig{AllowUnauthenticated: true}); err != nil {
		t.Errorf("AllowUnauthenticated without tokens: %v", err)
	}
}

func TestServerConfigFromEnv(t *testing.T) {
	t.Setenv(EnvAuthToken, " tok ")
	t.Setenv(EnvUIOrigins, "http://localhost:8233, https://temporal.example.com")
	t.Setenv(EnvNamespaces, "default,,fenix")
	t.Setenv(EnvAllowUnauthenticated, "")
	cfg, err := ServerConfigFromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tokens) != 1 || cfg.Tokens[0] != "tok" {
		t.Errorf("Tokens = %q", cfg.Tokens)
	}
	if strings.Join(cfg.UIOrigins, "|") != "http://localhost:8233|https://temporal.example.com" {
		t.Errorf("UIOrigins = %q", cfg.UIOrigins)
	}
	if strings.Join(cfg.Namespaces, "|") != "default|fenix" {
		t.Errorf("Namespaces = %q", cfg.Namespaces)
	}
	if cfg.AllowUnauthenticated {
		t.Error("AllowUnauthenticated is on without the variable")
	}

	t.Setenv(EnvAllowUnauthenticated, "true")
	if cfg, err := ServerConfigFromEnv(os.Getenv); err != nil || !cfg.AllowUnauthenticated {
		t.Errorf("%s=true: AllowUnauthenticated=%v, err %v", EnvAllowUnauthenticated, cfg.AllowUnauthenticated, err)
	}
	t.Setenv(EnvAllowUnauthenticated, "yes please")
	if _, err := ServerConfigFromEnv(os.Getenv); err == nil || !strings.Contains(err.Error(), EnvAllowUnauthenticated) {
		t.Errorf("bad %s: error = %v", EnvAllowUnauthenticated, err)
	}
}

func TestCodecServerCustomAuthorizeAndOpenMode(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	enc, _ := c.Encode([]*commonpb.Payload{jsonPayload(t, "x")})
	custom := newTestServer(t, c, ServerConfig{Authorize: func(r *http.Request) error {
		if r.Header.Get("Authorization") != "Bearer oidc-ok" {
			return errors.New("access token rejected")
		}
		return nil
	}})
	if resp := decodeRequest(t, custom.URL, enc, map[string]string{"Authorization": "Bearer other"}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("custom authorize, bad token: status %d, want 401", resp.StatusCode)
	}
	if resp := decodeRequest(t, custom.URL, enc, map[string]string{"Authorization": "Bearer oidc-ok"}); resp.StatusCode != http.StatusOK {
		t.Errorf("custom authorize, good token: status %d, want 200", resp.StatusCode)
	}
	open := newTestServer(t, c, ServerConfig{AllowUnauthenticated: true})
	if resp := decodeRequest(t, open.URL, enc, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("unauthenticated mode: status %d, want 200", resp.StatusCode)
	}
}
