package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

func TestWebFetch(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Fenix  Docs</title><style>p{}</style></head>
<body><script>alert(1)</script><h1>Welcome</h1><p>Durable <b>agents</b>.</p>
<ul><li>One</li><li>Two</li></ul><a href="/next">Next page</a></body></html>`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		w.Write([]byte("caf\xe9"))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("a", 100))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/long", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := newRig(t, withLocalFetch())

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"html becomes readable text", map[string]any{"url": srv.URL + "/page"},
			"Fetched " + srv.URL + "/page (200 OK, text/html; charset=utf-8).\n\nTitle: Fenix Docs\n\nWelcome\n\nDurable agents.\n\n- One\n- Two\n\nNext page"},
		{"charset is decoded", map[string]any{"url": srv.URL + "/latin1"},
			"Fetched " + srv.URL + "/latin1 (200 OK, text/plain; charset=iso-8859-1).\n\ncafé"},
		{"error status is a result", map[string]any{"url": srv.URL + "/missing"},
			"Fetched " + srv.URL + "/missing (404 Not Found, text/plain; charset=utf-8).\n\nno such page\n"},
		{"binary is not shown", map[string]any{"url": srv.URL + "/image"},
			"Fetched " + srv.URL + "/image (200 OK, image/png).\n\nThe body is 10 B of binary content and is not shown."},
		{"truncated", map[string]any{"url": srv.URL + "/long", "max_bytes": 10},
			"Fetched " + srv.URL + "/long (200 OK, text/plain, first 10 B).\n\naaaaaaaaaa"},
		{"redirect followed", map[string]any{"url": srv.URL + "/redirect", "max_bytes": 3},
			"Fetched " + srv.URL + "/long (200 OK, text/plain, first 3 B). Redirected from " + srv.URL + "/redirect.\n\naaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := r.mustCall(t, "web_fetch", tt.args)
			if p.Content != tt.want {
				t.Errorf("content =\n%q\nwant\n%q", p.Content, tt.want)
			}
		})
	}
	t.Run("links are resolved", func(t *testing.T) {
		_, raw := r.mustCall(t, "web_fetch", map[string]any{"url": srv.URL + "/page"})
		res := decode[WebFetchResult](t, raw)
		if len(res.Links) != 1 || res.Links[0].URL != srv.URL+"/next" || res.Links[0].Text != "Next page" {
			t.Errorf("links = %+v", res.Links)
		}
	})
	t.Run("non-http scheme", func(t *testing.T) {
		_, _, err := r.call(t, "web_fetch", map[string]any{"url": "file:///etc/passwd"})
		errorIs(t, err, fenixerr.ErrValidation, "")
	})
}

func TestWebSearch(t *testing.T) {
	var gotQuery, gotFormat string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/searx/search" {
			http.NotFound(w, r)
			return
		}
		gotQuery, gotFormat = r.URL.Query().Get("q"), r.URL.Query().Get("format")
		if gotQuery == "broken" {
			http.Error(w, "format not allowed", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"results":[
			{"title":"Fenix","url":"https://example.test/fenix","content":""},
			{"title":"Temporal  docs","url":"https://docs.temporal.io","content":"Durable\n execution"},
			{"title":"no url","url":""},
			{"title":"Third","url":"https://example.test/3"}]}`)
	}))
	defer srv.Close()
	r := newRig(t, func(c *HostConfig) { c.SearchURL = srv.URL + "/searx/" })

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"numbered list", map[string]any{"query": "fenix runtime"},
			"1. Fenix - https://example.test/fenix\n2. Temporal docs - https://docs.temporal.io\n   Durable execution\n3. Third - https://example.test/3"},
		{"max results", map[string]any{"query": "fenix", "max_results": 1}, "1. Fenix - https://example.test/fenix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := r.mustCall(t, "web_search", tt.args)
			if p.Content != tt.want {
				t.Errorf("content =\n%q\nwant\n%q", p.Content, tt.want)
			}
		})
	}
	if gotQuery != "fenix" || gotFormat != "json" {
		t.Errorf("backend got q=%q format=%q", gotQuery, gotFormat)
	}
	t.Run("backend error", func(t *testing.T) {
		_, _, err := r.call(t, "web_search", map[string]any{"query": "broken"})
		errorIs(t, err, fenixerr.ErrRuntime, "")
		if !strings.Contains(err.Error(), "403 Forbidden") {
			t.Errorf("error %q does not say what the backend answered", err)
		}
	})
	t.Run("no backend", func(t *testing.T) {
		r := newRig(t)
		_, _, err := r.call(t, "web_search", map[string]any{"query": "x"})
		errorIs(t, err, fenixerr.ErrToolUnavailable, "")
		if err.Error() != "web_search has no search backend configured: set FENIX_SEARCH_URL" {
			t.Errorf("error = %q", err)
		}
	})
}
