package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/tools/browser"
)

func init() { register(browserSnapshotTool()) }

// BrowserSnapshotArgs are browser_snapshot's arguments.
type BrowserSnapshotArgs struct {
	BrowserSessionRef
	MaxChars int `json:"max_chars,omitempty" jsonschema:"minimum=100,maximum=200000,description=At most this many characters of page text (default 20000)"`
}

// BrowserSnapshotResult is browser_snapshot's raw result.
type BrowserSnapshotResult struct {
	BrowserSessionID string `json:"browser_session_id"`
	browser.Page
}

func browserSnapshotTool() Definition {
	return Define(Spec{
		Name:           "browser_snapshot",
		Description:    "Read the page of a browser session as text, with its links, buttons and form fields numbered [n] for browser_click and browser_type.",
		ReadOnly:       true,
		RegistryBacked: true,
		Timeout:        browserToolTimeout,
		Heartbeat:      browserHeartbeat,
		Owner:          stringArg("browser_session_id"),
	}, snapshotBrowser, projectBrowserSnapshot)
}

func snapshotBrowser(ctx context.Context, env *Env, a BrowserSnapshotArgs) (BrowserSnapshotResult, error) {
	const tool = "browser_snapshot"
	s, err := openBrowserSession(env, tool, a.BrowserSessionID)
	if err != nil {
		return BrowserSnapshotResult{}, err
	}
	maxChars := a.MaxChars
	if maxChars == 0 {
		maxChars = 20000
	}
	p, err := s.Snapshot(ctx, maxChars, browserOpTimeout)
	if err != nil {
		return BrowserSnapshotResult{}, browserError(tool, a.BrowserSessionID, err)
	}
	if clipped, cut := clipForJSON(p.Text, resultTextBudget/2); cut {
		p.Text, p.Truncated = clipped, true
	}
	return BrowserSnapshotResult{BrowserSessionID: a.BrowserSessionID, Page: p}, nil
}

func projectBrowserSnapshot(_ BrowserSnapshotArgs, r BrowserSnapshotResult) Projection {
	page := BrowserPage{BrowserSessionID: r.BrowserSessionID, URL: r.URL, Title: r.Title}
	var b strings.Builder
	fmt.Fprintf(&b, "Page %s, %d interactive elements", page.describe(), len(r.Elements))
	if r.Truncated {
		b.WriteString(" (truncated)")
	}
	b.WriteString(":\n\n")
	if r.Text == "" {
		b.WriteString("(no text content)")
	} else {
		b.WriteString(r.Text)
	}
	return Projection{Content: b.String(), Metadata: page.metadata(map[string]any{"element_count": len(r.Elements), "truncated": r.Truncated})}
}
