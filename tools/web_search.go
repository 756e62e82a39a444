package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
)

func init() { register(webSearchTool()) }

// maxSearchResponseBytes bounds the backend's JSON answer.
const maxSearchResponseBytes = 4 << 20

// WebSearchArgs are web_search's arguments.
type WebSearchArgs struct {
	Query      string `json:"query" jsonschema:"minLength=1,maxLength=500,description=What to search the web for"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=20,description=Return at most this many results (default 8)"`
}

// SearchHit is one search result.
type SearchHit struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Content string `json:"content,omitempty"`
}

// WebSearchResult is web_search's raw result.
type WebSearchResult struct {
	Query   string      `json:"query"`
	Backend string      `json:"backend"`
	Results []SearchHit `json:"results"`
}

func webSearchTool() Definition {
	return Define(Spec{
		Name:        "web_search",
		Description: "Search the web through the worker's configured search backend and return a numbered list of titles, URLs and snippets.",
		ReadOnly:    true,
		Idempotent:  true,
		Timeout:     60 * time.Second,
	}, searchWeb, projectWebSearch)
}

func searchWeb(ctx context.Context, env *Env, a WebSearchArgs) (WebSearchResult, error) {
	const tool = "web_search"
	h, err := requireHost(env, tool)
	if err != nil {
		return WebSearchResult{}, err
	}
	if h.cfg.SearchURL == "" {
		return WebSearchResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "web_search has no search backend configured: set FENIX_SEARCH_URL").WithTool(tool).WithCode("no_search_backend")
	}
	base, err := url.Parse(h.cfg.SearchURL)
	if err != nil {
		return WebSearchResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "web_search backend URL %q is malformed: %v", h.cfg.SearchURL, err).WithTool(tool)
	}
	endpoint := *base
	endpoint.Path = strings.TrimSuffix(endpoint.Path, "/") + "/search"
	q := endpoint.Query()
	q.Set("q", a.Query)
	q.Set("format", "json")
	endpoint.RawQuery = q.Encode()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return WebSearchResult{}, fenixerr.Runtime("web_search request: %v", err).WithTool(tool)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := h.searchClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return WebSearchResult{}, fenixerr.New(fenixerr.TypeCanceled, "web_search was canceled").WithTool(tool).WithCause(err)
		}
		return WebSearchResult{}, fenixerr.Runtime("web_search backend %s did not answer: %v", base.Redacted(), err).WithTool(tool).WithCause(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchResponseBytes+1))
	if err != nil {
		return WebSearchResult{}, fenixerr.Runtime("web_search backend %s: reading the answer: %v", base.Redacted(), err).WithTool(tool)
	}
	if resp.StatusCode != http.StatusOK {
		return WebSearchResult{}, fenixerr.Runtime("web_search backend %s answered %s: %s (is format=json enabled in its settings?)", base.Redacted(), resp.Status, clip(string(raw), 200)).WithTool(tool)
	}
	if len(raw) > maxSearchResponseBytes {
		return WebSearchResult{}, fenixerr.Runtime("web_search backend %s answered more than %s", base.Redacted(), byteSize(maxSearchResponseBytes)).WithTool(tool)
	}
	var answer struct {
		Results []SearchHit `json:"results"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return WebSearchResult{}, fenixerr.Runtime("web_search backend %s did not answer SearXNG JSON: %v", base.Redacted(), err).WithTool(tool)
	}
	limit := a.MaxResults
	if limit == 0 {
		limit = 8
	}
	res := WebSearchResult{Query: a.Query, Backend: base.Redacted(), Results: []SearchHit{}}
	for _, hit := range answer.Results {
		if len(res.Results) >= limit {
			break
		}
		if hit.URL == "" {
			continue
		}
		hit.Title = strings.Join(strings.Fields(hit.Title), " ")
		hit.Content = clip(strings.Join(strings.Fields(hit.Content), " "), 500)
		res.Results = append(res.Results, hit)
	}
	return res, nil
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func projectWebSearch(_ WebSearchArgs, r WebSearchResult) Projection {
	var b strings.Builder
	if len(r.Results) == 0 {
		fmt.Fprintf(&b, "No web results for %q.", r.Query)
	}
	for i, hit := range r.Results {
		if i > 0 {
			b.WriteString("\n")
		}
		title := hit.Title
		if title == "" {
			title = hit.URL
		}
		fmt.Fprintf(&b, "%d. %s - %s", i+1, title, hit.URL)
		if hit.Content != "" {
			fmt.Fprintf(&b, "\n   %s", hit.Content)
		}
	}
	urls := make([]string, len(r.Results))
	for i, hit := range r.Results {
		urls[i] = hit.URL
	}
	return Projection{
		Content:  b.String(),
		Metadata: map[string]any{"query": r.Query, "result_count": len(r.Results), "urls": urls},
	}
}
