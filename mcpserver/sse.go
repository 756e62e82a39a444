package mcpserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SSEPath is where the HTTP+SSE transport of the 2024-11-05 spec is
// served, for clients that speak only it (agent frameworks' "sse" MCP
// clients): a GET opens a session's event stream, whose first event names
// where to POST its messages (SSEPath?sessionid=…).
const SSEPath = "/sse"

// sseSessions are the open SSE sessions by ID.
type sseSessions struct {
	mu   sync.Mutex
	byID map[string]*mcp.SSEServerTransport
}

func (s *sseSessions) get(id string) *mcp.SSEServerTransport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

func (s *sseSessions) put(id string, t *mcp.SSEServerTransport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t == nil {
		delete(s.byID, id)
		return
	}
	s.byID[id] = t
}

// serveSSE serves SSEPath once the token and Origin were checked. The
// go-sdk's own SSEHandler gives its sessions no ID, so every SSE client
// would be one conversation and one cancel ledger; here each session has
// the ID its endpoint names, its POSTs pass through the ledger like
// Streamable HTTP's, and a stream that ends before the gateway drains (the
// client went away) cancels the session's calls in flight.
func (g *Gateway) serveSSE(w http.ResponseWriter, r *http.Request, sessions *sseSessions, keepAlive time.Duration) {
	switch r.Method {
	case http.MethodPost:
		id := r.URL.Query().Get("sessionid")
		t := sessions.get(id)
		if t == nil {
			http.Error(w, fmt.Sprintf("SSE session %q is not open on this gateway: open one with GET %s", id, SSEPath), http.StatusNotFound)
			return
		}
		if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
			http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
			return
		}
		if _, err := g.cancels.rewriteBody(r, id); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		t.ServeHTTP(w, r)
	case http.MethodGet:
		id := rand.Text()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		stream := &lockedStream{ResponseWriter: w}
		stopKeepAlive := stream.keepAlive(keepAlive)
		defer stopKeepAlive()
		t := &mcp.SSEServerTransport{Endpoint: SSEPath + "?sessionid=" + id, Response: stream, MaxRequestBodyBytes: MaxMessageBytes}
		sessions.put(id, t)
		defer sessions.put(id, nil)
		ss, err := g.server.Connect(r.Context(), sseTransport{SSEServerTransport: t, id: id}, nil)
		if err != nil {
			http.Error(w, "connecting the MCP session: "+err.Error(), http.StatusInternalServerError)
			return
		}
		ended := make(chan struct{})
		go func() { _ = ss.Wait(); close(ended) }()
		select {
		case <-r.Context().Done():
		case <-ended:
		}
		// Before Close, which waits for the handlers in flight: they end
		// once their runs are cancelled.
		if r.Context().Err() != nil && !g.stopping.Load() {
			g.calls.cancelSession(id, reasonStreamClosed)
		}
		ss.Close()
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, fmt.Sprintf("%s %s: the SSE transport takes GET (open a session) and POST (send it a message)", r.Method, SSEPath), http.StatusMethodNotAllowed)
	}
}

// lockedStream is an SSE stream the SDK and the keep-alive both write:
// the SDK writes each event with one Write, so a lock per Write keeps
// events whole.
type lockedStream struct {
	http.ResponseWriter
	mu sync.Mutex
}

func (s *lockedStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ResponseWriter.Write(p)
}

func (s *lockedStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// keepAlive writes an SSE comment every interval, so a proxy that closes
// idle streams (nginx's 60 s read timeout) does not end a session whose
// call waits, for a long tool or an approval. The returned stop waits for
// the writer: nothing may be written once the handler returns.
func (s *lockedStream) keepAlive(interval time.Duration) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if _, err := s.Write([]byte(": keep-alive\n\n")); err != nil {
					return
				}
				s.Flush()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// sseTransport gives an SSE session's connection its ID.
type sseTransport struct {
	*mcp.SSEServerTransport
	id string
}

func (t sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.SSEServerTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return sseConn{Connection: c, id: t.id}, nil
}

type sseConn struct {
	mcp.Connection
	id string
}

func (c sseConn) SessionID() string { return c.id }
