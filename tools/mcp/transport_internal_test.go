package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os/exec"
	"sync/atomic"
	"time"

	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/confine"
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
	if err == nil || !strings.Contains(err.Error(), "not its url's") {
		t.Fatalf("redirect to %s: err = %v, want it refused for leaving the server's origin", other, err)
	}

	// Another port of the same host is another origin; the https origin of
	// an http url's host is its own (a server that upgrades to https).
	named, err := httpClient(ServerConfig{URL: "http://mcp.example:8080/mcp", Path: "p/.mcp.json"}, netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for target, refused := range map[string]bool{
		"http://mcp.example:8081/mcp":  true,
		"https://other.example/mcp":    true,
		"https://mcp.example:8443/mcp": true,
		"https://MCP.example/mcp":      false,
	} {
		_, err = named.Get(target)
		if got := err != nil && strings.Contains(err.Error(), "not its url's"); got != refused {
			t.Errorf("%s: err = %v, want refused %v", target, err, refused)
		}
	}
}

// An SSE server's first event names where messages are posted. One on
// another origin is refused before anything is sent there, so the
// configured token never leaves the server it was written for.
func TestSSEMessageEndpointStaysOnTheServersOrigin(t *testing.T) {
	var foreignHits atomic.Int32
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		foreignHits.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer foreign.Close()
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionId=1\n\n", foreign.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer sse.Close()
	cfg := ServerConfig{Name: "hosted", Type: TransportSSE, URL: sse.URL + "/sse", Headers: map[string]string{"Authorization": "Bearer s3cret"}, Path: "p/.mcp.json"}
	// The foreign server is loopback too: admit it, so only the origin
	// rule can refuse it.
	client, err := httpClient(cfg, netguard.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	session, err := c.Connect(ctx, &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}, nil)
	if err == nil {
		session.Close()
		t.Fatal("initialize went through a message endpoint on another origin")
	}
	if n := foreignHits.Load(); n != 0 {
		t.Errorf("the foreign origin got %d requests", n)
	}
	// Which error initialize reports races with the stream's end; the
	// refusal itself names the server and the origins.
	_, err = client.Post(foreign.URL+"/message?sessionId=1", "application/json", strings.NewReader("{}"))
	if err == nil || !strings.Contains(err.Error(), `MCP server "hosted"`) || !strings.Contains(err.Error(), "not its url's") {
		t.Errorf("err = %v, want the origin refusal naming the server", err)
	}
	if n := foreignHits.Load(); n != 0 {
		t.Errorf("the foreign origin got %d requests", n)
	}
}

// A headersHelper that hangs, leaving a child behind that holds its
// stdout, is ended at its timeout with what it started.
func TestAHangingHeadersHelperIsEnded(t *testing.T) {
	saved := helperTimeout
	helperTimeout = 300 * time.Millisecond
	t.Cleanup(func() { helperTimeout = saved })
	m := &Manager{}
	s := &server{m: m, cfg: ServerConfig{Name: "gw", Key: "gw", Type: TransportHTTP, URL: "http://127.0.0.1:1/mcp", Dir: t.TempDir(), HeadersHelper: "sleep 30 & sleep 30"}}
	start := time.Now()
	_, err := s.helperHeaders(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s to give up", took)
	}
}

// A server's stderr is kept by its start and its tail: a Node server's
// first line ("Error: EACCES: permission denied, mkdir …") came before
// a stack longer than the tail, and the report lost it. A confined
// server whose stderr reports a refused write is told why it may be.
func TestStderrKeepsTheFirstLineAndSaysWhyAWriteWasRefused(t *testing.T) {
	b := &tailBuffer{max: 1024}
	first := "Error: EACCES: permission denied, mkdir '/root/.claude-server-commander'\n"
	fmt.Fprint(b, first)
	for i := range 200 {
		fmt.Fprintf(b, "    at frame%d (node:internal/fs:%d)\n", i, i)
	}
	got := b.String()
	if !strings.HasPrefix(got, first) || !strings.Contains(got, " … ") || !strings.HasSuffix(got, "(node:internal/fs:199)\n") {
		t.Errorf("stderr = %q, want its first line, a gap and its last lines", got)
	}
	confined := &process{stderr: b, launcher: refusingLauncher{}}
	if note := confined.stderrNote(); !strings.Contains(note, "give it a directory of its own") {
		t.Errorf("a confined server's refused write: %q", note)
	}
	if note := (&process{stderr: b}).stderrNote(); strings.Contains(note, "confined") {
		t.Errorf("an unconfined server's refused write: %q", note)
	}
}

// refusingLauncher stands for a confiner; nothing is started through it.
type refusingLauncher struct{}

func (refusingLauncher) StartCommand(*exec.Cmd, confine.CommandOptions) (func(), error) {
	return nil, errors.New("not started")
}
