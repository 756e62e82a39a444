package tools

import (
	"context"
	"fmt"

	"github.com/fenixrt/fenix/tools/browser"
)

func init() { register(browserTypeTool()) }

// BrowserTypeArgs are browser_type's arguments.
type BrowserTypeArgs struct {
	BrowserSessionRef
	BrowserTarget
	Text   string `json:"text" jsonschema:"maxLength=65536,description=Text to type"`
	Append bool   `json:"append,omitempty" jsonschema:"description=Keep the field's current value and type after it (default: replace it)"`
	Submit bool   `json:"submit,omitempty" jsonschema:"description=Press Enter after typing (submits most forms)"`
}

func browserTypeTool() Definition {
	return Define(Spec{
		Name:           "browser_type",
		Description:    "Type text into a form field of a browser session's page, by its number [n] from browser_snapshot or by CSS selector; optionally press Enter to submit.",
		RegistryBacked: true,
		Timeout:        browserToolTimeout,
		Heartbeat:      browserHeartbeat,
		Owner:          stringArg("browser_session_id"),
	}, typeBrowser, projectBrowserType)
}

func typeBrowser(ctx context.Context, env *Env, a BrowserTypeArgs) (BrowserActionResult, error) {
	return actOnElement(env, "browser_type", a.BrowserSessionRef, a.BrowserTarget,
		func(s *browser.Session, target browser.Target) (browser.ElementInfo, browser.State, error) {
			return s.Type(ctx, target, a.Text, a.Append, a.Submit, browserNavTimeout)
		})
}

func projectBrowserType(a BrowserTypeArgs, r BrowserActionResult) Projection {
	what := fmt.Sprintf("Typed %d characters into %s", len([]rune(a.Text)), describeTarget(a.BrowserTarget, r.Element))
	if a.Submit {
		what += " and pressed Enter"
	}
	return Projection{
		Content:  fmt.Sprintf("%s; %s.", what, r.pageNow()),
		Metadata: r.metadata(map[string]any{"element": describeTarget(a.BrowserTarget, r.Element), "navigated": r.Navigated, "submitted": a.Submit, "chars": len([]rune(a.Text))}),
	}
}
