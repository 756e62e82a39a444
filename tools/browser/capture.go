package browser

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Bounds of what a page can put into a result. A page controls its size,
// title and links: without these a script makes them megabytes long.
const (
	// maxFullPagePixels bounds a full-page capture's area (1280 wide by
	// 8192 tall); a taller page is captured from its top.
	maxFullPagePixels = 1280 * 8192
	// maxCaptureWidth bounds a full-page capture's width.
	maxCaptureWidth = 4096
	// maxScreenshotBytes bounds the PNG a call keeps; a viewport of noise
	// is about 5 MiB.
	maxScreenshotBytes = 8 << 20
	// maxTitleChars and maxURLChars bound a page's title and a URL (the
	// page's own, a link's) in results.
	maxTitleChars = 512
	maxURLChars   = 4096
)

// ErrScreenshotTooLarge is returned for a capture over maxScreenshotBytes.
var ErrScreenshotTooLarge = errors.New("screenshot too large")

// Capture is a screenshot.
type Capture struct {
	PNG []byte
	// PageWidth and PageHeight are the page's size in CSS pixels, for a
	// full-page capture.
	PageWidth, PageHeight int
	// Clipped is set when the page was larger than a full-page capture
	// may be, and only its top left was captured.
	Clipped bool
}

// Screenshot captures the viewport, or the whole page up to
// maxFullPagePixels, as PNG.
func (s *Session) Screenshot(ctx context.Context, fullPage bool, timeout time.Duration) (Capture, State, error) {
	var shot Capture
	var st State
	err := s.do(ctx, timeout, func(tab context.Context) error {
		var err error
		if fullPage {
			shot, err = captureFullPage(tab)
		} else {
			shot.PNG, err = chromedp.Run(tab, chromedp.CaptureScreenshot())
		}
		if err != nil {
			return fmt.Errorf("capturing a screenshot: %w", err)
		}
		if len(shot.PNG) > maxScreenshotBytes {
			size := len(shot.PNG)
			shot.PNG = nil
			return fmt.Errorf("%w: the PNG is %d bytes, over the %d-byte limit; take a viewport screenshot (full_page false) instead", ErrScreenshotTooLarge, size, maxScreenshotBytes)
		}
		st, err = s.finalState(tab, State{})
		return err
	})
	return shot, st, err
}

// captureFullPage captures the page's content from its top left, at most
// maxCaptureWidth wide and maxFullPagePixels in area.
func captureFullPage(tab context.Context) (Capture, error) {
	metrics, err := chromedp.Call(tab, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return Capture{}, fmt.Errorf("measuring the page: %w", err)
	}
	var shot Capture
	if size := metrics.CSSContentSize; size != nil {
		shot.PageWidth, shot.PageHeight = int(math.Ceil(size.Width)), int(math.Ceil(size.Height))
	}
	width := min(max(shot.PageWidth, 1), maxCaptureWidth)
	height := min(max(shot.PageHeight, 1), maxFullPagePixels/width)
	shot.Clipped = width < shot.PageWidth || height < shot.PageHeight
	res, err := chromedp.Call(tab, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format:                page.CaptureScreenshotFormatPng,
		CaptureBeyondViewport: new(true),
		FromSurface:           new(true),
		Clip:                  &page.Viewport{Width: float64(width), Height: float64(height), Scale: 1},
	})
	if err != nil {
		return Capture{}, err
	}
	shot.PNG = res.Data
	return shot, nil
}

// clipText keeps the first max characters of s, marking the cut.
func clipText(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "…"
}
