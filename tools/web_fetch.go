package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html/charset"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/tools/internal/htmltext"
	"github.com/fenixrt/fenix/tools/procs"
)

func init() { register(webFetchTool()) }

const userAgent = "Fenix-web_fetch/1.0"

// WebFetchArgs are web_fetch's arguments.
type WebFetchArgs struct {
	URL            string `json:"url" jsonschema:"minLength=1,maxLength=4096,description=http or https URL to GET"`
	MaxBytes       int    `json:"max_bytes,omitempty" jsonschema:"minimum=1,maximum=524288,description=Read at most this many bytes of the body (default 262144)"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=60,description=Give up after this many seconds (default 20)"`
	Raw            bool   `json:"raw,omitempty" jsonschema:"description=Return HTML as-is instead of converting it to readable text"`
}

// WebFetchResult is web_fetch's raw result.
type WebFetchResult struct {
	URL         string          `json:"url"`
	FinalURL    string          `json:"final_url"`
	StatusCode  int             `json:"status_code"`
	Status      string          `json:"status"`
	ContentType string          `json:"content_type"`
	Title       string          `json:"title,omitempty"`
	Content     string          `json:"content"`
	Bytes       int             `json:"bytes"`
	Truncated   bool            `json:"truncated"`
	Binary      bool            `json:"binary,omitempty"`
	Links       []htmltext.Link `json:"links,omitempty"`
}

func webFetchTool() Definition {
	return Define(Spec{
		Name:        "web_fetch",
		Description: "Fetch a web page or document over HTTP(S) and return it as readable text. Private, loopback and link-local destinations are refused.",
		ReadOnly:    true,
		Idempotent:  true,
		Timeout:     90 * time.Second,
	}, fetchURL, projectWebFetch)
}

func fetchURL(ctx context.Context, env *Env, a WebFetchArgs) (WebFetchResult, error) {
	const tool = "web_fetch"
	h, err := requireHost(env, tool)
	if err != nil {
		return WebFetchResult{}, err
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return WebFetchResult{}, fenixerr.Validation("url %q is not an absolute http or https URL", a.URL).WithTool(tool)
	}
	u.Fragment = ""
	maxBytes := a.MaxBytes
	if maxBytes == 0 {
		maxBytes = 256 << 10
	}
	timeout := 20 * time.Second
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return WebFetchResult{}, fenixerr.Validation("url %q: %v", a.URL, err).WithTool(tool)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := h.fetchClient.Do(req)
	if err != nil {
		return WebFetchResult{}, fetchError(tool, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBytes)+1))
	if err != nil {
		return WebFetchResult{}, fetchError(tool, u, err)
	}
	res := WebFetchResult{
		URL:        u.String(),
		FinalURL:   resp.Request.URL.String(),
		StatusCode: resp.StatusCode,
		Status:     resp.Status,
	}
	if len(body) > maxBytes {
		body, res.Truncated = body[:maxBytes], true
	}
	res.Bytes = len(body)
	contentType := resp.Header.Get("Content-Type")
	if contentType == "" {
		contentType = http.DetectContentType(body)
	}
	res.ContentType = contentType
	mediaType, _, _ := mime.ParseMediaType(contentType)
	switch {
	case !isTextual(mediaType) || bytes.IndexByte(body[:min(len(body), binarySniffBytes)], 0) >= 0:
		res.Binary = true
	case (mediaType == "text/html" || mediaType == "application/xhtml+xml") && !a.Raw:
		doc, err := htmltext.Extract(utf8Reader(body, contentType), resp.Request.URL)
		if err != nil {
			return WebFetchResult{}, fenixerr.Runtime("web_fetch could not parse the HTML of %s: %v", res.FinalURL, err).WithTool(tool)
		}
		res.Title, res.Content, res.Links = doc.Title, doc.Text, doc.Links
	default:
		text, _ := io.ReadAll(utf8Reader(body, contentType))
		res.Content = procs.ValidText(text, false)
	}
	if clipped, cut := clipForJSON(res.Content, resultTextBudget); cut {
		res.Content, res.Truncated = clipped, true
	}
	return res, nil
}

// utf8Reader decodes body from the charset its content type or markup
// declares.
func utf8Reader(body []byte, contentType string) io.Reader {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return bytes.NewReader(body)
	}
	return r
}

func isTextual(mediaType string) bool {
	switch {
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/json", mediaType == "application/xml",
		mediaType == "application/xhtml+xml", mediaType == "application/javascript",
		mediaType == "application/x-yaml", mediaType == "application/yaml",
		strings.HasSuffix(mediaType, "+json"), strings.HasSuffix(mediaType, "+xml"):
		return true
	}
	return false
}

func fetchError(tool string, u *url.URL, err error) error {
	var blocked *netguard.BlockedError
	if errors.As(err, &blocked) {
		fe := fenixerr.Validation("web_fetch refused %s: %v", u.Redacted(), blocked).WithTool(tool).WithCode("destination_not_allowed").WithCause(err)
		fe.Class = fenixerr.ClassAuthorization
		return fe
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fenixerr.New(fenixerr.TypeToolTimeout, "web_fetch of %s timed out: %v", u.Redacted(), err).WithTool(tool).WithCause(err)
	}
	if errors.Is(err, context.Canceled) {
		return fenixerr.New(fenixerr.TypeCanceled, "web_fetch of %s was canceled", u.Redacted()).WithTool(tool).WithCause(err)
	}
	return fenixerr.Runtime("web_fetch of %s failed: %v", u.Redacted(), err).WithTool(tool).WithCause(err)
}

func projectWebFetch(_ WebFetchArgs, r WebFetchResult) Projection {
	var b strings.Builder
	fmt.Fprintf(&b, "Fetched %s (%s, %s", r.FinalURL, r.Status, r.ContentType)
	if r.Truncated {
		fmt.Fprintf(&b, ", first %s", byteSize(int64(r.Bytes)))
	}
	b.WriteString(").")
	if r.FinalURL != r.URL {
		fmt.Fprintf(&b, " Redirected from %s.", r.URL)
	}
	switch {
	case r.Binary:
		fmt.Fprintf(&b, "\n\nThe body is %s of binary content and is not shown.", byteSize(int64(r.Bytes)))
	default:
		if r.Title != "" {
			fmt.Fprintf(&b, "\n\nTitle: %s", r.Title)
		}
		if r.Content == "" {
			b.WriteString("\n\n(no text content)")
		} else {
			fmt.Fprintf(&b, "\n\n%s", r.Content)
		}
	}
	return Projection{
		Content: b.String(),
		Metadata: map[string]any{
			"url": r.URL, "final_url": r.FinalURL, "status_code": r.StatusCode,
			"content_type": r.ContentType, "bytes": r.Bytes, "truncated": r.Truncated,
			"title": r.Title, "link_count": len(r.Links),
		},
	}
}
