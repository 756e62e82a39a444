// Package netguard keeps tools' outbound HTTP away from the worker's own
// network. Loopback, private, link-local (cloud metadata), multicast,
// unspecified and other special-purpose addresses are refused when the
// connection is made, after DNS resolution, so neither DNS rebinding nor a
// redirect can reach them. A Policy's allowlist of CIDRs and host names
// opens exceptions.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Policy lists the exceptions to the default block.
type Policy struct {
	// AllowCIDRs are address ranges that may be reached even though they
	// are special-purpose (for example 127.0.0.1/32 for a local test server).
	AllowCIDRs []netip.Prefix
	// AllowHosts are host names that may resolve to any address: an exact
	// name ("intranet.example") or a suffix wildcard ("*.corp.example").
	AllowHosts []string
	// Setting names the setting that opens exceptions, for error messages
	// (default FENIX_FETCH_ALLOW).
	Setting string
	// Unreachable are refused even when allowed: the Temporal frontend
	// and the other endpoints no command may connect to
	// (FENIX_COMMAND_UNREACHABLE). An agent whose browser may reach
	// loopback (a local dev server to test) must not POST its own
	// approval to the dev server's HTTP API from a page.
	Unreachable []Endpoint
}

// Endpoint is every address in Prefix on Port.
type Endpoint struct {
	Prefix netip.Prefix
	Port   uint16
}

func (e Endpoint) String() string {
	if e.Prefix.IsSingleIP() {
		return netip.AddrPortFrom(e.Prefix.Addr(), e.Port).String()
	}
	return fmt.Sprintf("%s port %d", e.Prefix, e.Port)
}

// Holds reports whether dest is one of e's.
func (e Endpoint) Holds(dest netip.AddrPort) bool {
	return dest.Port() == e.Port && e.Prefix.Contains(dest.Addr().Unmap())
}

// CheckUnreachable returns a *BlockedError naming
// FENIX_COMMAND_UNREACHABLE when dest (dialled as host) is one of
// unreachable's.
func CheckUnreachable(unreachable []Endpoint, host string, dest netip.AddrPort) error {
	for _, e := range unreachable {
		if e.Holds(dest) {
			return &BlockedError{Host: host, Addr: dest.Addr().Unmap(), Reason: "the Temporal frontend or another endpoint of FENIX_COMMAND_UNREACHABLE (" + e.String() + ")",
				Setting: "FENIX_COMMAND_UNREACHABLE", Unreachable: true}
		}
	}
	return nil
}

// ParsePolicy reads a comma- or space-separated list of CIDRs, single IP
// addresses and host names, as in FENIX_FETCH_ALLOW.
func ParsePolicy(list string) (Policy, error) {
	var p Policy
	for _, item := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		if prefix, err := netip.ParsePrefix(item); err == nil {
			p.AllowCIDRs = append(p.AllowCIDRs, prefix.Masked())
			continue
		}
		if addr, err := netip.ParseAddr(item); err == nil {
			addr = addr.Unmap()
			p.AllowCIDRs = append(p.AllowCIDRs, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		name := strings.ToLower(strings.TrimSuffix(item, "."))
		bare := strings.TrimPrefix(name, "*.")
		if bare == "" || strings.ContainsAny(bare, "/:*[]") {
			return Policy{}, fmt.Errorf("fetch allowlist entry %q is neither a CIDR, an IP address nor a host name", item)
		}
		p.AllowHosts = append(p.AllowHosts, name)
	}
	return p, nil
}

// AllowsHost reports whether host is on the host allowlist.
func (p Policy) AllowsHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range p.AllowHosts {
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// BlockedError says which destination was refused and why.
type BlockedError struct {
	Host   string
	Addr   netip.Addr
	Reason string
	// Setting is the allowlist setting that would let it through.
	Setting string
	// Unreachable is set when no allowlist lets it through: it is one of
	// Policy.Unreachable's, and Setting is the one that names them.
	Unreachable bool
}

func (e *BlockedError) Error() string {
	dest := e.Addr.String()
	if e.Host != "" && e.Host != dest {
		dest = fmt.Sprintf("%s (%s)", e.Host, dest)
	}
	if e.Unreachable {
		return fmt.Sprintf("destination %s is %s, which no agent may reach, whatever an allowlist opens (%s)", dest, e.Reason, e.Setting)
	}
	setting := e.Setting
	if setting == "" {
		setting = "FENIX_FETCH_ALLOW"
	}
	return fmt.Sprintf("destination %s is %s, which may not be reached: add it to the allowlist (%s) if it must be reachable", dest, e.Reason, setting)
}

// ErrBlocked matches every *BlockedError with errors.Is.
var ErrBlocked = errors.New("destination blocked")

func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

type special struct {
	prefix netip.Prefix
	reason string
}

// specialRanges are refused besides what netip's predicates catch.
var specialRanges = func() []special {
	var out []special
	for _, s := range []struct{ cidr, reason string }{
		{"0.0.0.0/8", "in \"this network\" (0.0.0.0/8)"},
		{"100.64.0.0/10", "in shared address space (carrier-grade NAT)"},
		{"192.0.0.0/24", "an IETF protocol assignment"},
		{"192.0.2.0/24", "a documentation address"},
		{"198.18.0.0/15", "a benchmarking address"},
		{"198.51.100.0/24", "a documentation address"},
		{"203.0.113.0/24", "a documentation address"},
		{"240.0.0.0/4", "reserved"},
		{"100::/64", "a discard-only address"},
		{"2001:db8::/32", "a documentation address"},
		{"fec0::/10", "site-local"},
	} {
		out = append(out, special{netip.MustParsePrefix(s.cidr), s.reason})
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// blockReason says why addr is special-purpose, or "" for a public address.
func blockReason(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case !addr.IsValid():
		return "not a valid address"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local (cloud metadata services live here)"
	case addr.IsMulticast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast"
	case addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, s := range specialRanges {
		if s.prefix.Contains(addr) {
			return s.reason
		}
	}
	// IPv6 forms that carry an IPv4 address are judged by that address.
	if addr.Is6() {
		b := addr.As16()
		var embedded netip.Addr
		switch {
		case nat64.Contains(addr):
			embedded = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFour.Contains(addr):
			embedded = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		}
		if embedded.IsValid() {
			if r := blockReason(embedded); r != "" {
				return r + " (embedded in " + addr.String() + ")"
			}
		}
	}
	return ""
}

// Check returns a *BlockedError when addr may not be reached.
func (p Policy) Check(host string, addr netip.Addr) error {
	addr = addr.Unmap()
	for _, allowed := range p.AllowCIDRs {
		if allowed.Contains(addr) {
			return nil
		}
	}
	if r := blockReason(addr); r != "" {
		return &BlockedError{Host: host, Addr: addr, Reason: r, Setting: p.Setting}
	}
	return nil
}

// DialContext returns a dial function that checks every address it
// connects to, after resolution. Hosts on the allowlist skip the check.
func (p Policy) DialContext(base *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		d := *base
		allowedHost := p.AllowsHost(host)
		if !allowedHost || len(p.Unreachable) > 0 {
			d.Control = func(_, resolved string, _ syscall.RawConn) error {
				dest, err := netip.ParseAddrPort(resolved)
				if err != nil {
					return fmt.Errorf("dialing %s: unparseable address %q", host, resolved)
				}
				if err := CheckUnreachable(p.Unreachable, host, dest); err != nil {
					return err
				}
				if allowedHost {
					return nil
				}
				return p.Check(host, dest.Addr())
			}
		}
		return d.DialContext(ctx, network, address)
	}
}

// ClientOptions tune NewClient.
type ClientOptions struct {
	// Timeout bounds a whole request, redirects and body included
	// (default 30s).
	Timeout time.Duration
	// MaxRedirects (default 5).
	MaxRedirects int
}

// NewClient returns an HTTP client whose every connection, redirects
// included, goes through the policy. Environment proxies are ignored: a
// proxy would hide the real destination from the check.
func NewClient(p Policy, opts ClientOptions) *http.Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxRedirects <= 0 {
		opts.MaxRedirects = 5
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            p.DialContext(dialer),
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Timeout:   opts.Timeout,
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= opts.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects (last to %s)", len(via), req.URL.Redacted())
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s uses scheme %q: only http and https are followed", req.URL.Redacted(), req.URL.Scheme)
			}
			return nil
		},
	}
}

// IsLoopbackHost says whether host (a name or an IP, bracketed or not)
// is this machine's loopback: "localhost", 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
