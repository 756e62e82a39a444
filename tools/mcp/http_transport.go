package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/netguard"
)

// The transports of servers reached over the network: Streamable HTTP and
// HTTP+SSE, through the outbound guard, their requests kept on the
// origin of the configured url.

// sseTransport keeps an SSE session's stream open past its connect: the
// SDK opens the stream (a GET that lives as long as the session) with the
// context Connect is given, and the manager's is bounded by its connect
// timeout. The stream gets a context of its own, ended when the session
// closes; Connect still gives up at the caller's deadline.
type sseTransport struct {
	inner *sdk.SSEClientTransport
}

func (t *sseTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	streamCtx, endStream := context.WithCancel(context.WithoutCancel(ctx))
	type connected struct {
		conn sdk.Connection
		err  error
	}
	done := make(chan connected, 1)
	go func() {
		conn, err := t.inner.Connect(streamCtx)
		done <- connected{conn, err}
	}()
	select {
	case c := <-done:
		if c.err != nil {
			endStream()
			return nil, c.err
		}
		return &sseConnection{Connection: c.conn, endStream: endStream}, nil
	case <-ctx.Done():
		endStream()
		return nil, fmt.Errorf("SSE stream of %s: %w", t.inner.Endpoint, ctx.Err())
	}
}

// sseConnection ends its stream's context when closed.
type sseConnection struct {
	sdk.Connection
	endStream context.CancelFunc
}

func (c *sseConnection) Close() error {
	err := c.Connection.Close()
	c.endStream()
	return err
}

// httpClient sends a server's requests through the outbound guard: the
// worker's policy plus the host the config names (so a server configured
// at http://127.0.0.1:3001/mcp is reachable, but a redirect or a name
// resolving into a private range is not). Configured headers go on every
// request to the server's origin (see headerTransport).
func httpClient(cfg ServerConfig, base netguard.Policy) (*http.Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", cfg.URL, err)
	}
	transport := guardedTransport(base, "FENIX_FETCH_ALLOW (or the server's url in "+cfg.Path+")", u.Hostname())
	headers := http.Header{}
	for k, v := range cfg.Headers {
		headers.Set(k, v)
	}
	return &http.Client{
		// No overall timeout: the standalone SSE stream stays open for the
		// session's life; each call is bounded by its context.
		Transport: &headerTransport{base: transport, headers: headers, origin: originOf(u), upgraded: upgradedOrigin(u), server: cfg.Name},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return fmt.Errorf("stopped after %d redirects", len(via))
			}
			return nil
		},
	}, nil
}

// guardedTransport dials through the outbound guard: base plus hosts
// (addresses or names), which the configuration or a sign-in named;
// setting is what an operator changes to reach more.
func guardedTransport(base netguard.Policy, setting string, hosts ...string) *http.Transport {
	policy := netguard.Policy{
		AllowCIDRs: append([]netip.Prefix(nil), base.AllowCIDRs...),
		AllowHosts: append([]string(nil), base.AllowHosts...),
		Setting:    setting,
	}
	for _, host := range hosts {
		if host == "" {
			continue
		}
		if addr, err := netip.ParseAddr(host); err == nil {
			addr = addr.Unmap()
			policy.AllowCIDRs = append(policy.AllowCIDRs, netip.PrefixFrom(addr, addr.BitLen()))
		} else {
			policy.AllowHosts = append(policy.AllowHosts, strings.ToLower(host))
		}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           policy.DialContext(dialer),
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          8,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
}

// headerTransport adds the configured headers (a bearer token, typically)
// to requests to the server's own origin, and refuses every other: a
// redirect, or an SSE server's message endpoint, naming another host
// would otherwise be sent the server's credentials. The https origin of
// an http url's host counts as its own: a server that upgrades
// http://h/mcp to https://h/mcp keeps working.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	origin  string
	// upgraded is the https origin of an http url's host, else "".
	upgraded string
	server   string
	// onCancel counts the notifications/cancelled posted (a Streamable
	// HTTP session, whose connection must not be wrapped: see
	// server.transport).
	onCancel func()
}

// originOf is scheme://host:port with the scheme's default port made
// explicit, so http://h and http://h:80 are one origin.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// upgradedOrigin is the https origin on the default port of an http url's
// host, "" for an https url.
func upgradedOrigin(u *url.URL) string {
	if !strings.EqualFold(u.Scheme, "http") {
		return ""
	}
	return originOf(&url.URL{Scheme: "https", Host: u.Hostname()})
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	cancel := t.onCancel != nil && isCancelNotification(req)
	if got := originOf(req.URL); got != t.origin && got != t.upgraded {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("MCP server %q: %s %s is on origin %s, not its url's %s: refused, so its headers stay with it", t.server, req.Method, req.URL.Redacted(), got, t.origin)
	}
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header[k] = v
		}
	}
	resp, err := t.base.RoundTrip(req)
	if cancel && err == nil && resp.StatusCode < 300 {
		t.onCancel()
	}
	return resp, err
}

// isCancelNotification reports whether req posts notifications/cancelled
// (read from a copy of its body; the SDK's bodies can be read again).
func isCancelNotification(req *http.Request) bool {
	if req.Method != http.MethodPost || req.GetBody == nil || req.ContentLength > maxCancelBytes {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, maxCancelBytes))
	if err != nil {
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(raw, &msg) == nil && msg.Method == "notifications/cancelled"
}

// maxCancelBytes is more than a notifications/cancelled takes.
const maxCancelBytes = 4 << 10
