package mcp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/netguard"
)

// The guard admits the host the config names and nothing else private: a
// redirect to another loopback address is refused.
func TestHTTPClientAdmitsOnlyTheConfiguredHost(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("reached")) }))
	defer target.Close()
	other := strings.Replace(target.URL, "127.0.0.1", "127.0.0.2", 1)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "abc" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other, http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer redirect.Close()

	client, err := httpClient(ServerConfig{URL: redirect.URL + "/mcp", Headers: map[string]string{"X-Token": "abc"}, Path: "p/.mcp.json"}, netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(redirect.URL + "/mcp")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("configured host: %v %v", resp, err)
	}
	resp.Body.Close()
	_, err = client.Get(redirect.URL + "/away")
	var blocked *netguard.BlockedError
	if !errors.As(err, &blocked) {
		t.Fatalf("redirect to %s: err = %v, want a BlockedError", other, err)
	}
	if !strings.Contains(err.Error(), "p/.mcp.json") {
		t.Errorf("error %q should say how to allow the destination", err)
	}
}
