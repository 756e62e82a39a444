package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenixrt/fenix/netguard"
)

const formPage = `<!doctype html><title>Sign in</title>
<h1>Welcome</h1><p>Please sign in.</p>
<form action="/login" method="post">
<label for="user">User name</label> <input id="user" name="user">
<label>Password <input type="password" name="pass"></label>
<button type="submit">Sign in</button>
</form><a href="/about">About us</a><div style="display:none"><button>Hidden</button></div>`

// testSite serves a login form, its result, a redirect and a page that
// never finishes loading.
func testSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, formPage) })
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		fmt.Fprintf(w, "<title>Signed in</title><p>Hello %s, your password has %d characters.</p>", r.FormValue("user"), len(r.FormValue("pass")))
	})
	mux.HandleFunc("/about", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<title>About</title><p>About page</p>")
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func loopbackPolicy() netguard.Policy {
	return netguard.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
}

func newTestManager(t *testing.T, policy netguard.Policy, idle time.Duration) *Manager {
	t.Helper()
	exe, err := FindChromium()
	if err != nil {
		t.Skipf("browser tests need Chromium: %v", err)
	}
	m, err := NewManager(Config{Dir: t.TempDir(), ExecPath: exe, Guard: Guard{Policy: policy}, IdleTimeout: idle,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Shutdown)
	return m
}

func TestFormFilledAndSubmitted(t *testing.T) {
	srv := testSite(t)
	m := newTestManager(t, loopbackPolicy(), time.Minute)
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_0000000000000001", ConversationID: "conv"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Navigate(ctx, srv.URL+"/", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Title != "Sign in" || st.Status != 200 {
		t.Fatalf("navigate: got %+v", st)
	}
	p, err := s.Snapshot(ctx, 10000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`textbox "User name"`, `textbox "Password" type=password`, `button "Sign in"`, `link "About us"`}
	if len(p.Elements) != len(want) {
		t.Fatalf("snapshot elements: got %+v\ntext:\n%s", p.Elements, p.Text)
	}
	for i, w := range want {
		if !strings.Contains(p.Text, fmt.Sprintf("[%d] %s", i+1, w)) {
			t.Errorf("snapshot text lacks [%d] %s:\n%s", i+1, w, p.Text)
		}
	}
	if strings.Contains(p.Text, "Hidden") {
		t.Errorf("snapshot shows a hidden element:\n%s", p.Text)
	}
	if _, _, err := s.Type(ctx, Target{Ref: 1}, "ada", false, false, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Type(ctx, Target{Selector: "input[name=pass]"}, "secret!", false, false, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	el, st, err := s.Click(ctx, Target{Ref: 3}, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if el.Name != "Sign in" || !st.Navigated || st.Title != "Signed in" || !strings.HasSuffix(st.URL, "/login") {
		t.Fatalf("click: got element %+v state %+v", el, st)
	}
	p, err = s.Snapshot(ctx, 10000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Text, "Hello ada, your password has 7 characters.") {
		t.Fatalf("after submit the page says:\n%s", p.Text)
	}
	if _, _, err := s.Click(ctx, Target{Ref: 3}, 5*time.Second); !errors.As(err, new(*ElementError)) {
		t.Fatalf("click on a stale number: got %v, want an ElementError", err)
	}
	if got := m.List(); len(got) != 1 || got[0].Title != "Signed in" {
		t.Fatalf("List: got %+v", got)
	}

	// Enter in a field submits the form too.
	if _, err := s.Navigate(ctx, srv.URL+"/", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, 10000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, st, err := s.Type(ctx, Target{Ref: 1}, "bob", false, false, 10*time.Second); err != nil || st.Navigated {
		t.Fatalf("typing without submit: %+v, %v", st, err)
	}
	_, st, err = s.Type(ctx, Target{Ref: 2}, "pw", false, true, 20*time.Second)
	if err != nil || !st.Navigated || st.Title != "Signed in" {
		t.Fatalf("typing with submit: %+v, %v", st, err)
	}
}

func TestGuardRefusesLoopbackUnlessAllowed(t *testing.T) {
	srv := testSite(t)
	m := newTestManager(t, netguard.Policy{}, time.Minute)
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_0000000000000002"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Navigate(ctx, srv.URL+"/", 20*time.Second)
	b, ok := IsBlocked(err)
	if !ok || b.Net == nil || b.Net.Reason != "loopback" {
		t.Fatalf("navigate to loopback: got %v, want a loopback refusal", err)
	}
	for _, u := range []string{"file:///etc/passwd", "chrome://settings", "javascript:alert(1)"} {
		if _, err := s.Navigate(ctx, u, 5*time.Second); err == nil {
			t.Errorf("navigate to %s: no error", u)
		} else if _, ok := IsBlocked(err); !ok {
			t.Errorf("navigate to %s: got %v, want a BlockedError", u, err)
		}
	}
}

func TestRedirectToBlockedDestinationIsRefused(t *testing.T) {
	srv := testSite(t)
	// Only 127.0.0.1 is allowed; the redirect goes to 127.0.0.2.
	m := newTestManager(t, netguard.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, time.Minute)
	redirect := httptest.NewServer(http.RedirectHandler(strings.Replace(srv.URL, "127.0.0.1", "127.0.0.2", 1)+"/about", http.StatusFound))
	defer redirect.Close()
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_0000000000000003"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Navigate(ctx, redirect.URL+"/", 20*time.Second)
	if b, ok := IsBlocked(err); !ok || !strings.Contains(b.URL, "127.0.0.2") {
		t.Fatalf("redirect to 127.0.0.2: got %v, want a refusal naming it", err)
	}
	if info := s.Info(); info.URL != "about:blank" {
		t.Fatalf("after the refusal the page is %q, want about:blank", info.URL)
	}
}

func TestCanceledCallClosesSessionAndKillsChromium(t *testing.T) {
	srv := testSite(t)
	m := newTestManager(t, loopbackPolicy(), time.Minute)
	s, err := m.Open(context.Background(), OpenSpec{ID: "brw_test_0000000000000004"})
	if err != nil {
		t.Fatal(err)
	}
	if pids := ProcessesUsingProfile(s.Info().Profile); len(pids) == 0 {
		t.Fatal("no Chromium process uses the session's profile")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Navigate(ctx, srv.URL+"/hang", time.Minute)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	cancel()
	err = <-done
	if !errors.Is(err, ErrCanceled) {
		t.Fatalf("canceled navigate: got %v", err)
	}
	for len(ProcessesUsingProfile(s.Info().Profile)) > 0 {
		if time.Since(start) > 2*time.Second {
			t.Fatalf("Chromium still runs 2s after the cancel: %v", ProcessesUsingProfile(s.Info().Profile))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("Chromium gone %s after the cancel", time.Since(start))
	_, err = m.Get(s.ID())
	var se *SessionError
	if !errors.As(err, &se) || se.Reason != ReasonCanceled {
		t.Fatalf("Get after cancel: got %v", err)
	}
}

func TestIdleSessionIsClosed(t *testing.T) {
	m := newTestManager(t, loopbackPolicy(), 300*time.Millisecond)
	s, err := m.Open(context.Background(), OpenSpec{ID: "brw_test_0000000000000005"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := m.Get(s.ID())
		var se *SessionError
		if errors.As(err, &se) && se.Reason == ReasonIdle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session still open or closed otherwise after 5s idle: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pids := ProcessesUsingProfile(s.Info().Profile); len(pids) > 0 {
		t.Fatalf("Chromium of the idle session still runs: %v", pids)
	}
}

// blockedRecorder is a server on 127.0.0.2, which the tests' policies
// refuse, that records every request reaching it.
func blockedRecorder(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var hits []string
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
	}))
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hits)
	}
}

// A page may not reach a refused destination by a request the DevTools
// interception does not see: a WebSocket handshake or a service worker's
// fetch. The same page's requests to its own (allowed) host still work.
func TestPageRequestsAroundTheInterceptionAreRefused(t *testing.T) {
	secret, secretHits := blockedRecorder(t)
	var mu sync.Mutex
	allowed := map[string]bool{}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		allowed[r.URL.Path] = true
		mu.Unlock()
		switch r.URL.Path {
		case "/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, `self.addEventListener('install', e => e.waitUntil(Promise.allSettled([
				fetch(%q, {mode: 'no-cors'}), fetch('/sw-allowed')])));`, secret.URL+"/sw-fetch")
		case "/":
			fmt.Fprintf(w, `<title>Sockets</title><script>
				new WebSocket(%q); new WebSocket(location.origin.replace('http', 'ws') + '/ws-allowed');
				navigator.serviceWorker.register('/sw.js');
			</script>`, strings.Replace(secret.URL, "http", "ws", 1)+"/ws")
		}
	}))
	defer site.Close()
	m := newTestManager(t, netguard.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, time.Minute)
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_0000000000000006"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Navigate(ctx, site.URL+"/", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := allowed["/ws-allowed"] && allowed["/sw-allowed"]
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's allowed WebSocket and service worker fetch did not arrive within 10s: got %v", allowed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if hits := secretHits(); len(hits) > 0 {
		t.Fatalf("requests reached the refused 127.0.0.2 around the guard: %v", hits)
	}
}

// publicResolver answers every name with a public address, as a DNS
// rebinding server does for the check before it answers a private one.
type publicResolver struct{}

func (publicResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// The guard's look-up and the connection are separate: a name that
// resolves to a public address when checked and to loopback when connected
// to must still be refused, with a BlockedError naming the address.
func TestNameResolvingDifferentlyAtConnectIsRefused(t *testing.T) {
	srv := testSite(t)
	exe, err := FindChromium()
	if err != nil {
		t.Skipf("browser tests need Chromium: %v", err)
	}
	m, err := NewManager(Config{Dir: t.TempDir(), ExecPath: exe, Guard: Guard{Resolver: publicResolver{}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Shutdown)
	ctx := context.Background()
	s, err := m.Open(ctx, OpenSpec{ID: "brw_test_0000000000000007"})
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	st, err := s.Navigate(ctx, "http://localhost:"+port+"/about", 20*time.Second)
	b, ok := IsBlocked(err)
	if !ok || b.Net == nil || b.Net.Reason != "loopback" {
		t.Fatalf("navigate to localhost checked as public: got %+v, %v; want a loopback refusal", st, err)
	}
	if info := s.Info(); info.URL != "about:blank" {
		t.Fatalf("after the refusal the page is %q, want about:blank", info.URL)
	}
}
