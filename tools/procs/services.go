package procs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/netguard"
)

// Service statuses.
const (
	StatusRunning = "running"
	StatusExited  = "exited"
	StatusStopped = "stopped"
	StatusKilled  = "killed"
)

// Errors of the service manager, for errors.Is.
var (
	ErrNotFound     = errors.New("not found")
	ErrLimitReached = errors.New("limit reached")
	ErrClosed       = errors.New("manager is closed")
	ErrPortInUse    = errors.New("port in use")
)

// ServiceSpec describes a background service to start.
type ServiceSpec struct {
	ID          string
	CommandLine string
	Dir         string
	Env         []string
	// Port, when > 0, is the loopback port the service listens on; the
	// reverse proxy forwards /proxy/<ID>/ to it.
	Port   int
	Limits Limits
	// User, when set, is who the service runs as (Spec.User).
	User *User
	// Prelude is run before CommandLine in its shell (Spec.Prelude).
	Prelude string
	// Confiner, Workspace and ReadOnly confine the service (Spec.Confiner,
	// Spec.ReadOnly); its ConversationID is its SignalGroup.
	Confiner       *confine.Confiner
	Workspace      string
	ReadOnly       []string
	CallID         string
	ConversationID string
	// NetworkAsk is Spec.NetworkAsk: the call that started the service
	// answers for it while its run lasts.
	NetworkAsk netguard.Asker
}

// ServiceInfo is a snapshot of one service.
type ServiceInfo struct {
	ID             string     `json:"process_run_id"`
	CommandLine    string     `json:"command_line"`
	Dir            string     `json:"dir"`
	Port           int        `json:"port,omitempty"`
	PID            int        `json:"pid"`
	Status         string     `json:"status"`
	ExitStatus     *int       `json:"exit_status,omitempty"`
	Signal         string     `json:"signal,omitempty"`
	Reason         string     `json:"reason,omitempty"`
	StartedAt      time.Time  `json:"started_at"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
	LogPath        string     `json:"log_path"`
	OutputBytes    int64      `json:"output_bytes"`
	CallID         string     `json:"call_id,omitempty"`
	ConversationID string     `json:"conversation_id,omitempty"`
}

// ServicesConfig configures OpenServices.
type ServicesConfig struct {
	// LogDir receives one capped log file per service.
	LogDir string
	// KeepBytes of output are kept in memory per service (default 256 KiB).
	KeepBytes int
	// LogMaxBytes caps each log file (default 16 MiB).
	LogMaxBytes int64
	// MaxRunning caps concurrently running services (default 16).
	MaxRunning int
	// MaxFinished finished services are remembered for listing (default 64).
	MaxFinished int
	// KillGrace is the SIGTERM-to-SIGKILL grace on stop (default 2s).
	KillGrace time.Duration
	// Logger receives what OpenServices reaped from a lost worker (default
	// slog.Default()).
	Logger *slog.Logger
}

// Services supervises the process runs of one host: background services
// started by process_exec. Each service has a
// record next to its log (<LogDir>/<id>.json), written as "running" with
// its process group's identity before the service runs and rewritten when
// it ends. OpenServices reaps the services a lost worker left running (it
// kills what is left of their process groups and closes them as
// stopped/worker_lost) and lists the services of earlier workers as ended.
type Services struct {
	cfg      ServicesConfig
	log      *slog.Logger
	store    recordStore[serviceRecord]
	mu       sync.Mutex
	services map[string]*service
	closed   bool
	// recorders counts the goroutines recording services' ends.
	recorders sync.WaitGroup
}

type service struct {
	spec    ServiceSpec
	proc    *Process // nil for a service of an earlier worker
	ended   *ServiceInfo
	logPath string
	proxy   *httputil.ReverseProxy
	// namespaced is whether it runs in its workspace's network namespace
	// (its port is that workspace's).
	namespaced bool
	// recorded is set once the final record is on disk (guarded by the
	// manager's mu).
	recorded bool
}

// serviceRecord is a service's on-disk record.
type serviceRecord struct {
	ServiceInfo
	Group *GroupIdentity `json:"group,omitempty"`
}

// OpenServices creates the log directory and recovers the process runs of
// earlier workers (see Services).
func OpenServices(cfg ServicesConfig) (*Services, error) {
	if cfg.LogDir == "" {
		return nil, errors.New("service manager needs a log directory")
	}
	if cfg.KeepBytes <= 0 {
		cfg.KeepBytes = 256 << 10
	}
	if cfg.LogMaxBytes <= 0 {
		cfg.LogMaxBytes = 16 << 20
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 16
	}
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = 64
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	store, err := openRecordStore[serviceRecord](cfg.LogDir, "process run", "process_run_id")
	if err != nil {
		return nil, err
	}
	m := &Services{cfg: cfg, log: cfg.Logger, store: store, services: map[string]*service{}}
	m.recover()
	return m, nil
}

func (m *Services) logPathOf(id string) string { return m.store.path(id, ".log") }

func (r serviceRecord) recordID() string { return r.ID }

func (r serviceRecord) runningGroup() (*GroupIdentity, bool) {
	return r.Group, r.Status == StatusRunning
}

// closeLost closes and persists the record of a service whose worker is
// gone.
func (m *Services) closeLost(rec serviceRecord) (serviceRecord, error) {
	rec.Status = StatusStopped
	rec.Reason = ReasonWorkerLost
	rec.ExitStatus = nil
	rec.Signal = ""
	now := time.Now().UTC()
	rec.EndedAt = &now
	rec.Group = nil
	return rec, m.store.save(rec)
}

// recover lists the services of earlier workers as ended, closing those
// a lost worker left running (see recordStore.recover).
func (m *Services) recover() {
	recs := m.store.recover(m.log, m.closeLost)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rec := range recs {
		info := rec.ServiceInfo
		info.LogPath = m.logPathOf(info.ID)
		if st, err := os.Stat(info.LogPath); err == nil {
			info.OutputBytes = st.Size()
		}
		s := &service{
			spec: ServiceSpec{
				ID: info.ID, CommandLine: info.CommandLine, Dir: info.Dir, Port: info.Port,
				CallID: info.CallID, ConversationID: info.ConversationID,
			},
			ended:    &info,
			logPath:  info.LogPath,
			recorded: true,
		}
		if info.Port > 0 {
			// An ended run: no process, so no namespace of its own.
			s.proxy = newServiceProxy(info.ID, info.Port, 0)
		}
		m.services[info.ID] = s
	}
	m.forgetOldLocked()
}

// recordEnd persists a service's final state once it ends.
func (m *Services) recordEnd(s *service) {
	defer m.recorders.Done()
	<-s.proc.Done()
	if err := m.store.save(serviceRecord{ServiceInfo: s.info()}); err != nil {
		m.log.Warn("process run record not persisted", "process_run_id", s.spec.ID, "error", err)
	}
	m.mu.Lock()
	s.recorded = true
	m.mu.Unlock()
}

// Start launches a service. It refuses a port that something already
// listens on, so the proxy only ever reaches what the service itself binds.
func (m *Services) Start(spec ServiceSpec) (ServiceInfo, error) {
	if !resourceIDPattern.MatchString(spec.ID) {
		return ServiceInfo{}, fmt.Errorf("process run ID %q is malformed", spec.ID)
	}
	if spec.Port < 0 || spec.Port > 65535 {
		return ServiceInfo{}, fmt.Errorf("port %d is not a TCP port", spec.Port)
	}
	// A service in its workspace's network namespace listens on that
	// workspace's loopback: the host's port and other workspaces' services
	// are no conflict.
	namespaced := spec.Confiner.NetworkPerWorkspace()
	if spec.Port > 0 && !namespaced {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(spec.Port)))
		if err != nil {
			return ServiceInfo{}, fmt.Errorf("%w: port %d on 127.0.0.1 is already taken (%v): choose a free port for the service", ErrPortInUse, spec.Port, err)
		}
		l.Close()
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ServiceInfo{}, ErrClosed
	}
	if _, dup := m.services[spec.ID]; dup {
		return ServiceInfo{}, fmt.Errorf("process run %q already exists", spec.ID)
	}
	running := 0
	for _, s := range m.services {
		if s.running() {
			running++
		}
		if spec.Port > 0 && s.spec.Port == spec.Port && s.running() && s.namespaced == namespaced && (!namespaced || s.spec.Workspace == spec.Workspace) {
			return ServiceInfo{}, fmt.Errorf("%w: port %d is declared by running process run %s", ErrPortInUse, spec.Port, s.spec.ID)
		}
	}
	if running >= m.cfg.MaxRunning {
		return ServiceInfo{}, fmt.Errorf("%w: %d background services are already running on this host (the limit): stop one with process_stop first", ErrLimitReached, running)
	}
	logPath := m.logPathOf(spec.ID)
	var s *service
	_, err := Start(Spec{
		CommandLine:   spec.CommandLine,
		Prelude:       spec.Prelude,
		Dir:           spec.Dir,
		Env:           spec.Env,
		Limits:        spec.Limits,
		User:          spec.User,
		Confiner:      spec.Confiner,
		Workspace:     spec.Workspace,
		ReadOnly:      spec.ReadOnly,
		SignalGroup:   spec.ConversationID,
		NetworkAsk:    spec.NetworkAsk,
		KeepBytes:     m.cfg.KeepBytes,
		CombineOutput: true,
		LogPath:       logPath,
		LogMaxBytes:   m.cfg.LogMaxBytes,
		WatchInterval: 250 * time.Millisecond,
		BeforeRun: func(p *Process) error {
			s = &service{spec: spec, proc: p, logPath: logPath, namespaced: namespaced}
			ident := p.Identity()
			return m.store.save(serviceRecord{ServiceInfo: s.info(), Group: &ident})
		},
	})
	if err != nil {
		return ServiceInfo{}, err
	}
	if spec.Port > 0 {
		s.proxy = newServiceProxy(spec.ID, spec.Port, s.proc.PID())
	}
	m.services[spec.ID] = s
	m.recorders.Add(1)
	go m.recordEnd(s)
	m.forgetOldLocked()
	return s.info(), nil
}

func (s *service) running() bool { return s.proc != nil && s.proc.Running() }

func (s *service) startedAt() time.Time {
	if s.proc == nil {
		return s.ended.StartedAt
	}
	return s.proc.StartedAt()
}

// forgetOldLocked drops the oldest finished services beyond MaxFinished,
// with their logs and records.
func (m *Services) forgetOldLocked() {
	var finished []*service
	for _, s := range m.services {
		if !s.running() && s.recorded {
			finished = append(finished, s)
		}
	}
	if len(finished) <= m.cfg.MaxFinished {
		return
	}
	sort.Slice(finished, func(i, j int) bool { return finished[i].startedAt().Before(finished[j].startedAt()) })
	for _, s := range finished[:len(finished)-m.cfg.MaxFinished] {
		delete(m.services, s.spec.ID)
		os.Remove(s.logPath)
		m.store.remove(s.spec.ID)
	}
}

func (m *Services) lookup(id string) (*service, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.services[id]
	if !ok {
		return nil, fmt.Errorf("%w: process run %q is not known on this host", ErrNotFound, id)
	}
	return s, nil
}

// Info describes one service.
func (m *Services) Info(id string) (ServiceInfo, error) {
	s, err := m.lookup(id)
	if err != nil {
		return ServiceInfo{}, err
	}
	return s.info(), nil
}

// Output returns the last at most max bytes of a service's output, the
// stream offset of the first byte and the total output so far.
func (m *Services) Output(id string, max int) ([]byte, int64, int64, error) {
	s, err := m.lookup(id)
	if err != nil {
		return nil, 0, 0, err
	}
	if s.proc == nil {
		return tailFile(s.logPath, max, m.cfg.KeepBytes)
	}
	data, start := s.proc.Stdout().Last(max)
	return data, start, s.proc.Stdout().Total(), nil
}

// tailFile reads the last max (at most keep) bytes of an earlier worker's
// service log, their offset and the log's size. A missing log is empty.
func tailFile(path string, max, keep int) ([]byte, int64, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, 0, nil
	}
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	size := st.Size()
	n := min(size, int64(keep))
	if max > 0 {
		n = min(n, int64(max))
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, 0, err
	}
	return buf, size - n, size, nil
}

// WaitReady waits until the service accepts TCP connections on its port,
// exits, or timeout passes. It reports whether the port answered.
func (m *Services) WaitReady(ctx context.Context, id string, timeout time.Duration) (bool, error) {
	s, err := m.lookup(id)
	if err != nil {
		return false, err
	}
	if s.spec.Port == 0 || s.proc == nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.spec.Port))
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		// Inside the service's network namespace, where a sandboxed one
		// listens.
		conn, err := confine.DialIn(ctx, s.proc.PID(), "tcp", addr)
		if err == nil {
			conn.Close()
			return true, nil
		}
		select {
		case <-s.proc.Done():
			return false, nil
		case <-ctx.Done():
			return false, nil
		case <-ticker.C:
		}
	}
}

// WaitExit waits up to d for the service to exit and reports whether it did.
func (m *Services) WaitExit(ctx context.Context, id string, d time.Duration) (bool, error) {
	s, err := m.lookup(id)
	if err != nil {
		return false, err
	}
	if s.proc == nil {
		return true, nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-s.proc.Done():
		return true, nil
	case <-timer.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// List describes every known service, oldest first.
func (m *Services) List() []ServiceInfo {
	m.mu.Lock()
	list := make([]*service, 0, len(m.services))
	for _, s := range m.services {
		list = append(list, s)
	}
	m.mu.Unlock()
	out := make([]ServiceInfo, 0, len(list))
	for _, s := range list {
		out = append(out, s.info())
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Stop kills a service's process group (SIGTERM, then SIGKILL after the
// grace) and returns its final state. Stopping a finished service is a no-op.
func (m *Services) Stop(id string) (ServiceInfo, error) {
	s, err := m.lookup(id)
	if err != nil {
		return ServiceInfo{}, err
	}
	if s.proc != nil {
		s.proc.Stop(ReasonStopped, m.cfg.KillGrace)
	}
	return s.info(), nil
}

// Close stops every running service, in parallel, refuses new ones and
// returns once their final records are written.
func (m *Services) Close() {
	m.mu.Lock()
	m.closed = true
	list := make([]*service, 0, len(m.services))
	for _, s := range m.services {
		if s.proc != nil {
			list = append(list, s)
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.proc.Stop(ReasonShutdown, m.cfg.KillGrace)
		}()
	}
	wg.Wait()
	m.recorders.Wait()
}

func (s *service) info() ServiceInfo {
	if s.proc == nil {
		return *s.ended
	}
	info := ServiceInfo{
		ID:             s.spec.ID,
		CommandLine:    s.spec.CommandLine,
		Dir:            s.spec.Dir,
		Port:           s.spec.Port,
		PID:            s.proc.PID(),
		Status:         StatusRunning,
		StartedAt:      s.proc.StartedAt(),
		LogPath:        s.logPath,
		OutputBytes:    s.proc.Stdout().Total(),
		CallID:         s.spec.CallID,
		ConversationID: s.spec.ConversationID,
	}
	if s.proc.Running() {
		return info
	}
	exit := s.proc.Exit()
	code := exit.Code
	info.ExitStatus = &code
	info.Signal = exit.Signal
	info.Reason = exit.Reason
	ended := exit.EndedAt
	info.EndedAt = &ended
	switch exit.Reason {
	case "":
		info.Status = StatusExited
	case ReasonStopped, ReasonShutdown:
		info.Status = StatusStopped
	default:
		info.Status = StatusKilled
	}
	return info
}

// ProxyPath is where the reverse proxy serves a service.
func ProxyPath(id string) string { return "/proxy/" + id + "/" }

// newServiceProxy forwards to port in the network namespace of the
// service whose shell is pid.
func newServiceProxy(id string, port, pid int) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	prefix := strings.TrimSuffix(ProxyPath(id), "/")
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.EscapedPath(), prefix)
			if rest == "" {
				rest = "/"
			}
			pr.Out.URL.RawPath = rest
			if unescaped, err := url.PathUnescape(rest); err == nil {
				pr.Out.URL.Path = unescaped
			} else {
				pr.Out.URL.Path = rest
			}
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
				return confine.DialIn(ctx, pid, network, address)
			},
			MaxIdleConns:    4,
			IdleConnTimeout: 30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, fmt.Sprintf("process run %s on port %d did not answer: %v", id, port, err), http.StatusBadGateway)
		},
	}
}

// ProxyHandler serves /proxy/<process_run_id>/... by forwarding to the
// service's loopback port while the service runs.
func (m *Services) ProxyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/proxy/")
		id, _, hasSlash := strings.Cut(rest, "/")
		if !ok || id == "" {
			http.Error(w, "not found: service URLs look like /proxy/<process_run_id>/", http.StatusNotFound)
			return
		}
		s, err := m.lookup(id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		if s.proxy == nil {
			http.Error(w, fmt.Sprintf("process run %s declared no port", id), http.StatusNotFound)
			return
		}
		if !hasSlash {
			target := ProxyPath(id)
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		if !s.running() {
			http.Error(w, fmt.Sprintf("process run %s is not running (%s)", id, s.info().Status), http.StatusBadGateway)
			return
		}
		s.proxy.ServeHTTP(w, r)
	})
}
