// Package browser runs headless Chromium sessions for the browser tools: a
// Manager owns the sessions of one worker host, each a Chromium process in
// its own process group with a fresh profile under the host's data
// directory, every request it makes checked by a Guard. Sessions are
// recorded in the data directory so the operator snapshot lists them and a
// restarted worker knows which ones it lost (and kills what is left of
// their Chromium).
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Session states and the reasons a session ended.
const (
	StatusOpen   = "open"
	StatusClosed = "closed"
	// StatusLost marks a session whose worker died: a restarted worker
	// found its record open and killed what was left of its Chromium.
	StatusLost = "lost"

	ReasonClosed      = "browser_close"
	ReasonCanceled    = "canceled"
	ReasonIdle        = "idle_timeout"
	ReasonShutdown    = "worker_shutdown"
	ReasonSessionEnd  = "session_end"
	ReasonWorkerLost  = "worker_lost"
	ReasonBrowserDied = "browser_exited"
)

// Errors of session lookups; *SessionError wraps them.
var (
	ErrNotFound = errors.New("browser session not found")
	ErrEnded    = errors.New("browser session has ended")
	ErrLimit    = errors.New("too many open browser sessions")
	ErrNoBinary = errors.New("no chromium binary")
)

// SessionError names the session a call could not use and why.
type SessionError struct {
	ID     string
	Status string
	Reason string
	Err    error
}

func (e *SessionError) Error() string {
	switch {
	case errors.Is(e.Err, ErrNotFound):
		return fmt.Sprintf("browser session %s is not known on this host", e.ID)
	case e.Status == StatusLost:
		return fmt.Sprintf("browser session %s was lost: the worker running it died, and its browser with it; open a new session with browser_open", e.ID)
	default:
		return fmt.Sprintf("browser session %s is closed (%s); open a new session with browser_open", e.ID, describeReason(e.Reason))
	}
}

func (e *SessionError) Unwrap() error { return e.Err }

func describeReason(r string) string {
	switch r {
	case ReasonClosed:
		return "closed with browser_close"
	case ReasonCanceled:
		return "the run that used it was canceled"
	case ReasonIdle:
		return "idle for longer than the idle timeout"
	case ReasonShutdown:
		return "the worker shut down"
	case ReasonSessionEnd:
		return "its session ended"
	case ReasonBrowserDied:
		return "the browser process exited"
	}
	return r
}

// Info describes a session; it is also the session's record on disk.
type Info struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id,omitempty"`
	// RunID is the workflow ID of the run that opened the session.
	RunID      string     `json:"run_id,omitempty"`
	CallID     string     `json:"call_id,omitempty"`
	Status     string     `json:"status"`
	Reason     string     `json:"reason,omitempty"`
	URL        string     `json:"url,omitempty"`
	Title      string     `json:"title,omitempty"`
	PID        int        `json:"pid,omitempty"`
	Profile    string     `json:"profile"`
	StartedAt  time.Time  `json:"started_at"`
	LastUsedAt time.Time  `json:"last_used_at"`
	ClosedAt   *time.Time `json:"closed_at,omitempty"`
}

// Config configures a Manager.
type Config struct {
	// Dir holds the session records and profiles (the host's data
	// directory's browser/ subdirectory).
	Dir string
	// ExecPath is the Chromium binary; found on PATH when empty.
	ExecPath string
	Guard    Guard
	// IdleTimeout closes a session no call used for this long (default
	// 10m).
	IdleTimeout time.Duration
	// MaxOpen caps open sessions per host (default 8).
	MaxOpen int
	// KeepRecords of ended sessions stay on disk (default 200).
	KeepRecords int
	Logger      *slog.Logger
	// Fence, when set, is attached to each session's cgroup before
	// Chromium starts in it (confine.Fence.Apply): the guard proxy
	// carries every connection Chromium makes, and the fence refuses the
	// Temporal frontend to any that would not go through it.
	Fence func(cgroupFD int) error
}

// Manager owns the browser sessions of one host.
type Manager struct {
	cfg      Config
	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
	stop     chan struct{}
	done     chan struct{}
}

// FindChromium returns the Chromium binary on PATH, or ErrNoBinary.
func FindChromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w on PATH (looked for chromium, chromium-browser, google-chrome, headless_shell): install Debian's chromium", ErrNoBinary)
}

// NewManager prepares the directory and reaps what a worker that died on
// it left behind: Chromium processes still using its profiles are killed,
// their profiles removed, and records still open are marked lost.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Dir == "" {
		return nil, errors.New("browser manager has no directory")
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.MaxOpen <= 0 {
		cfg.MaxOpen = 8
	}
	if cfg.KeepRecords <= 0 {
		cfg.KeepRecords = 200
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, d := range []string{cfg.recordDir(), cfg.profileDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("browser sessions directory: %w", err)
		}
	}
	m := &Manager{cfg: cfg, sessions: map[string]*Session{}, stop: make(chan struct{}), done: make(chan struct{})}
	m.reapLeftovers()
	go m.janitor()
	return m, nil
}

func (c Config) recordDir() string  { return filepath.Join(c.Dir, "sessions") }
func (c Config) profileDir() string { return filepath.Join(c.Dir, "profiles") }

// ProfilePrefix is the directory every session profile lives under.
func (m *Manager) ProfilePrefix() string { return m.cfg.profileDir() + string(filepath.Separator) }

func (m *Manager) reapLeftovers() {
	prefix := m.ProfilePrefix()
	if n := killUsingProfile(prefix); n > 0 {
		m.cfg.Logger.Warn("killed browser processes a lost worker left running", "count", n)
	}
	for _, info := range m.records() {
		if info.Status != StatusOpen {
			continue
		}
		now := time.Now().UTC()
		info.Status, info.Reason, info.ClosedAt = StatusLost, ReasonWorkerLost, &now
		if err := m.writeRecord(info); err != nil {
			m.cfg.Logger.Warn("cannot mark browser session lost", "id", info.ID, "error", err)
		}
		m.cfg.Logger.Warn("browser session was lost with its worker", "id", info.ID, "url", info.URL)
	}
	entries, _ := os.ReadDir(m.cfg.profileDir())
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(m.cfg.profileDir(), e.Name()))
	}
}

// records reads every session record, newest first.
func (m *Manager) records() []Info {
	entries, err := os.ReadDir(m.cfg.recordDir())
	if err != nil {
		return nil
	}
	var out []Info
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(m.cfg.recordDir(), e.Name()))
		if err != nil {
			continue
		}
		var info Info
		if json.Unmarshal(raw, &info) == nil && info.ID != "" {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return b.StartedAt.Compare(a.StartedAt) })
	return out
}

func (m *Manager) writeRecord(info Info) error {
	raw, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	file := filepath.Join(m.cfg.recordDir(), info.ID+".json")
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// pruneRecords keeps the newest KeepRecords ended sessions.
func (m *Manager) pruneRecords() {
	ended := 0
	for _, info := range m.records() {
		if info.Status == StatusOpen {
			continue
		}
		if ended++; ended > m.cfg.KeepRecords {
			_ = os.Remove(filepath.Join(m.cfg.recordDir(), info.ID+".json"))
		}
	}
}

// OpenSpec identifies a new session.
type OpenSpec struct {
	ID             string
	ConversationID string
	RunID          string
	CallID         string
}

// Open starts Chromium for a new session. The browser lives until Close,
// not until ctx ends; ctx bounds only the start.
func (m *Manager) Open(ctx context.Context, spec OpenSpec) (*Session, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the browser manager is shut down")
	}
	if len(m.sessions) >= m.cfg.MaxOpen {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %d are open on this host (close one with browser_close)", ErrLimit, len(m.sessions))
	}
	// Reserve the slot while Chromium starts.
	m.sessions[spec.ID] = nil
	m.mu.Unlock()

	s, err := m.start(ctx, spec)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil || m.closed {
		delete(m.sessions, spec.ID)
		if err == nil {
			s.shutdown(ReasonShutdown)
			return nil, errors.New("the browser manager shut down while the browser started")
		}
		return nil, err
	}
	m.sessions[spec.ID] = s
	return s, nil
}

// Get returns an open session, or a *SessionError that says whether it is
// unknown, closed or lost.
func (m *Manager) Get(id string) (*Session, error) {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s != nil {
		if s.alive() {
			return s, nil
		}
		m.end(s, ReasonBrowserDied)
	}
	raw, err := os.ReadFile(filepath.Join(m.cfg.recordDir(), id+".json"))
	if err != nil {
		return nil, &SessionError{ID: id, Err: ErrNotFound}
	}
	var info Info
	if err := json.Unmarshal(raw, &info); err != nil || info.Status == StatusOpen {
		// An open record with no live session: its worker is gone.
		return nil, &SessionError{ID: id, Status: StatusLost, Reason: ReasonWorkerLost, Err: ErrEnded}
	}
	return nil, &SessionError{ID: id, Status: info.Status, Reason: info.Reason, Err: ErrEnded}
}

// Close ends a session and returns its final record.
func (m *Manager) Close(id, reason string) (Info, error) {
	s, err := m.Get(id)
	if err != nil {
		return Info{}, err
	}
	return m.end(s, reason), nil
}

// end closes s once and records why.
func (m *Manager) end(s *Session, reason string) Info {
	m.mu.Lock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
	m.mu.Unlock()
	info := s.shutdown(reason)
	if err := m.writeRecord(info); err != nil {
		m.cfg.Logger.Warn("cannot record closed browser session", "id", s.id, "error", err)
	}
	m.pruneRecords()
	return info
}

// CloseWhere closes the open sessions match selects.
func (m *Manager) CloseWhere(match func(Info) bool, reason string) []Info {
	var out []Info
	for _, s := range m.open() {
		if match(s.Info()) {
			out = append(out, m.end(s, reason))
		}
	}
	return out
}

func (m *Manager) open() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// List describes the open sessions, newest first.
func (m *Manager) List() []Info {
	var out []Info
	for _, s := range m.open() {
		out = append(out, s.Info())
	}
	slices.SortFunc(out, func(a, b Info) int { return b.StartedAt.Compare(a.StartedAt) })
	return out
}

// Close ends every session and stops the idle janitor. Call it on worker
// shutdown.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	close(m.stop)
	<-m.done
	for _, s := range m.open() {
		m.end(s, ReasonShutdown)
	}
	killUsingProfile(m.ProfilePrefix())
}

// janitor closes idle sessions and sessions whose browser died.
func (m *Manager) janitor() {
	defer close(m.done)
	every := min(max(m.cfg.IdleTimeout/4, 100*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			for _, s := range m.open() {
				switch {
				case !s.alive():
					m.end(s, ReasonBrowserDied)
				case s.idleSince(now) > m.cfg.IdleTimeout:
					m.cfg.Logger.Info("closing idle browser session", "id", s.id, "idle_timeout", m.cfg.IdleTimeout)
					m.end(s, ReasonIdle)
				}
			}
		}
	}
}

// Guard is the guard every session's requests pass.
func (m *Manager) Guard() Guard { return m.cfg.Guard }
