package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"
)

// DialFunc reaches a destination, or refuses it with an error that
// matches ErrBlocked.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Proxy is an HTTP proxy (absolute-form http requests, and CONNECT for
// https and WebSockets) that reaches every destination through its
// DialFunc, which decides: the client resolves nothing itself, so the
// decision is on the address actually connected to.
type Proxy struct {
	name      string
	dial      DialFunc
	onRefused func(error)
	identify  Identify
	server    *http.Server
	forward   *httputil.ReverseProxy
}

// Identify makes the proxy read each request's Proxy-Authorization and
// dial with the Asker identify maps it to (see WithAsker). Call it before
// Serve. Connections to destinations are then not kept for reuse: one a
// command was allowed to open must not carry another command's request.
func (p *Proxy) Identify(identify Identify) {
	p.identify = identify
	p.forward.Transport.(*http.Transport).DisableKeepAlives = true
}

// ProxyDialTimeout bounds a proxy's connection to a destination.
const ProxyDialTimeout = 10 * time.Second

// NewProxy returns a proxy that dials through dial; name says whose it is
// in the answers it gives ("the browser's guard proxy"); onRefused, when
// set, hears of every refusal.
func NewProxy(name string, dial DialFunc, onRefused func(error)) *Proxy {
	p := &Proxy{name: name, dial: dial, onRefused: onRefused}
	p.forward = &httputil.ReverseProxy{
		// The incoming request already carries the absolute URL; nothing
		// (no X-Forwarded-For) is added.
		Rewrite: func(*httputil.ProxyRequest) {},
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dial,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 256 << 10,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { p.fail(w, err) },
	}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	return p
}

// Serve serves l until Close, in a goroutine of its own.
func (p *Proxy) Serve(l net.Listener) {
	go func() { _ = p.server.Serve(l) }()
}

// Close stops serving and closes the listeners and open connections.
func (p *Proxy) Close() { _ = p.server.Close() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.identify != nil {
		if user, password, ok := proxyCredentials(r); ok {
			r = r.WithContext(WithAsker(r.Context(), p.identify(user, password)))
		}
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, p.name+" forwards only absolute http URLs and CONNECT", http.StatusBadRequest)
		return
	}
	p.forward.ServeHTTP(w, r)
}

// tunnel serves CONNECT: it dials the destination, then copies bytes both
// ways until either side ends.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), ProxyDialTimeout)
	upstream, err := p.dial(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		p.fail(w, err)
		return
	}
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, p.name+" cannot tunnel on this connection", http.StatusInternalServerError)
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
	splice(client, buffered, upstream)
}

// splice copies both ways between a client (read through in, which may
// hold bytes the client already sent) and upstream, and closes both when
// either direction ends.
func splice(client net.Conn, in io.Reader, upstream net.Conn) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); upstream.Close() }) }
	go func() {
		defer closeBoth()
		_, _ = io.Copy(upstream, in)
	}()
	go func() {
		defer closeBoth()
		_, _ = io.Copy(client, upstream)
	}()
}

// fail answers a request the proxy could not forward: 403 with the reason
// for a refusal, 502 otherwise.
func (p *Proxy) fail(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrBlocked) {
		err = refusal(err)
		if p.onRefused != nil {
			p.onRefused(err)
		}
		http.Error(w, "refused by "+p.name+": "+err.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, p.name+" could not reach the destination: "+err.Error(), http.StatusBadGateway)
}

// refusal digs the refusal out of the errors a dial wraps it in.
func refusal(err error) error {
	var blocked *BlockedError
	if errors.As(err, &blocked) {
		return blocked
	}
	var refused *RefusedError
	if errors.As(err, &refused) {
		return refused
	}
	return err
}
