package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DomainList decides by host name, as Claude Code's sandbox.network does
// for the commands it sandboxes: a destination on Denied is refused, one
// on Allowed is reached, and every other one is refused (Claude Code asks
// its user; a run has nobody to ask).
type DomainList struct {
	Allowed, Denied []DomainPattern
	// Setting names where the lists come from, for refusals.
	Setting string
}

// DomainPattern is one entry of a DomainList: "example.com" is that host
// only, "*.example.com" its subdomains (not example.com itself), "*" every
// host (deny lists only); an IP address matches only itself. Port 0
// matches every port.
type DomainPattern struct {
	Host string
	Port int
}

func (p DomainPattern) String() string {
	if p.Port == 0 {
		return p.Host
	}
	if strings.Contains(p.Host, ":") {
		return "[" + p.Host + "]:" + strconv.Itoa(p.Port)
	}
	return p.Host + ":" + strconv.Itoa(p.Port)
}

// ParseDomainPattern reads an entry: a host name, "*.domain" with at
// least two labels after the wildcard, an IPv4 address or a bracketed
// IPv6 one, each with an optional ":port". "*" is accepted when denyList
// is set. Anything broader or with a scheme or path is refused.
func ParseDomainPattern(entry string, denyList bool) (DomainPattern, error) {
	text := strings.ToLower(strings.TrimSpace(entry))
	host, port := text, 0
	if strings.HasPrefix(text, "[") {
		end := strings.IndexByte(text, ']')
		if end < 0 {
			return DomainPattern{}, fmt.Errorf("domain %q: unclosed [", entry)
		}
		host = text[1:end]
		rest := text[end+1:]
		if rest != "" {
			p, ok := parsePort(strings.TrimPrefix(rest, ":"))
			if !ok || !strings.HasPrefix(rest, ":") {
				return DomainPattern{}, fmt.Errorf("domain %q: %q after the address is not a :port", entry, rest)
			}
			port = p
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || !addr.Is6() {
			return DomainPattern{}, fmt.Errorf("domain %q: brackets hold an IPv6 address", entry)
		}
		return DomainPattern{Host: addr.String(), Port: port}, nil
	}
	if strings.Count(text, ":") > 1 {
		return DomainPattern{}, fmt.Errorf("domain %q: write an IPv6 address in brackets, [addr] or [addr]:port", entry)
	}
	if h, p, found := strings.Cut(text, ":"); found {
		n, ok := parsePort(p)
		if !ok {
			return DomainPattern{}, fmt.Errorf("domain %q: port %q is not a number from 1 to 65535", entry, p)
		}
		host, port = h, n
	}
	switch {
	case host == "*":
		if !denyList {
			return DomainPattern{}, fmt.Errorf("domain %q: \"*\" allows every host; list the hosts instead", entry)
		}
		return DomainPattern{Host: host, Port: port}, nil
	case strings.Contains(host, "/"):
		return DomainPattern{}, fmt.Errorf("domain %q: name a host, without a scheme or a path", entry)
	case host == "localhost":
		return DomainPattern{Host: host, Port: port}, nil
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return DomainPattern{Host: addr.String(), Port: port}, nil
	}
	name := strings.TrimPrefix(host, "*.")
	labels := strings.Split(name, ".")
	if strings.Contains(name, "*") || len(labels) < 2 {
		return DomainPattern{}, fmt.Errorf("domain %q: use a host (example.com) or a wildcard over a domain (*.example.com); broader patterns are refused", entry)
	}
	for _, l := range labels {
		if l == "" || strings.ContainsAny(l, " \t%@?#\\") {
			return DomainPattern{}, fmt.Errorf("domain %q is not a host name", entry)
		}
	}
	return DomainPattern{Host: host, Port: port}, nil
}

func parsePort(s string) (int, bool) {
	if s == "" || s[0] == '0' || len(s) > 5 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1 && n <= 65535
}

// Matches reports whether host (a name or an address) and port fall under
// the pattern.
func (p DomainPattern) Matches(host string, port int) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	host = canonicalHost(host)
	if p.Host == "*" {
		return true
	}
	if suffix, ok := strings.CutPrefix(p.Host, "*."); ok {
		// A wildcard never matches an address: "::ffff:1.2.3.4%x.allowed.com"
		// must not pass as a subdomain.
		if _, err := netip.ParseAddr(host); err == nil {
			return false
		}
		return strings.HasSuffix(host, "."+suffix)
	}
	return host == p.Host
}

// canonicalHost lowercases a host, drops a trailing dot and brackets, and
// writes an address in its canonical form.
func canonicalHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr.Unmap().String()
	}
	return host
}

// RefusedError is a destination a DomainList does not let through.
type RefusedError struct {
	Host    string
	Port    int
	Denied  bool
	Setting string
	// Asked is the answer of the command's Asker, when one was asked.
	Asked string
}

func (e *RefusedError) Error() string {
	dest := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	if e.Denied {
		return fmt.Sprintf("%s is on the denied domains of %s", dest, e.Setting)
	}
	if e.Asked != "" {
		return fmt.Sprintf("%s is not on the allowed domains of %s, and the connection was not allowed: %s", dest, e.Setting, e.Asked)
	}
	return fmt.Sprintf("%s is not on the allowed domains of %s: add it there if commands must reach it", dest, e.Setting)
}

// Is makes every RefusedError match ErrBlocked.
func (e *RefusedError) Is(target error) bool { return target == ErrBlocked }

// Decide returns a *RefusedError unless host:port may be reached.
func (l DomainList) Decide(host string, port int) error {
	host = canonicalHost(host)
	for _, p := range l.Denied {
		if p.Matches(host, port) {
			return &RefusedError{Host: host, Port: port, Denied: true, Setting: l.Setting}
		}
	}
	for _, p := range l.Allowed {
		if p.Matches(host, port) {
			return nil
		}
	}
	return &RefusedError{Host: host, Port: port, Setting: l.Setting}
}

// DialContext returns a dial function that decides on the address's host
// before dialing it with base.
func (l DomainList) DialContext(base *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, portText, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			return nil, fmt.Errorf("dialing %s: port %q is not a number", address, portText)
		}
		err = l.Decide(host, port)
		var refused *RefusedError
		if errors.As(err, &refused) && !refused.Denied {
			if ask := AskerFrom(ctx); ask != nil {
				// A person answers: the proxy's dial timeout is for the
				// dial, not for them (the Asker bounds its own wait).
				allowed, why := ask(context.WithoutCancel(ctx), refused.Host, port)
				if !allowed {
					refused.Asked = why
					return nil, refused
				}
				dialCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProxyDialTimeout)
				defer cancel()
				return base.DialContext(dialCtx, network, address)
			}
		}
		if err != nil {
			return nil, err
		}
		return base.DialContext(ctx, network, address)
	}
}

// String lists the allowed and denied patterns.
func (l DomainList) String() string {
	join := func(ps []DomainPattern) string {
		if len(ps) == 0 {
			return "none"
		}
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.String()
		}
		return strings.Join(out, ", ")
	}
	return "allowed " + join(l.Allowed) + "; denied " + join(l.Denied)
}
