package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

func mustDomains(t *testing.T, allowed, denied []string) DomainList {
	t.Helper()
	l := DomainList{Setting: "sandbox.network of .claude/settings.json"}
	for _, e := range allowed {
		p, err := ParseDomainPattern(e, false)
		if err != nil {
			t.Fatal(err)
		}
		l.Allowed = append(l.Allowed, p)
	}
	for _, e := range denied {
		p, err := ParseDomainPattern(e, true)
		if err != nil {
			t.Fatal(err)
		}
		l.Denied = append(l.Denied, p)
	}
	return l
}

func TestParseDomainPattern(t *testing.T) {
	for _, tc := range []struct {
		entry string
		deny  bool
		want  string // "" for a refusal
	}{
		{"example.com", false, "example.com"},
		{"API.GitHub.com", false, "api.github.com"},
		{"*.npmjs.org", false, "*.npmjs.org"},
		{"api.github.com:443", false, "api.github.com:443"},
		{"localhost", false, "localhost"},
		{"10.0.0.5", false, "10.0.0.5"},
		{"[::1]:8080", false, "[::1]:8080"},
		{"*", true, "*"},
		{"*", false, ""},
		{"*.com", false, ""},
		{"*.*.example.com", false, ""},
		{"https://example.com", false, ""},
		{"example.com/path", false, ""},
		{"example.com:0", false, ""},
		{"example.com:70000", false, ""},
		{"example.com:443.evil.com", false, ""},
		{"::1", false, ""},
		{"com", false, ""},
		{"a..b", false, ""},
	} {
		p, err := ParseDomainPattern(tc.entry, tc.deny)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q: parsed as %q, want a refusal", tc.entry, p)
		case tc.want != "" && err != nil:
			t.Errorf("%q: %v", tc.entry, err)
		case tc.want != "" && p.String() != tc.want:
			t.Errorf("%q: parsed as %q, want %q", tc.entry, p, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(tc.entry)) {
			t.Errorf("%q: the error %q does not name the entry", tc.entry, err)
		}
	}
}

func TestDomainListDecides(t *testing.T) {
	l := mustDomains(t, []string{"github.com", "*.npmjs.org", "api.example.com:443", "10.1.2.3"}, []string{"evil.npmjs.org"})
	for _, tc := range []struct {
		host string
		port int
		ok   bool
	}{
		{"github.com", 443, true},
		{"GitHub.com.", 22, true},
		{"api.github.com", 443, false}, // a name is that host only
		{"registry.npmjs.org", 443, true},
		{"npmjs.org", 443, false}, // a wildcard is the subdomains only
		{"evil.npmjs.org", 443, false},
		{"api.example.com", 443, true},
		{"api.example.com", 80, false},
		{"10.1.2.3", 80, true},
		{"::ffff:10.1.2.3", 80, true},
		{"10.1.2.4", 80, false},
		{"::ffff:1.2.3.4%x.npmjs.org", 443, false},
		{"example.org", 443, false},
	} {
		err := l.Decide(tc.host, tc.port)
		if tc.ok != (err == nil) {
			t.Errorf("Decide(%q, %d) = %v, want allowed=%v", tc.host, tc.port, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBlocked) {
			t.Errorf("Decide(%q, %d): %v does not match ErrBlocked", tc.host, tc.port, err)
		}
	}
	err := l.Decide("evil.npmjs.org", 443)
	if !strings.Contains(err.Error(), "denied domains of sandbox.network of .claude/settings.json") {
		t.Errorf("a denied host's refusal says %q", err)
	}
	err = l.Decide("example.org", 443)
	if !strings.Contains(err.Error(), "example.org:443 is not on the allowed domains of sandbox.network") {
		t.Errorf("an unlisted host's refusal says %q", err)
	}
}

// listDialer decides by l and connects every allowed destination to
// target, a local server standing in for the host named.
func listDialer(l DomainList, target string) DialFunc {
	var d net.Dialer
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, portText, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		port, _ := strconv.Atoi(portText)
		if err := l.Decide(host, port); err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, target)
	}
}

func TestProxyAndSOCKSServeOnlyTheAllowedDomains(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer upstream.Close()
	l := mustDomains(t, []string{"allowed.example"}, nil)
	var refused []string
	dial := listDialer(l, upstream.Listener.Addr().String())
	note := func(err error) { refused = append(refused, err.Error()) }

	httpListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy("the commands' sandbox proxy", dial, note)
	p.Serve(httpListener)
	defer p.Close()
	socksListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer socksListener.Close()
	ServeSOCKS5(socksListener, dial, note, nil)

	proxyURL, _ := url.Parse("http://" + httpListener.Addr().String())
	viaHTTP := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	socks, err := proxy.SOCKS5("tcp", socksListener.Addr().String(), nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	viaSOCKS := &http.Client{Transport: &http.Transport{DialContext: socks.(proxy.ContextDialer).DialContext}}

	get := func(c *http.Client, rawURL string) (int, string, error) {
		resp, err := c.Get(rawURL)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	for name, c := range map[string]*http.Client{"http proxy": viaHTTP, "socks": viaSOCKS} {
		code, body, err := get(c, "http://allowed.example/")
		if err != nil || code != 200 || body != "hello from allowed.example" {
			t.Errorf("%s: allowed host answered %d %q, %v", name, code, body, err)
		}
	}
	code, body, err := get(viaHTTP, "http://other.example/")
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "refused by the commands' sandbox proxy: other.example:80 is not on the allowed domains") {
		t.Errorf("http proxy: unlisted host answered %d %q, %v", code, body, err)
	}
	// CONNECT to an unlisted host is refused before any byte reaches it.
	if _, _, err := get(viaHTTP, "https://other.example/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("http proxy: CONNECT to an unlisted host gave %v, want Forbidden", err)
	}
	if _, _, err := get(viaSOCKS, "http://other.example/"); err == nil || !strings.Contains(err.Error(), "connection not allowed by ruleset") {
		t.Errorf("socks: unlisted host gave %v, want not allowed by ruleset", err)
	}
	if len(refused) != 3 {
		t.Errorf("refusals heard: %q, want 3", refused)
	}
}

// A command's proxy credentials name its Asker: a host neither allowed
// nor denied is asked about (a person answers; the proxy's dial timeout
// does not cut them short), and reached when allowed. A denied host is
// never asked about, and a command without credentials is refused as
// before. Both proxies, HTTP (Proxy-Authorization) and SOCKS5 (RFC 1929).
func TestAProxyAsksTheCommandsAskerAboutUnlistedHosts(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer upstream.Close()
	l := mustDomains(t, []string{"allowed.example"}, []string{"denied.example"})
	target := upstream.Listener.Addr().String()
	var d net.Dialer
	dial := l.DialContext(&d)
	// Every name reaches the local upstream once decided.
	routed := func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(address)
		conn, err := dial(ctx, network, net.JoinHostPort(host, port))
		if conn != nil {
			conn.Close()
		}
		var refused *RefusedError
		if errors.As(err, &refused) {
			return nil, err
		}
		return d.DialContext(ctx, network, target)
	}
	var mu sync.Mutex
	var asked []string
	identify := func(user, password string) Asker {
		if user != ProxyUser || password != "cmd-1" {
			return nil
		}
		return func(ctx context.Context, host string, port int) (bool, string) {
			mu.Lock()
			asked = append(asked, fmt.Sprintf("%s:%d", host, port))
			mu.Unlock()
			time.Sleep(100 * time.Millisecond) // a person answering
			if host == "ok.example" {
				return true, "allowed by ana"
			}
			return false, "denied by ana: not for this task"
		}
	}
	httpListener, _ := net.Listen("tcp", "127.0.0.1:0")
	p := NewProxy("the commands' sandbox proxy", routed, nil)
	p.Identify(identify)
	p.Serve(httpListener)
	defer p.Close()
	socksListener, _ := net.Listen("tcp", "127.0.0.1:0")
	defer socksListener.Close()
	ServeSOCKS5(socksListener, routed, nil, identify)

	viaHTTP := func(user *url.Userinfo) *http.Client {
		u := &url.URL{Scheme: "http", Host: httpListener.Addr().String(), User: user}
		return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	}
	viaSOCKS := func(auth *proxy.Auth) *http.Client {
		s, err := proxy.SOCKS5("tcp", socksListener.Addr().String(), auth, proxy.Direct)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Client{Transport: &http.Transport{DialContext: s.(proxy.ContextDialer).DialContext}}
	}
	get := func(c *http.Client, rawURL string) (int, string, error) {
		resp, err := c.Get(rawURL)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	clients := map[string]*http.Client{
		"http proxy": viaHTTP(url.UserPassword(ProxyUser, "cmd-1")),
		"socks":      viaSOCKS(&proxy.Auth{User: ProxyUser, Password: "cmd-1"}),
	}
	for name, c := range clients {
		if code, body, err := get(c, "http://ok.example/"); err != nil || code != 200 || body != "hello from ok.example" {
			t.Errorf("%s: an allowed ask answered %d %q, %v", name, code, body, err)
		}
		if code, body, err := get(c, "http://allowed.example/"); err != nil || code != 200 {
			t.Errorf("%s: an allowed domain answered %d %q, %v", name, code, body, err)
		}
	}
	code, body, err := get(clients["http proxy"], "http://nope.example/")
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "nope.example:80 is not on the allowed domains") || !strings.Contains(body, "denied by ana: not for this task") {
		t.Errorf("http proxy: a denied ask answered %d %q, %v", code, body, err)
	}
	if _, _, err := get(clients["socks"], "http://nope.example/"); err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
		t.Errorf("socks: a denied ask gave %v", err)
	}
	for name, c := range map[string]*http.Client{"http proxy, no credentials": viaHTTP(nil), "socks, no credentials": viaSOCKS(nil),
		"http proxy, another command": viaHTTP(url.UserPassword(ProxyUser, "cmd-2"))} {
		if code, _, err := get(c, "http://ok.example/"); err == nil && code == 200 {
			t.Errorf("%s reached an unlisted host", name)
		}
	}
	if code, _, err := get(clients["http proxy"], "http://denied.example/"); err == nil && code == 200 {
		t.Error("a denied domain was reached")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"ok.example:80", "ok.example:80", "nope.example:80", "nope.example:80"}
	sort.Strings(asked)
	sort.Strings(want)
	if strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("asked about %v, want %v (never about an allowed or denied domain)", asked, want)
	}
}
