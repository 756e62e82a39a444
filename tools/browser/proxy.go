package browser

import (
	"errors"
	"fmt"
	"net"
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
	proxy    *netguard.Proxy

	mu sync.Mutex
	// refused holds the latest refusal per host name since the last
	// clearRefusals, so an operation can say why its page did not load.
	refused map[string]*netguard.BlockedError
}

// maxRefusalsKept bounds refused: a page can ask for any number of
// blocked hosts.
const maxRefusalsKept = 64

// startGuardProxy listens on a loopback port and serves until close.
func startGuardProxy(policy netguard.Policy) (*guardProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the browser's guard proxy: %w", err)
	}
	p := &guardProxy{listener: l, refused: map[string]*netguard.BlockedError{}}
	dial := policy.DialContext(&net.Dialer{Timeout: netguard.ProxyDialTimeout, KeepAlive: 30 * time.Second})
	p.proxy = netguard.NewProxy("the browser's guard proxy", dial, p.remember)
	p.proxy.Serve(l)
	return p, nil
}

// URL is what Chromium's --proxy-server takes.
func (p *guardProxy) URL() string { return "http://" + p.listener.Addr().String() }

func (p *guardProxy) close() { p.proxy.Close() }

// remember keeps a policy refusal for refusal.
func (p *guardProxy) remember(err error) {
	var blocked *netguard.BlockedError
	if !errors.As(err, &blocked) {
		return
	}
	p.mu.Lock()
	if len(p.refused) >= maxRefusalsKept {
		clear(p.refused)
	}
	p.refused[strings.ToLower(blocked.Host)] = blocked
	p.mu.Unlock()
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
