package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/fenixrt/fenix/tools/browser"
)

func init() { register(browserCloseTool()) }

// BrowserCloseArgs are browser_close's arguments.
type BrowserCloseArgs struct {
	BrowserSessionRef
}

// BrowserCloseResult is browser_close's raw result.
type BrowserCloseResult struct {
	BrowserSessionID string `json:"browser_session_id"`
	URL              string `json:"url"`
	Title            string `json:"title"`
	AgeSeconds       int64  `json:"age_seconds"`
}

func browserCloseTool() Definition {
	return Define(Spec{
		Name:           "browser_close",
		Description:    "Close a browser session: its browser process and profile are removed.",
		RegistryBacked: true,
		Timeout:        30 * time.Second,
		Heartbeat:      browserHeartbeat,
		Owner:          stringArg("browser_session_id"),
	}, closeBrowser, projectBrowserClose)
}

func closeBrowser(_ context.Context, env *Env, a BrowserCloseArgs) (BrowserCloseResult, error) {
	const tool = "browser_close"
	h, err := requireHost(env, tool)
	if err != nil {
		return BrowserCloseResult{}, err
	}
	if err := h.requireOwner(tool, a.BrowserSessionID); err != nil {
		return BrowserCloseResult{}, err
	}
	info, err := h.browsers.Close(a.BrowserSessionID, browser.ReasonClosed)
	if err != nil {
		return BrowserCloseResult{}, browserError(tool, a.BrowserSessionID, err)
	}
	return BrowserCloseResult{BrowserSessionID: info.ID, URL: info.URL, Title: info.Title, AgeSeconds: int64(time.Since(info.StartedAt).Seconds())}, nil
}

func projectBrowserClose(_ BrowserCloseArgs, r BrowserCloseResult) Projection {
	page := BrowserPage{BrowserSessionID: r.BrowserSessionID, URL: r.URL, Title: r.Title}
	return Projection{
		Content:  fmt.Sprintf("Closed browser session %s after %s; it was at %s.", r.BrowserSessionID, time.Duration(r.AgeSeconds)*time.Second, page.describe()),
		Metadata: page.metadata(map[string]any{"age_seconds": r.AgeSeconds}),
	}
}
