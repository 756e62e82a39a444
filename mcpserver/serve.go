package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/mcpframe"
	"github.com/fenixrt/fenix/netguard"
)

// Path is where the Streamable HTTP endpoint is served.
const Path = "/mcp"

// HTTPOptions configures the Streamable HTTP endpoint.
type HTTPOptions struct {
	// Addr is the listen address; a listener beyond loopback requires
	// Token.
	Addr string
	// Token, when set, is the bearer token every request must carry.
	Token string
	// OAuth, instead of Token, makes the endpoint an OAuth protected
	// resource: every request carries a JWT access token the operator's
	// authorization server issued for it (see OAuthConfig).
	OAuth *OAuthResource
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed
	// besides loopback origins on a loopback listener.
	AllowedOrigins []string
	// SessionTimeout closes sessions idle that long (default 1 hour).
	SessionTimeout time.Duration
	// SSEKeepAlive is how often an SSE stream gets a comment line, so
	// proxies keep it open while its calls wait (default 15 s).
	SSEKeepAlive time.Duration
}

// MaxMessageBytes bounds one JSON-RPC message the gateway reads: a line of
// stdio, or the body of one HTTP request: above what one call may carry
// (ExecuteAssignment refuses arguments over 1 MiB + 64 KiB), and the
// go-sdk's own default for HTTP bodies.
const MaxMessageBytes = 4 << 20

// ServeStdio serves one session over a pair of streams (the process's
// stdin and stdout for `starter mcp`) until the client closes it or ctx
// ends. A line over MaxMessageBytes is dropped and answered with an error
// naming the limit; the session goes on.
func (g *Gateway) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	// The end of the input is the client closing the session (the stdio
	// transport's shutdown): its calls in flight are cancelled before the
	// SDK sees the end, and before this returns (and `starter mcp` exits).
	closed := func() { g.calls.cancelSession("", reasonStdioClosed) }
	err := g.server.Run(ctx, transport{Transport: stdioTransport{in: in, out: out, onEOF: closed, logger: g.cfg.Logger}, ledger: g.cancels})
	g.calls.waitPending(signalTimeout)
	g.waitEnding(endSessionTimeout)
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// stdioTransport is the SDK's stream transport behind a line guard
// (mcpframe): the SDK's reader ends the session at the first message over
// its line limit.
type stdioTransport struct {
	in     io.ReadCloser
	out    io.WriteCloser
	onEOF  func()
	logger *slog.Logger
}

func (t stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	r := mcpframe.NewReader(t.in, MaxMessageBytes, t.onEOF)
	out := mcpframe.NewSerialWriter(t.out)
	c, err := (&mcp.IOTransport{Reader: r, Writer: out, MaxLineLength: mcpframe.SDKLineLimit(MaxMessageBytes)}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return mcpframe.NewConn(c, r, "by the Fenix MCP gateway", t.logger).AnswerUnidentified(out), nil
}

// HTTPHandler is the Streamable HTTP endpoint at Path, and the older
// HTTP+SSE transport at SSEPath, with Fenix's checks in front: the bearer
// token, Origin, and the request-ID ledger.
// The SDK applies the spec's session rules (Mcp-Session-Id issued at
// initialize, 404 for an unknown session, DELETE ends one) and rejects
// non-loopback Host headers on a loopback listener (DNS rebinding).
//
// A client that goes away cancels its calls' runs: a tools/call request
// that ends before its answer (aborted, or its connection lost), and a
// DELETE of the session. A server shutting down looks the same to a
// handler, so call Drain first (ServeHTTP does).
func (g *Gateway) HTTPHandler(opts HTTPOptions) (http.Handler, error) {
	loopback := IsLoopback(opts.Addr)
	if opts.OAuth != nil && opts.Token != "" {
		return nil, fenixerr.Validation("%v", errOAuthAndToken)
	}
	if !loopback && opts.Token == "" && opts.OAuth == nil {
		return nil, fenixerr.Validation("the MCP endpoint would listen on %q, beyond loopback, without a bearer token: set FENIX_MCP_TOKEN (or -token-file) or OAuth (-oauth-issuer, -oauth-resource), or listen on 127.0.0.1", opts.Addr)
	}
	allowed := make([]string, 0, len(opts.AllowedOrigins))
	for _, o := range opts.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fenixerr.Validation("allowed origin %q is not scheme://host[:port]", o)
		}
		allowed = append(allowed, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = time.Hour
	}
	if opts.SSEKeepAlive <= 0 {
		opts.SSEKeepAlive = 15 * time.Second
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      opts.SessionTimeout,
		MaxRequestBodyBytes: MaxMessageBytes,
	})
	admit := func(w http.ResponseWriter, r *http.Request) bool {
		if opts.Token != "" && !bearerOK(r, opts.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fenix-mcp"`)
			http.Error(w, "missing or wrong bearer token: send Authorization: Bearer <FENIX_MCP_TOKEN>", http.StatusUnauthorized)
			return false
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originOK(origin, allowed, loopback) {
			http.Error(w, fmt.Sprintf("origin %q is not allowed: add it with -allow-origin", origin), http.StatusForbidden)
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	// handle puts the OAuth bearer check, when configured, in front.
	handle := func(path string, h http.HandlerFunc) {
		if opts.OAuth == nil {
			mux.Handle(path, h)
			return
		}
		mux.Handle(path, opts.OAuth.protect(h))
	}
	if opts.OAuth != nil {
		opts.OAuth.serveMetadata(mux)
	}
	sse := &sseSessions{byID: map[string]*mcp.SSEServerTransport{}}
	handle(SSEPath, func(w http.ResponseWriter, r *http.Request) {
		if !admit(w, r) {
			return
		}
		// DNS rebinding: a loopback endpoint answers loopback Host names
		// only (the SDK's Streamable HTTP handler checks this itself).
		if loopback && !IsLoopback(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not a loopback name on a loopback endpoint (DNS rebinding?)", r.Host), http.StatusForbidden)
			return
		}
		g.serveSSE(w, r, sse, opts.SSEKeepAlive)
	})
	handle(Path, func(w http.ResponseWriter, r *http.Request) {
		if !admit(w, r) {
			return
		}
		session := r.Header.Get("Mcp-Session-Id")
		if !visibleASCII(session) {
			http.Error(w, fmt.Sprintf("Mcp-Session-Id %q has characters outside visible ASCII (0x21-0x7E); MCP session IDs are made of those only", session), http.StatusBadRequest)
			return
		}
		if r.Method == http.MethodDelete && session != "" {
			// Before the SDK closes the session: its Close waits for the
			// handlers in flight, which end once their runs are cancelled.
			g.calls.cancelSession(session, reasonDeleted)
		}
		calls, err := g.cancels.rewriteBody(r, session)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		sdk.ServeHTTP(w, r)
		// The request's context ends here only when the client went away
		// before the answer: its calls are still registered (a call leaves
		// the registry before its answer is written).
		if len(calls) > 0 && r.Context().Err() != nil && !g.stopping.Load() {
			for _, id := range calls {
				if c := g.calls.get(session, id); c != nil {
					c.cancelRun(reasonAborted)
				}
			}
		}
	})
	return mux, nil
}

// Drain marks the gateway as stopping: requests that end from now on
// leave their calls' runs to complete in Temporal (a retry of the request
// reads the result) instead of cancelling them as a client's abort would.
func (g *Gateway) Drain() { g.stopping.Store(true) }

// ServeHTTP serves the endpoint on ln until ctx ends, then shuts down;
// runs in flight go on in Temporal.
func (g *Gateway) ServeHTTP(ctx context.Context, ln net.Listener, opts HTTPOptions) error {
	if opts.Addr == "" {
		opts.Addr = ln.Addr().String()
	}
	h, err := g.HTTPHandler(opts)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		g.Drain()
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
		_ = srv.Close()
		return nil
	}
}

func bearerOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// originOK allows configured origins, and loopback origins when the
// endpoint itself listens on loopback.
func originOK(origin string, allowed []string, loopback bool) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if slices.Contains(allowed, strings.ToLower(u.Scheme+"://"+u.Host)) {
		return true
	}
	return loopback && (u.Scheme == "http" || u.Scheme == "https") && netguard.IsLoopbackHost(u.Hostname())
}

// IsLoopback reports whether a listen address only accepts loopback
// connections (":8080" and "0.0.0.0:8080" do not).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return netguard.IsLoopbackHost(host)
}
