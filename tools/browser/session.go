package browser

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/fenixrt/fenix/proctree"
)

// Session is one Chromium process with one tab. Its operations run one at
// a time.
type Session struct {
	id      string
	m       *Manager
	guard   Guard
	proxy   *guardProxy
	profile string

	tab           context.Context
	cancelTab     context.CancelFunc
	cancelAlloc   context.CancelFunc
	pid           int
	browserExited <-chan struct{}
	// cgroup holds Chromium and every helper it starts (nil where no
	// cgroup can be made: the process group and the profile find them).
	cgroup *proctree.Cgroup

	op sync.Mutex // serializes operations

	mu        sync.Mutex
	info      Info
	busy      bool
	ended     bool
	blocked   error // the last main-frame request the guard refused
	loads     int   // main-frame loads started
	loadsDone int   // main-frame loads finished
}

// Timeouts of one session operation.
const (
	startTimeout = 30 * time.Second
	// settleWindow is how long an action waits for a navigation it may
	// have caused to start.
	settleWindow = 400 * time.Millisecond
)

func (m *Manager) start(ctx context.Context, spec OpenSpec) (*Session, error) {
	execPath := m.cfg.ExecPath
	if execPath == "" {
		p, err := FindChromium()
		if err != nil {
			return nil, err
		}
		execPath = p
	}
	profile := filepath.Join(m.cfg.profileDir(), spec.ID)
	if err := os.MkdirAll(profile, 0o700); err != nil {
		return nil, fmt.Errorf("creating the browser profile: %w", err)
	}
	cgroup, err := m.newCgroup()
	if err != nil {
		return nil, err
	}
	proxy, err := startGuardProxy(m.cfg.Guard.Policy)
	if err != nil {
		if cgroup != nil {
			cgroup.Close()
		}
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		// Nothing may reach the network behind the guard's back: every
		// connection, loopback included, goes through the guard proxy, and
		// WebRTC may not send UDP around it.
		chromedp.ProxyServer(proxy.URL()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("dns-prefetch-disable", true),
		// Crashpad daemonizes out of the process group.
		chromedp.Flag("disable-crash-reporter", true),
		// New windows would be targets the guard does not watch.
		chromedp.Flag("block-new-web-contents", true),
		chromedp.Flag("disable-popup-blocking", false),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			isolate(cmd)
			if cgroup != nil {
				cgroup.Attach(cmd.SysProcAttr)
			}
		}),
		chromedp.NoInheritEnv,
		chromedp.Env("HOME="+profile, "PATH="+os.Getenv("PATH"), "LANG=C.UTF-8"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	s := &Session{id: spec.ID, m: m, guard: m.cfg.Guard, proxy: proxy, profile: profile, tab: tab, cancelTab: cancelTab, cancelAlloc: cancelAlloc, cgroup: cgroup}
	now := time.Now().UTC()
	s.info = Info{ID: spec.ID, ConversationID: spec.ConversationID, RunID: spec.RunID, CallID: spec.CallID,
		Status: StatusOpen, URL: "about:blank", Profile: profile, StartedAt: now, LastUsedAt: now}

	// The first action on tab starts the browser and binds its life to
	// tab: it must not run on a context with a deadline.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tab) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err := <-started:
		if err != nil {
			s.kill()
			return nil, fmt.Errorf("starting %s: %w", execPath, err)
		}
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	case <-timer.C:
		s.kill()
		return nil, fmt.Errorf("starting %s: no answer within %s", execPath, startTimeout)
	}
	startCtx, cancel := context.WithTimeout(tab, startTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	c := chromedp.FromContext(tab)
	if p := c.Browser.Process(); p != nil {
		s.pid = p.Pid
		// The browser, like a command, goes before the worker when memory
		// runs out (what it started before this keeps its own score).
		_ = proctree.PreferOOMKill(p.Pid)
		exited := make(chan struct{})
		s.browserExited = exited
		go func() {
			// The allocator waits for the process; this only watches it.
			for {
				if err := p.Signal(syscall.Signal(0)); err != nil {
					close(exited)
					return
				}
				select {
				case <-tab.Done():
					close(exited)
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		}()
	}
	s.info.PID = s.pid
	// Record before anything can go wrong, so a lost worker's successor
	// knows this session existed.
	if err := m.writeRecord(s.Info()); err != nil {
		s.kill()
		return nil, fmt.Errorf("recording the browser session: %w", err)
	}
	if err := s.setup(startCtx, c.Target.TargetID); err != nil {
		s.kill()
		_ = m.writeRecord(s.endInfo(ReasonBrowserDied))
		return nil, fmt.Errorf("setting up the browser: %w", err)
	}
	return s, nil
}

// setup denies downloads and routes every request of the tab through the
// guard.
func (s *Session) setup(ctx context.Context, mainFrame target.ID) error {
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny}); err != nil {
		return fmt.Errorf("denying downloads: %w", err)
	}
	paused := chromedp.Events(s.tab, fetch.RequestPaused)
	started := chromedp.Events(s.tab, page.FrameStartedLoading)
	stopped := chromedp.Events(s.tab, page.FrameStoppedLoading)
	frame := cdp.FrameID(mainFrame)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			go s.filter(ev, ev.FrameID == frame && ev.ResourceType == network.ResourceTypeDocument)
		}
	}()
	go countLoads(s, started, func(ev page.EventFrameStartedLoading) bool { return ev.FrameID == frame }, &s.loads)
	go countLoads(s, stopped, func(ev page.EventFrameStoppedLoading) bool { return ev.FrameID == frame }, &s.loadsDone)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}}); err != nil {
		return fmt.Errorf("enabling request interception: %w", err)
	}
	return nil
}

// countLoads counts the events of the main frame into *n until the tab
// ends.
func countLoads[E any](s *Session, events iter.Seq2[E, error], mainFrame func(E) bool, n *int) {
	for ev, err := range events {
		if err != nil {
			return
		}
		if mainFrame(ev) {
			s.mu.Lock()
			*n++
			s.mu.Unlock()
		}
	}
}

// filter lets a paused request go on or fails it, per the guard.
func (s *Session) filter(ev fetch.EventRequestPaused, mainFrame bool) {
	err := s.guard.CheckRequest(s.tab, ev.Request.URL)
	if err == nil {
		_, _ = chromedp.Call(s.tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		return
	}
	if mainFrame {
		s.mu.Lock()
		s.blocked = err
		s.mu.Unlock()
	}
	_, _ = chromedp.Call(s.tab, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
}

// ID is the session's ID.
func (s *Session) ID() string { return s.id }

// Info is the session's current record.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *Session) alive() bool {
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return false
	}
	if s.browserExited != nil {
		select {
		case <-s.browserExited:
			return false
		default:
		}
	}
	return s.tab.Err() == nil
}

func (s *Session) idleSince(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return 0
	}
	return now.Sub(s.info.LastUsedAt)
}

func (s *Session) endInfo(reason string) Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		now := time.Now().UTC()
		s.ended = true
		s.info.Status, s.info.Reason, s.info.ClosedAt = StatusClosed, reason, &now
	}
	return s.info
}

// kill ends Chromium at once: its cgroup, its process group, then
// anything else using its profile, then chromedp's contexts (which find
// it dead).
func (s *Session) kill() {
	if s.cgroup != nil {
		_ = s.cgroup.Kill()
	}
	killGroup(s.pid)
	killUsingProfile(s.profile)
	s.cancelTab()
	s.cancelAlloc()
	s.proxy.close()
	killUsingProfile(s.profile)
	if s.cgroup != nil {
		s.cgroup.Close()
	}
	_ = os.RemoveAll(s.profile)
}

// newCgroup makes a session's cgroup, fenced when the manager has a
// fence; nil, without error, where no cgroup can be made.
func (m *Manager) newCgroup() (*proctree.Cgroup, error) {
	cg, err := proctree.New(proctree.Parent(), proctree.PrefixBrowser)
	if err != nil {
		return nil, nil
	}
	if m.cfg.Fence != nil {
		if err := m.cfg.Fence(cg.FD()); err != nil {
			cg.Close()
			return nil, fmt.Errorf("fencing the browser off the Temporal frontend: %w", err)
		}
	}
	return cg, nil
}

// shutdown kills the browser and returns the final record. It does not
// wait for an operation in flight, which fails once its browser is gone.
func (s *Session) shutdown(reason string) Info {
	info := s.endInfo(reason)
	s.kill()
	return info
}

// ErrCanceled wraps the error of an operation whose call was canceled;
// the session was closed with it.
var ErrCanceled = errors.New("browser call canceled")

// do runs one operation: one at a time, with a timeout, counted as use of
// the session. When ctx (the call) is canceled, the operation stops and
// the session is closed: a canceled run leaves no browser behind.
func (s *Session) do(ctx context.Context, timeout time.Duration, fn func(tab context.Context) error) error {
	s.op.Lock()
	defer s.op.Unlock()
	if !s.alive() {
		_, err := s.m.Get(s.id)
		return err
	}
	s.mark(true)
	defer s.mark(false)
	s.proxy.clearRefusals()
	tab, cancel := context.WithTimeout(s.tab, timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	err := fn(tab)
	if ctx.Err() != nil {
		s.m.end(s, ReasonCanceled)
		return fmt.Errorf("%w; browser session %s was closed: %w", ErrCanceled, s.id, ctx.Err())
	}
	if err != nil && !s.alive() {
		if _, gerr := s.m.Get(s.id); gerr != nil {
			return gerr
		}
	}
	if err != nil && tab.Err() != nil {
		return fmt.Errorf("browser session %s: %w after %s: %w", s.id, context.DeadlineExceeded, timeout, err)
	}
	return err
}

func (s *Session) mark(busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy = busy
	s.info.LastUsedAt = time.Now().UTC()
}

// noteLocation records the page's URL and title after an operation.
func (s *Session) noteLocation(url, title string) {
	s.mu.Lock()
	s.info.URL, s.info.Title = url, title
	info := s.info
	s.mu.Unlock()
	_ = s.m.writeRecord(info)
}

func (s *Session) takeBlocked() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.blocked
	s.blocked = nil
	return err
}

func (s *Session) loadCount() (started, done int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads, s.loadsDone
}

// State is where a session's page is after an operation.
type State struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Status int    `json:"status,omitempty"`
	// Navigated is set when the operation loaded a new document.
	Navigated bool `json:"navigated,omitempty"`
}

// Navigate opens url in the session's tab and waits for it to load.
func (s *Session) Navigate(ctx context.Context, rawURL string, timeout time.Duration) (State, error) {
	u, err := s.guard.CheckNavigation(ctx, rawURL)
	if err != nil {
		return State{}, err
	}
	var st State
	err = s.do(ctx, timeout, func(tab context.Context) error {
		s.takeBlocked()
		resp, navErr := chromedp.Run(tab, chromedp.NavigateResponse(u.String()))
		if blocked := s.takeBlocked(); blocked != nil {
			s.settleBlank(tab)
			return blocked
		}
		if refused := s.proxyRefusal(u.String()); refused != nil {
			s.settleBlank(tab)
			return refused
		}
		if navErr != nil {
			return fmt.Errorf("loading %s: %w", u.Redacted(), navErr)
		}
		if resp != nil {
			st.Status = int(resp.Status)
		}
		var err error
		st, err = s.finalState(tab, st)
		st.Navigated = true
		return err
	})
	return st, err
}

// finalState reads the page's URL and title and checks the final URL
// against the guard (a page can change its location by script).
func (s *Session) finalState(tab context.Context, st State) (State, error) {
	loc, err := chromedp.Run(tab, chromedp.Location())
	if err != nil {
		return st, err
	}
	if err := s.guard.CheckRequest(tab, loc); err != nil {
		s.settleBlank(tab)
		return st, err
	}
	if refused := s.proxyRefusal(loc); refused != nil {
		s.settleBlank(tab)
		return st, refused
	}
	title, err := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(
		`(t => t.length > %[1]d ? t.slice(0, %[1]d) + '…' : t)(document.title)`, maxTitleChars)))
	if err != nil {
		return st, err
	}
	st.URL, st.Title = clipText(loc, maxURLChars), title
	s.noteLocation(loc, title)
	return st, nil
}

// settleBlank leaves a page the guard refused.
func (s *Session) settleBlank(tab context.Context) {
	_ = chromedp.Do(tab, chromedp.Navigate("about:blank"))
	s.noteLocation("about:blank", "")
}

// Snapshot reads the page as text with numbered interactive elements, at
// most maxChars characters of text.
func (s *Session) Snapshot(ctx context.Context, maxChars int, timeout time.Duration) (Page, error) {
	var p Page
	err := s.do(ctx, timeout, func(tab context.Context) error {
		var err error
		p, err = chromedp.Run(tab, chromedp.Evaluate[Page](snapshotJS(maxChars)))
		if err != nil {
			return fmt.Errorf("reading the page: %w", err)
		}
		s.noteLocation(p.URL, p.Title)
		return nil
	})
	return p, err
}

// IsBlocked reports whether err is a guard refusal.
func IsBlocked(err error) (*BlockedError, bool) {
	var b *BlockedError
	ok := errors.As(err, &b)
	return b, ok
}
