package tools

import (
	"bytes"
	"context"
	"fmt"
	"image/png"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/browser"
)

func init() { register(browserScreenshotTool()) }

// BrowserScreenshotArgs are browser_screenshot's arguments.
type BrowserScreenshotArgs struct {
	BrowserSessionRef
	FullPage bool `json:"full_page,omitempty" jsonschema:"description=Capture the whole page, not just the visible viewport"`
}

// BrowserScreenshotResult is browser_screenshot's raw result: the PNG is in
// the context store under Ref, never in the result.
type BrowserScreenshotResult struct {
	BrowserPage
	Ref       string `json:"ref"`
	MediaType string `json:"media_type"`
	Bytes     int    `json:"bytes"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	FullPage  bool   `json:"full_page,omitempty"`
	// PageHeight is the page's height when a full-page capture was
	// clipped to its top.
	PageHeight int  `json:"page_height,omitempty"`
	Clipped    bool `json:"clipped,omitempty"`
}

func browserScreenshotTool() Definition {
	return Define(Spec{
		Name:           "browser_screenshot",
		Description:    "Capture a PNG screenshot of a browser session's page. The image is stored in the context store and returned by reference.",
		ReadOnly:       true,
		RegistryBacked: true,
		Timeout:        browserToolTimeout,
		Heartbeat:      browserHeartbeat,
		Owner:          stringArg("browser_session_id"),
	}, screenshotBrowser, projectBrowserScreenshot)
}

func screenshotBrowser(ctx context.Context, env *Env, a BrowserScreenshotArgs) (BrowserScreenshotResult, error) {
	const tool = "browser_screenshot"
	if env.Blobs == nil {
		return BrowserScreenshotResult{}, fenixerr.New(fenixerr.TypeToolUnavailable, "browser_screenshot needs the context store to keep the image, and this worker has none").WithTool(tool)
	}
	s, err := openBrowserSession(env, tool, a.BrowserSessionID)
	if err != nil {
		return BrowserScreenshotResult{}, err
	}
	shot, st, err := s.Screenshot(ctx, a.FullPage, browserOpTimeout)
	if err != nil {
		return BrowserScreenshotResult{}, browserError(tool, a.BrowserSessionID, err)
	}
	img := shot.PNG
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		return BrowserScreenshotResult{}, fenixerr.Runtime("browser_screenshot: the browser returned no PNG: %v", err).WithTool(tool)
	}
	ref, err := env.Blobs.Put(ctx, img)
	if err != nil {
		return BrowserScreenshotResult{}, fenixerr.Runtime("browser_screenshot could not store the %d-byte image: %v", len(img), err).WithTool(tool).WithCause(err)
	}
	return BrowserScreenshotResult{
		BrowserPage: browserPage(a.BrowserSessionID, st), Ref: ref, MediaType: "image/png",
		Bytes: len(img), Width: cfg.Width, Height: cfg.Height, FullPage: a.FullPage,
		Clipped: shot.Clipped, PageHeight: clippedHeight(shot),
	}, nil
}

func clippedHeight(shot browser.Capture) int {
	if !shot.Clipped {
		return 0
	}
	return shot.PageHeight
}

func projectBrowserScreenshot(_ BrowserScreenshotArgs, r BrowserScreenshotResult) Projection {
	clipped := ""
	if r.Clipped {
		clipped = fmt.Sprintf(" The page is %d pixels tall; only its top was captured.", r.PageHeight)
	}
	return Projection{
		Content: fmt.Sprintf("Took a %dx%d screenshot of %s (%s PNG, stored as %s).%s", r.Width, r.Height, r.describe(), byteSize(int64(r.Bytes)), r.Ref, clipped),
		Metadata: Attach(r.metadata(map[string]any{"ref": r.Ref, "media_type": r.MediaType, "bytes": r.Bytes,
			"width": r.Width, "height": r.Height, "full_page": r.FullPage, "clipped": r.Clipped}),
			Attachment{Type: AttachmentImage, MIMEType: r.MediaType, Ref: r.Ref, Bytes: r.Bytes}),
	}
}
