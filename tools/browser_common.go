package tools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/browser"
)

// BrowserConfig bounds the browser tools.
type BrowserConfig struct {
	// ExecPath is the Chromium binary (default: chromium on PATH).
	ExecPath string
	// IdleTimeout closes a session no call used for this long (default
	// 10m).
	IdleTimeout time.Duration
	// MaxOpen caps the open sessions of the host (default 8).
	MaxOpen int
}

// newBrowserManager opens the host's browser sessions directory, reaping
// what a worker that died on it left. Chromium starts only with a
// session, in a cgroup fenced off the endpoints commands cannot reach
// when fence is not nil.
func newBrowserManager(cfg HostConfig, fence *confine.Fence) (*browser.Manager, error) {
	policy := cfg.Fetch
	bc := browser.Config{
		Dir:         filepath.Join(cfg.DataDir, "browser"),
		ExecPath:    cfg.Browser.ExecPath,
		Guard:       browser.Guard{Policy: policy},
		IdleTimeout: cfg.Browser.IdleTimeout,
		MaxOpen:     cfg.Browser.MaxOpen,
		Logger:      cfg.Logger,
	}
	if fence != nil {
		bc.Fence = fence.Apply
	}
	return browser.NewManager(bc)
}

// newBrowserFence loads the fence of the browser's cgroups: the endpoints
// commands cannot reach. nil where there are none or the kernel or the
// worker's privileges cannot have it (the guard proxy still holds).
func newBrowserFence(cfg HostConfig) *confine.Fence {
	if len(cfg.Protected.Unreachable) == 0 || cfg.Confinement == confine.ModeOff {
		return nil
	}
	fence, err := confine.NewFence(cfg.Protected.Unreachable)
	if err != nil {
		return nil
	}
	return fence
}

// BrowserSessions describes this host's open browser sessions, newest
// first (for the operator snapshot).
func (h *Host) BrowserSessions() []browser.Info {
	if h == nil || h.browsers == nil {
		return nil
	}
	return h.browsers.List()
}

// CloseBrowserSessions closes this host's open sessions that match, for
// the reason given (browser.ReasonSessionEnd, ReasonCanceled, …).
func (h *Host) CloseBrowserSessions(match func(browser.Info) bool, reason string) []browser.Info {
	if h == nil || h.browsers == nil {
		return nil
	}
	return h.browsers.CloseWhere(match, reason)
}

// Timeouts and bounds shared by the browser tools.
const (
	browserToolTimeout = 2 * time.Minute
	browserHeartbeat   = 10 * time.Second
	browserOpTimeout   = 30 * time.Second
	browserNavTimeout  = 45 * time.Second
)

// BrowserSessionRef names the session a call is about; the call runs on
// the host that owns it.
type BrowserSessionRef struct {
	BrowserSessionID string `json:"browser_session_id" jsonschema:"minLength=1,maxLength=128,pattern=^brw_[a-z0-9-]+_[0-9a-f]{16}$,description=The browser_session_id browser_open returned"`
}

// openBrowserSession finds a session for a call about it, on the host that
// owns it.
func openBrowserSession(env *Env, tool, id string) (*browser.Session, error) {
	h, err := requireHost(env, tool)
	if err != nil {
		return nil, err
	}
	if err := h.requireOwner(tool, id); err != nil {
		return nil, err
	}
	s, err := h.browsers.Get(id)
	if err != nil {
		return nil, browserError(tool, id, err)
	}
	return s, nil
}

// browserError classifies what went wrong with a session or its page.
func browserError(tool, id string, err error) error {
	var se *browser.SessionError
	var ee *browser.ElementError
	switch {
	case errors.As(err, &se) && se.Status == browser.StatusLost:
		return fenixerr.New(fenixerr.TypeWorkerLost, "%s: %v", tool, se).WithTool(tool).WithCause(err)
	case errors.As(err, &se) && errors.Is(err, browser.ErrNotFound):
		return fenixerr.Validation("%s: %v", tool, se).WithTool(tool).WithCode("not_found")
	case errors.As(err, &se):
		return fenixerr.Validation("%s: %v", tool, se).WithTool(tool).WithCode("browser_session_closed")
	case errors.Is(err, browser.ErrCanceled):
		return fenixerr.New(fenixerr.TypeCanceled, "%s was canceled: %v", tool, err).WithTool(tool).WithCause(err)
	case errors.Is(err, context.DeadlineExceeded):
		return fenixerr.New(fenixerr.TypeToolTimeout, "%s timed out: %v", tool, err).WithTool(tool).WithCause(err)
	case errors.Is(err, browser.ErrScreenshotTooLarge):
		return fenixerr.Runtime("%s in browser session %s: %v", tool, id, err).WithTool(tool).WithCode("screenshot_too_large")
	case errors.As(err, &ee):
		return fenixerr.Validation("%s in browser session %s: %v", tool, id, ee).WithTool(tool).WithCode("element_not_found")
	}
	if b, ok := browser.IsBlocked(err); ok {
		fe := fenixerr.Validation("%s refused %v", tool, b).WithTool(tool).WithCode("destination_not_allowed").WithCause(err)
		fe.Class = fenixerr.ClassAuthorization
		return fe
	}
	return fenixerr.Runtime("%s in browser session %s failed: %v", tool, id, err).WithTool(tool).WithCause(err)
}

// BrowserTarget picks an element: a number from the latest snapshot or a
// CSS selector, exactly one.
type BrowserTarget struct {
	Ref      int    `json:"ref,omitempty" jsonschema:"minimum=1,maximum=100000,description=Element number [n] from the latest browser_snapshot"`
	Selector string `json:"selector,omitempty" jsonschema:"maxLength=1024,description=CSS selector of the element (instead of ref)"`
}

func (t BrowserTarget) target(tool string) (browser.Target, error) {
	if (t.Ref == 0) == (t.Selector == "") {
		return browser.Target{}, fenixerr.Validation("%s needs exactly one of ref (an element number from browser_snapshot) and selector (CSS)", tool).WithTool(tool)
	}
	return browser.Target{Ref: t.Ref, Selector: t.Selector}, nil
}

// BrowserPage is where a session's page is after a call.
type BrowserPage struct {
	BrowserSessionID string `json:"browser_session_id"`
	URL              string `json:"url"`
	Title            string `json:"title"`
	Status           int    `json:"status,omitempty"`
	Navigated        bool   `json:"navigated,omitempty"`
}

func browserPage(id string, st browser.State) BrowserPage {
	return BrowserPage{BrowserSessionID: id, URL: st.URL, Title: st.Title, Status: st.Status, Navigated: st.Navigated}
}

// describe narrates the page: `https://… — "title"`.
func (p BrowserPage) describe() string {
	if p.Title == "" {
		return p.URL
	}
	return fmt.Sprintf("%s — %q", p.URL, p.Title)
}

func (p BrowserPage) metadata(extra map[string]any) map[string]any {
	meta := map[string]any{"browser_session_id": p.BrowserSessionID, "url": p.URL, "title": p.Title}
	if p.Status != 0 {
		meta["status_code"] = p.Status
	}
	for k, v := range extra {
		meta[k] = v
	}
	return meta
}

// describeTarget names the element an action touched: `[3] "Sign in"`.
func describeTarget(t BrowserTarget, el browser.ElementInfo) string {
	var b strings.Builder
	if t.Ref > 0 {
		fmt.Fprintf(&b, "[%d]", t.Ref)
	} else {
		fmt.Fprintf(&b, "%s", t.Selector)
	}
	if el.Name != "" {
		fmt.Fprintf(&b, " %q", el.Name)
	} else if el.Tag != "" {
		fmt.Fprintf(&b, " (%s)", el.Tag)
	}
	return b.String()
}
