package tools

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/tools/browser"
)

func init() { register(browserClickTool()) }

// BrowserClickArgs are browser_click's arguments.
type BrowserClickArgs struct {
	BrowserSessionRef
	BrowserTarget
}

// BrowserActionResult is the raw result of browser_click and browser_type.
type BrowserActionResult struct {
	BrowserPage
	Element browser.ElementInfo `json:"element"`
}

func browserClickTool() Definition {
	return Define(Spec{
		Name:           "browser_click",
		Description:    "Click an element of a browser session's page, by its number [n] from browser_snapshot or by CSS selector, and wait for any page load it starts.",
		RegistryBacked: true,
		Timeout:        browserToolTimeout,
		Heartbeat:      browserHeartbeat,
		Owner:          stringArg("browser_session_id"),
	}, clickBrowser, projectBrowserClick)
}

func clickBrowser(ctx context.Context, env *Env, a BrowserClickArgs) (BrowserActionResult, error) {
	return actOnElement(env, "browser_click", a.BrowserSessionRef, a.BrowserTarget,
		func(s *browser.Session, target browser.Target) (browser.ElementInfo, browser.State, error) {
			return s.Click(ctx, target, browserNavTimeout)
		})
}

// actOnElement runs an action on one element of a session's page.
func actOnElement(env *Env, tool string, ref BrowserSessionRef, t BrowserTarget,
	act func(*browser.Session, browser.Target) (browser.ElementInfo, browser.State, error)) (BrowserActionResult, error) {
	target, err := t.target(tool)
	if err != nil {
		return BrowserActionResult{}, err
	}
	s, err := openBrowserSession(env, tool, ref.BrowserSessionID)
	if err != nil {
		return BrowserActionResult{}, err
	}
	el, st, err := act(s, target)
	if err != nil {
		return BrowserActionResult{}, browserError(tool, ref.BrowserSessionID, err)
	}
	return BrowserActionResult{BrowserPage: browserPage(ref.BrowserSessionID, st), Element: el}, nil
}

func projectBrowserClick(a BrowserClickArgs, r BrowserActionResult) Projection {
	return Projection{
		Content:  fmt.Sprintf("Clicked %s; %s.", describeTarget(a.BrowserTarget, r.Element), r.pageNow()),
		Metadata: r.metadata(map[string]any{"element": describeTarget(a.BrowserTarget, r.Element), "navigated": r.Navigated}),
	}
}

// pageNow narrates where an action left the page.
func (p BrowserPage) pageNow() string {
	if p.Navigated {
		return "page is now " + p.describe()
	}
	return "page is still " + p.describe()
}
