package tools

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/browser"
)

func init() { register(browserOpenTool()) }

// BrowserOpenArgs are browser_open's arguments.
type BrowserOpenArgs struct {
	URL string `json:"url,omitempty" jsonschema:"maxLength=4096,description=http or https URL to open at once (default: a blank page)"`
}

// BrowserOpenResult is browser_open's raw result.
type BrowserOpenResult struct {
	BrowserPage
	HostID string `json:"host_id"`
}

func browserOpenTool() Definition {
	return Define(Spec{
		Name:           "browser_open",
		Description:    "Start a headless browser session on this worker host and optionally open a URL. Returns a browser_session_id for the other browser_* tools. Private, loopback and link-local destinations are refused.",
		RegistryBacked: true,
		Timeout:        browserToolTimeout,
		Heartbeat:      browserHeartbeat,
	}, openBrowser, projectBrowserOpen)
}

func openBrowser(ctx context.Context, env *Env, a BrowserOpenArgs) (BrowserOpenResult, error) {
	const tool = "browser_open"
	h, err := requireHost(env, tool)
	if err != nil {
		return BrowserOpenResult{}, err
	}
	id, err := NewResourceID(ResourceBrowserSession, h.ID)
	if err != nil {
		return BrowserOpenResult{}, fenixerr.Runtime("minting a browser session ID: %v", err)
	}
	if a.URL != "" {
		// Refuse a forbidden URL before starting a browser for it.
		if _, err := h.browsers.Guard().CheckNavigation(ctx, a.URL); err != nil {
			return BrowserOpenResult{}, browserError(tool, id, err)
		}
	}
	s, err := h.browsers.Open(ctx, browser.OpenSpec{ID: id, ConversationID: env.ConversationID, RunID: env.RunID, CallID: env.CallID})
	if err != nil {
		if ctx.Err() != nil {
			return BrowserOpenResult{}, fenixerr.New(fenixerr.TypeCanceled, "browser_open was canceled before the browser started").WithTool(tool).WithCause(err)
		}
		return BrowserOpenResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "browser_open could not start a browser: %v", err).WithTool(tool).WithCause(err)
	}
	env.reportResource(id)
	res := BrowserOpenResult{BrowserPage: BrowserPage{BrowserSessionID: id, URL: "about:blank"}, HostID: h.ID}
	if a.URL == "" {
		return res, nil
	}
	st, err := s.Navigate(ctx, a.URL, browserNavTimeout)
	if err != nil {
		// A session whose first page failed would only wait for the idle
		// timeout: close it and say so.
		_, _ = h.browsers.Close(id, browser.ReasonClosed)
		fe := fenixerr.As(browserError(tool, id, err))
		fe.Message += fmt.Sprintf(" (browser session %s was closed)", id)
		return BrowserOpenResult{}, fe
	}
	res.BrowserPage = browserPage(id, st)
	return res, nil
}

func projectBrowserOpen(_ BrowserOpenArgs, r BrowserOpenResult) Projection {
	content := fmt.Sprintf("Opened browser session %s on host %s.", r.BrowserSessionID, r.HostID)
	if r.URL != "about:blank" {
		content = fmt.Sprintf("Opened %s in browser session %s on host %s.", r.describe(), r.BrowserSessionID, r.HostID)
	}
	return Projection{Content: content, Metadata: r.metadata(map[string]any{"host_id": r.HostID})}
}
