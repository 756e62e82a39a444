package tools

import (
	"context"
	"fmt"
	"strings"
	"time"
)

func init() { register(browserListTool()) }

// BrowserListArgs are browser_list's arguments.
type BrowserListArgs struct{}

// BrowserSessionView is one open session in browser_list's result.
type BrowserSessionView struct {
	BrowserSessionID string    `json:"browser_session_id"`
	URL              string    `json:"url"`
	Title            string    `json:"title"`
	ConversationID   string    `json:"conversation_id,omitempty"`
	StartedAt        time.Time `json:"started_at"`
	AgeSeconds       int64     `json:"age_seconds"`
	IdleSeconds      int64     `json:"idle_seconds"`
}

// BrowserListResult is browser_list's raw result.
type BrowserListResult struct {
	HostID   string               `json:"host_id"`
	Sessions []BrowserSessionView `json:"sessions"`
}

func browserListTool() Definition {
	return Define(Spec{
		Name:           "browser_list",
		Description:    "List the open browser sessions on this worker host: ID, page URL and title, age.",
		ReadOnly:       true,
		RegistryBacked: true,
		Idempotent:     true,
		Timeout:        30 * time.Second,
	}, listBrowsers, projectBrowserList)
}

func listBrowsers(_ context.Context, env *Env, _ BrowserListArgs) (BrowserListResult, error) {
	h, err := requireHost(env, "browser_list")
	if err != nil {
		return BrowserListResult{}, err
	}
	now := time.Now()
	res := BrowserListResult{HostID: h.ID, Sessions: []BrowserSessionView{}}
	for _, s := range h.BrowserSessions() {
		res.Sessions = append(res.Sessions, BrowserSessionView{
			BrowserSessionID: s.ID, URL: s.URL, Title: s.Title, ConversationID: s.ConversationID, StartedAt: s.StartedAt,
			AgeSeconds: int64(now.Sub(s.StartedAt).Seconds()), IdleSeconds: int64(now.Sub(s.LastUsedAt).Seconds()),
		})
	}
	return res, nil
}

func projectBrowserList(_ BrowserListArgs, r BrowserListResult) Projection {
	var b strings.Builder
	if len(r.Sessions) == 0 {
		fmt.Fprintf(&b, "No open browser sessions on host %s.", r.HostID)
	} else {
		fmt.Fprintf(&b, "Open browser sessions on host %s:", r.HostID)
	}
	ids := make([]string, 0, len(r.Sessions))
	for i, s := range r.Sessions {
		ids = append(ids, s.BrowserSessionID)
		page := BrowserPage{URL: s.URL, Title: s.Title}
		fmt.Fprintf(&b, "\n%d. %s at %s, open for %s", i+1, s.BrowserSessionID, page.describe(), time.Duration(s.AgeSeconds)*time.Second)
	}
	return Projection{Content: b.String(), Metadata: map[string]any{"host_id": r.HostID, "browser_session_ids": ids, "count": len(r.Sessions)}}
}
