package tools

import (
	"context"
	"fmt"
)

func init() { register(browserNavigateTool()) }

// BrowserNavigateArgs are browser_navigate's arguments.
type BrowserNavigateArgs struct {
	BrowserSessionRef
	URL string `json:"url" jsonschema:"minLength=1,maxLength=4096,description=http or https URL to open"`
}

func browserNavigateTool() Definition {
	return Define(Spec{
		Name:           "browser_navigate",
		Description:    "Open a URL in a browser session and wait for it to load. Redirects and every request the page makes pass the same outbound guard as web_fetch.",
		RegistryBacked: true,
		Timeout:        browserToolTimeout,
		Heartbeat:      browserHeartbeat,
		Owner:          stringArg("browser_session_id"),
	}, navigateBrowser, projectBrowserNavigate)
}

func navigateBrowser(ctx context.Context, env *Env, a BrowserNavigateArgs) (BrowserPage, error) {
	const tool = "browser_navigate"
	s, err := openBrowserSession(env, tool, a.BrowserSessionID)
	if err != nil {
		return BrowserPage{}, err
	}
	st, err := s.Navigate(ctx, a.URL, browserNavTimeout)
	if err != nil {
		return BrowserPage{}, browserError(tool, a.BrowserSessionID, err)
	}
	return browserPage(a.BrowserSessionID, st), nil
}

func projectBrowserNavigate(a BrowserNavigateArgs, r BrowserPage) Projection {
	content := fmt.Sprintf("Opened %s", r.describe())
	if r.Status >= 400 {
		content += fmt.Sprintf(" (HTTP status %d)", r.Status)
	}
	if r.URL != a.URL {
		content += fmt.Sprintf(", from %s", a.URL)
	}
	return Projection{Content: content + ".", Metadata: r.metadata(nil)}
}
