package browser

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/fenixrt/fenix/netguard"
)

// Guard decides which URLs a browser session may load: the same outbound
// policy as web_fetch (no loopback, private, link-local or other
// special-purpose addresses unless the allowlist opens them), and only
// http and https for anything that goes over the network.
type Guard struct {
	Policy netguard.Policy
	// Resolver looks host names up; net.DefaultResolver when nil.
	Resolver HostResolver
}

// HostResolver looks a host name up (*net.Resolver is one).
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// BlockedError says why a URL may not be loaded.
type BlockedError struct {
	URL    string
	Reason string
	// Net is the address-policy refusal, when that is the reason.
	Net *netguard.BlockedError
}

func (e *BlockedError) Error() string { return fmt.Sprintf("%s: %s", e.URL, e.Reason) }

func (e *BlockedError) Unwrap() error {
	if e.Net != nil {
		return e.Net
	}
	return nil
}

// CheckNavigation checks a URL a caller asked to open: it must be an
// absolute http or https URL whose host may be reached.
func (g Guard) CheckNavigation(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		scheme := ""
		if u != nil {
			scheme = u.Scheme
		}
		reason := "only absolute http and https URLs may be opened"
		if scheme != "" && scheme != "http" && scheme != "https" {
			reason = fmt.Sprintf("scheme %q may not be opened: only http and https", scheme)
		}
		return nil, &BlockedError{URL: raw, Reason: reason}
	}
	return u, g.CheckRequest(ctx, u.String())
}

// CheckRequest checks one request the page makes (a navigation, a
// redirect hop or a subresource). URLs that never leave the browser
// (data:, blob:, about:blank) pass; file:, chrome: and every other scheme
// that would reach the host are refused.
func (g Guard) CheckRequest(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &BlockedError{URL: raw, Reason: "not a parseable URL"}
	}
	switch u.Scheme {
	case "data", "blob":
		return nil
	case "about":
		if u.Opaque == "blank" || u.Opaque == "srcdoc" {
			return nil
		}
		return &BlockedError{URL: raw, Reason: "only about:blank may be opened"}
	case "http", "https", "ws", "wss":
	default:
		return &BlockedError{URL: redacted(u), Reason: fmt.Sprintf("scheme %q may not be loaded: only http and https", u.Scheme)}
	}
	host := u.Hostname()
	if host == "" {
		return &BlockedError{URL: redacted(u), Reason: "the URL has no host"}
	}
	if g.Policy.AllowsHost(host) {
		return nil
	}
	if addr, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return g.checkAddr(u, host, addr)
	}
	var resolver HostResolver = net.DefaultResolver
	if g.Resolver != nil {
		resolver = g.Resolver
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return &BlockedError{URL: redacted(u), Reason: fmt.Sprintf("host %s does not resolve: %v", host, err)}
	}
	// Every address must pass: the browser may connect to any of them.
	for _, addr := range addrs {
		if err := g.checkAddr(u, host, addr); err != nil {
			return err
		}
	}
	return nil
}

func (g Guard) checkAddr(u *url.URL, host string, addr netip.Addr) error {
	if err := g.Policy.Check(host, addr); err != nil {
		nb, _ := err.(*netguard.BlockedError)
		return &BlockedError{URL: redacted(u), Reason: err.Error(), Net: nb}
	}
	return nil
}

func redacted(u *url.URL) string { return u.Redacted() }
