package claudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/netguard"
)

// HTTPPolicy is the outbound rule for http hooks, the same kind of rule
// web_fetch follows: loopback, private, link-local and other special
// addresses are refused at dial time unless Net allows them, redirects are
// not followed (the event JSON goes to the URL the settings name, nowhere
// else), and when AllowedURLs is set (Claude Code's allowedHttpHookUrls)
// the URL must match one of its patterns ("*" matches any run of
// characters).
type HTTPPolicy struct {
	Net         netguard.Policy
	AllowedURLs []string
}

// allowsURL applies AllowedURLs to a normalized URL (see normalizeURL), so
// "/allowed/../deny" is matched as the "/deny" it reaches.
func (p HTTPPolicy) allowsURL(u string) bool {
	if len(p.AllowedURLs) == 0 {
		return true
	}
	for _, pattern := range p.AllowedURLs {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
		if ok, _ := regexp.MatchString(re, u); ok {
			return true
		}
	}
	return false
}

// URLNotAllowedError is an http hook whose URL matches no pattern of
// allowedHttpHookUrls. The loader skips such a hook with a warning, as
// Claude Code does; it does not stop the worker.
type URLNotAllowedError struct {
	URL        string
	Normalized string
	Allowed    []string
}

func (e *URLNotAllowedError) Error() string {
	if e.Normalized != e.URL {
		return fmt.Sprintf("url %q (normalized %q) is not allowed by allowedHttpHookUrls %v", e.URL, e.Normalized, e.Allowed)
	}
	return fmt.Sprintf("url %q is not allowed by allowedHttpHookUrls %v", e.URL, e.Allowed)
}

// normalizeURL is the URL an http hook is matched against and POSTed to:
// scheme and host lower-cased, the default port dropped, dot segments
// resolved (percent-encoded ones too: the path is cleaned after decoding),
// no fragment. It refuses what is not an absolute http or https URL, and
// user information, which would be sent in the clear on every event.
func normalizeURL(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("url %q is not an http or https URL", rawURL)
	}
	if u.User != nil {
		return "", fmt.Errorf("url %q carries user information; put credentials in headers with allowedEnvVars", rawURL)
	}
	u.Host = strings.ToLower(u.Host)
	if port := u.Port(); (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		u.Host = strings.TrimSuffix(u.Host, ":"+port)
	}
	if u.Path != "" {
		clean := path.Clean("/" + u.Path)
		if strings.HasSuffix(u.Path, "/") && clean != "/" {
			clean += "/"
		}
		u.Path, u.RawPath = clean, ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// maxHTTPResponse caps an http hook's response body.
const maxHTTPResponse = 1 << 20

// httpTransport POSTs the event JSON to a URL.
type httpTransport struct {
	url            string
	headers        map[string]string
	allowedEnvVars []string
	client         *http.Client
}

func newHTTPTransport(rawURL string, headers map[string]string, allowedEnvVars []string, policy HTTPPolicy) (*httpTransport, error) {
	normalized, err := normalizeURL(rawURL)
	if err != nil {
		return nil, err
	}
	if !policy.allowsURL(normalized) {
		return nil, &URLNotAllowedError{URL: rawURL, Normalized: normalized, Allowed: policy.AllowedURLs}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	client := &http.Client{
		Transport: &http.Transport{
			DialContext:           policy.Net.DialContext(dialer),
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 0, // the hook's own timeout bounds the call
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("http hook redirected to %s: redirects are not followed", req.URL.Redacted())
		},
	}
	return &httpTransport{url: normalized, headers: headers, allowedEnvVars: allowedEnvVars, client: client}, nil
}

func (t *httpTransport) kind() string     { return "http" }
func (t *httpTransport) describe() string { return t.url }
func (t *httpTransport) identity() string { return "http\x00" + t.url }

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// headerValue interpolates environment variables into a header value; only
// variables in allowedEnvVars resolve, others become empty strings, as in
// Claude Code.
func (t *httpTransport) headerValue(v string) string {
	return envRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(ref, "$"), "{"), "}")
		for _, allowed := range t.allowedEnvVars {
			if allowed == name {
				return os.Getenv(name)
			}
		}
		return ""
	})
}

func (t *httpTransport) call(ctx context.Context, _ *ExternalHook, _ hooks.Session, payload []byte) (outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(payload))
	if err != nil {
		return outcome{}, fmt.Errorf("http hook %s: %w", t.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, k := range sortedKeys(t.headers) {
		req.Header.Set(k, t.headerValue(t.headers[k]))
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		var blocked *netguard.BlockedError
		if errors.As(err, &blocked) {
			return outcome{}, fmt.Errorf("http hook %s: %w", t.url, blocked)
		}
		return outcome{}, fmt.Errorf("http hook %s: %w", t.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, ctx.Err()
		}
		return outcome{}, fmt.Errorf("http hook %s: reading the response: %w", t.url, err)
	}
	if len(body) > maxHTTPResponse {
		return outcome{}, fmt.Errorf("http hook %s: response body is over %d bytes", t.url, maxHTTPResponse)
	}
	return outcome{httpStatus: resp.StatusCode, stdout: body}, nil
}
