package confine

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/fenixrt/fenix/netguard"
)

// A Fence keeps the processes of a cgroup from connecting to a few
// endpoints: the Temporal frontend the worker uses (and the dev server's
// HTTP API and Web UI beside it). An agent's command that reaches a
// frontend without client authentication — the dev server `starter demo`
// runs, a server on the worker's host — can send decide_permission for
// its own parked call, or terminate its run. Landlock's network rules
// name ports only, not addresses, and a command has no business with
// those endpoints, so on Linux a cgroup socket-address program refuses
// connect(2) to them (EPERM) for every process the command's cgroup
// holds, whatever its user or domain; the worker, outside those
// cgroups, is not affected. See NewFence (fence_linux.go).

// Endpoint is one refused destination: every address in Prefix on Port
// (netguard's, which refuses the same ones to the worker's own dials on
// the agent's behalf).
type Endpoint = netguard.Endpoint

// fenceDial wraps a network sandbox's dial, which the worker runs for
// the command's proxies outside any cgroup: a destination an allow list
// lets through (localhost) is still refused when it is unreachable. The
// peer is checked once connected, so a name resolved twice cannot
// differ; nothing was sent to it.
func fenceDial(dial netguard.DialFunc, unreachable []Endpoint) netguard.DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		if tcp, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
			if err := netguard.CheckUnreachable(unreachable, address, tcp.AddrPort()); err != nil {
				conn.Close()
				return nil, err
			}
		}
		return conn, nil
	}
}

// loopbacks are the addresses a process on the host reaches a server
// listening on loopback (or on every address) with: besides 127.0.0.0/8
// and ::1, Linux takes a connect(2) to the unspecified address (0.0.0.0,
// ::) as one to the host itself, and recent kernels route all of
// 0.0.0.0/8 there too (0.1.2.3 reaches a server on 0.0.0.0).
var loopbacks = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("::/128"),
}

// EndpointsOf are the destinations through which a command on this host
// reaches the server at hostPort ("host:port"): the host's addresses on
// that port; where one of them is this host's (loopback, a wildcard or
// an interface's address), every loopback and interface address, since a
// server that listens on one of them or on all is reached through each,
// on that port and on every other TCP port the processes listening on it
// listen on (as they were when it was called).
// "*:port" is that port at every address.
func EndpointsOf(ctx context.Context, hostPort string) ([]Endpoint, error) {
	host, port, err := ParseEndpoint(hostPort)
	if err != nil {
		return nil, err
	}
	if host == "*" {
		return []Endpoint{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: port}, {Prefix: netip.MustParsePrefix("::/0"), Port: port}}, nil
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("endpoint %q: resolving %s: %w", hostPort, host, err)
		}
		addrs = ips
	}
	own := hostAddresses()
	local := false
	for _, a := range addrs {
		a = a.Unmap()
		if a.IsLoopback() || a.IsUnspecified() || slices.Contains(own, a) {
			local = true
		}
	}
	var out []Endpoint
	add := func(p netip.Prefix, port uint16) {
		e := Endpoint{Prefix: p.Masked(), Port: port}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	ports := []uint16{port}
	if local {
		// A local server's other ports serve it too: the dev server's
		// HTTP API (on a random port unless told one), its Web UI, and its
		// history and matching services, none of which asks who calls.
		for _, p := range siblingPorts(port) {
			if !slices.Contains(ports, p) {
				ports = append(ports, p)
			}
		}
	}
	for _, port := range ports {
		if local {
			for _, p := range loopbacks {
				add(p, port)
			}
			for _, a := range own {
				add(netip.PrefixFrom(a, a.BitLen()), port)
			}
		}
		for _, a := range addrs {
			if a = a.Unmap(); !a.IsUnspecified() {
				add(netip.PrefixFrom(a, a.BitLen()), port)
			}
		}
	}
	return out, nil
}

// ParseEndpoint splits "host:port" (or a gRPC target, dns:///host:port);
// an empty host is localhost.
func ParseEndpoint(hostPort string) (host string, port uint16, err error) {
	address := strings.TrimSpace(hostPort)
	if _, rest, ok := strings.Cut(address, ":///"); ok {
		address = rest
	}
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, fmt.Errorf("endpoint %q is not host:port: %w", hostPort, err)
	}
	n, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("endpoint %q: %q is not a TCP port", hostPort, portText)
	}
	if host == "" {
		host = "localhost"
	}
	return host, uint16(n), nil
}

// hostAddresses are the addresses of this host's interfaces, in order.
func hostAddresses() []netip.Addr {
	var own []netip.Addr
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && !slices.Contains(own, ip.Unmap()) {
				own = append(own, ip.Unmap())
			}
		}
	}
	slices.SortFunc(own, netip.Addr.Compare)
	return own
}
