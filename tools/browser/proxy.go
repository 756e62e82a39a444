package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fenixrt/fenix/netguard"
)

// guardProxy is the HTTP proxy a session's Chromium sends every request
// through. The DevTools interception (Session.filter) does not see every
// request a page can make (WebSocket handshakes and service worker fetches
// pass it by), and it resolves host names separately from the connection,
// which DNS rebinding exploits. Behind the proxy Chromium resolves nothing
// itself: the proxy dials through the netguard policy, which checks the
// address it actually connects to.
type guardProxy struct {
	listener net.Listener
	server   *http.Server
	dial     func(ctx context.Context, network, address string) (net.Conn, error)
	forward  *httputil.ReverseProxy

	mu sync.Mutex
	// refused holds the latest refusal per host name since the last
	// clearRefusals, so an operation can say why its page did not load.
	refused map[string]*netguard.BlockedError
}

const (
	proxyDialTimeout = 10 * time.Second
	// maxRefusalsKept bounds refused: a page can ask for any number of
	// blocked hosts.
	maxRefusalsKept = 64
)

// startGuardProxy listens on a loopback port and serves until close.
func startGuardProxy(policy netguard.Policy) (*guardProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the browser's guard proxy: %w", err)
	}
	p := &guardProxy{
		listener: l,
		dial:     policy.DialContext(&net.Dialer{Timeout: proxyDialTimeout, KeepAlive: 30 * time.Second}),
		refused:  map[string]*netguard.BlockedError{},
	}
	p.forward = &httputil.ReverseProxy{
		// The incoming request already carries the absolute URL; nothing
		// (no X-Forwarded-For) is added.
		Rewrite: func(*httputil.ProxyRequest) {},
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            p.dial,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 256 << 10,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { p.fail(w, err) },
	}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// URL is what Chromium's --proxy-server takes.
func (p *guardProxy) URL() string { return "http://" + p.listener.Addr().String() }

func (p *guardProxy) close() { _ = p.server.Close() }

func (p *guardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "the browser's guard proxy forwards only absolute http URLs and CONNECT", http.StatusBadRequest)
		return
	}
	p.forward.ServeHTTP(w, r)
}

// tunnel serves CONNECT (https and WebSocket): it dials the destination
// through the policy, then copies bytes both ways until either side ends.
func (p *guardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), proxyDialTimeout)
	upstream, err := p.dial(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		p.fail(w, err)
		return
	}
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "the browser's guard proxy cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, buffered, err := hijacker.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); upstream.Close() }) }
	go func() {
		defer closeBoth()
		_, _ = io.Copy(upstream, buffered)
	}()
	go func() {
		defer closeBoth()
		_, _ = io.Copy(client, upstream)
	}()
}

// fail answers a request the proxy could not forward, remembering a
// policy refusal.
func (p *guardProxy) fail(w http.ResponseWriter, err error) {
	var blocked *netguard.BlockedError
	if errors.As(err, &blocked) {
		p.mu.Lock()
		if len(p.refused) >= maxRefusalsKept {
			clear(p.refused)
		}
		p.refused[strings.ToLower(blocked.Host)] = blocked
		p.mu.Unlock()
		http.Error(w, "refused by the browser's guard: "+blocked.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, "the browser's guard proxy could not reach the destination: "+err.Error(), http.StatusBadGateway)
}

// refusal returns the latest refusal of host, or nil.
func (p *guardProxy) refusal(host string) *netguard.BlockedError {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused[strings.ToLower(strings.Trim(host, "[]"))]
}

func (p *guardProxy) clearRefusals() {
	p.mu.Lock()
	clear(p.refused)
	p.mu.Unlock()
}

// proxyRefusal is the guard proxy's refusal of rawURL's host in this
// operation, as a *BlockedError, or nil. The proxy refuses what the guard's
// own look-up let through when the address connected to differs (DNS
// rebinding).
func (s *Session) proxyRefusal(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	refused := s.proxy.refusal(u.Hostname())
	if refused == nil {
		return nil
	}
	return &BlockedError{URL: u.Redacted(), Reason: refused.Error(), Net: refused}
}
