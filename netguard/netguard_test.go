package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestBlockReason(t *testing.T) {
	tests := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1", true},
		{"127.255.0.9", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"192.168.1.1", true},
		{"fd00::1", true},
		{"169.254.169.254", true},
		{"fe80::1", true},
		{"224.0.0.1", true},
		{"ff02::1", true},
		{"100.64.0.1", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"2002:7f00:1::", true},      // 6to4 of 127.0.0.1
		{"93.184.216.34", false},
		{"8.8.8.8", false},
		{"2606:4700::1111", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := Policy{}.Check("", netip.MustParseAddr(tt.addr))
			if (err != nil) != tt.blocked {
				t.Errorf("Check(%s) = %v, want blocked=%v", tt.addr, err, tt.blocked)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy("127.0.0.1, 10.0.0.0/8 intranet.example,*.corp.example")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		addr    string
		allowed bool
	}{{"127.0.0.1", true}, {"127.0.0.2", false}, {"10.9.9.9", true}, {"192.168.0.1", false}}
	for _, c := range checks {
		if got := p.Check("", netip.MustParseAddr(c.addr)) == nil; got != c.allowed {
			t.Errorf("allowed(%s) = %v, want %v", c.addr, got, c.allowed)
		}
	}
	hosts := []struct {
		host    string
		allowed bool
	}{{"intranet.example", true}, {"INTRANET.example.", true}, {"a.corp.example", true}, {"corp.example", false}, {"evilintranet.example", false}}
	for _, h := range hosts {
		if got := p.AllowsHost(h.host); got != h.allowed {
			t.Errorf("AllowsHost(%s) = %v, want %v", h.host, got, h.allowed)
		}
	}
	if _, err := ParsePolicy("http://x/"); err == nil {
		t.Error("ParsePolicy accepted a URL")
	}
}

func TestClientRefusesLoopbackAtDialTime(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))

	for _, url := range []string{srv.URL, "http://localhost:" + port, "http://[::1]:" + port} {
		_, err := NewClient(Policy{}, ClientOptions{}).Get(url)
		if !errors.Is(err, ErrBlocked) {
			t.Errorf("GET %s: err = %v, want ErrBlocked", url, err)
		}
	}
	allowed := Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	resp, err := NewClient(allowed, ClientOptions{}).Get(srv.URL)
	if err != nil {
		t.Fatalf("allowlisted GET: %v", err)
	}
	resp.Body.Close()

	byName := Policy{AllowHosts: []string{"localhost"}}
	d := byName.DialContext(&net.Dialer{})
	conn, err := d(context.Background(), "tcp", "localhost:"+port)
	if err != nil {
		t.Fatalf("allowlisted host name: %v", err)
	}
	conn.Close()
}

// An allow list that opens loopback (a local app to test) does not open
// the endpoints no agent may reach, by address or by an allowed name;
// another port there stays open.
func TestUnreachableEndpointsStayShutWhenAllowed(t *testing.T) {
	frontend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("frontend")) }))
	defer frontend.Close()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("app")) }))
	defer app.Close()
	port := frontend.Listener.Addr().(*net.TCPAddr).Port
	p := Policy{
		AllowCIDRs:  []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		AllowHosts:  []string{"localhost"},
		Unreachable: []Endpoint{{Prefix: netip.MustParsePrefix("127.0.0.0/8"), Port: uint16(port)}, {Prefix: netip.MustParsePrefix("::1/128"), Port: uint16(port)}},
	}
	client := NewClient(p, ClientOptions{})
	for _, url := range []string{frontend.URL, fmt.Sprintf("http://localhost:%d/", port)} {
		_, err := client.Post(url, "application/json", strings.NewReader(`{"decision": "allow"}`))
		if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "FENIX_COMMAND_UNREACHABLE") {
			t.Errorf("POST %s: err = %v, want it blocked naming FENIX_COMMAND_UNREACHABLE", url, err)
		}
	}
	resp, err := client.Get(app.URL)
	if err != nil {
		t.Fatalf("the allowed app: %v", err)
	}
	resp.Body.Close()
}
