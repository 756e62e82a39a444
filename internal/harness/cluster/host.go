package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fenixrt/fenix/internal/harness/childproc"
	"github.com/fenixrt/fenix/internal/harness/logbuf"
	"github.com/fenixrt/fenix/tools"
)

// HostConfig describes one worker host.
type HostConfig struct {
	// Name is short ("a", "b"): it names the namespace and the log.
	Name string
	// HostID is the worker's FENIX_HOST_ID; its host queue is
	// fenix-host-<HostID>.
	HostID string
	// Args are extra worker flags; Env extra environment.
	Args []string
	Env  []string
}

// Host is a worker host: its own network namespace, address, data
// directory, workspace and host ID, running the worker binary.
type Host struct {
	Name      string
	ID        string
	Queue     string
	Link      *Link
	DataDir   string
	Workspace string
	// FenixDSN is the Fenix database as this host reaches it (through its
	// link's gateway).
	FenixDSN string

	cluster *Cluster
	cfg     HostConfig
	pgProxy *proxy
	logPath string

	mu     sync.Mutex
	worker *childproc.Process
	logs   *logBuffer
}

// AddHost creates the host's namespace and link and starts its worker.
func (c *Cluster) AddHost(ctx context.Context, cfg HostConfig) (*Host, error) {
	c.mu.Lock()
	index := len(c.hosts)
	c.mu.Unlock()
	octet, err := freeOctet(os.Getpid() + 7*index)
	if err != nil {
		return nil, err
	}
	seq := strings.ReplaceAll(c.ID, "_", "")
	link, err := NewLink(ctx, fmt.Sprintf("%s-%s-%s", namePrefix, strings.ReplaceAll(c.ID, "_", "-"), cfg.Name),
		fmt.Sprintf("fx%s%d", lastN(seq, 9), index), octet)
	if err != nil {
		return nil, err
	}
	h := &Host{
		Name: cfg.Name, ID: cfg.HostID, Queue: tools.HostQueue(cfg.HostID), Link: link,
		DataDir:   filepath.Join(c.cfg.Dir, "host-"+cfg.Name, "data"),
		Workspace: filepath.Join(c.cfg.Dir, "host-"+cfg.Name, "workspace"),
		cluster:   c, cfg: cfg,
		logPath: filepath.Join(c.cfg.Dir, "host-"+cfg.Name+".log"),
	}
	c.mu.Lock()
	c.hosts = append(c.hosts, h)
	c.mu.Unlock()
	for _, d := range []string{h.DataDir, h.Workspace} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// PostgreSQL listens on loopback: the host reaches it through a
	// forwarder on its gateway address, so its link carries that traffic.
	if h.pgProxy, err = startProxy(net.JoinHostPort(link.Gateway, "0"), c.PG.Addr()); err != nil {
		return nil, err
	}
	h.FenixDSN = c.PG.DSN(c.FenixDB, h.pgProxy.Addr())
	if err := h.StartWorker(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// TemporalAddress is the frontend as this host dials it.
func (h *Host) TemporalAddress() string {
	return net.JoinHostPort(h.Link.Gateway, strconv.Itoa(h.cluster.FrontendPort))
}

// StartWorker starts the worker binary in the host's namespace and waits
// until it polls its queues.
func (h *Host) StartWorker(ctx context.Context) error {
	args := []string{
		"-task-queue", "fenix",
		"-data-dir", h.DataDir,
		"-workspace-root", h.Workspace,
		"-host-id", h.ID,
		"-audit-dsn", h.FenixDSN,
		// The production shape: every host shares the context store in
		// PostgreSQL; no directory is shared between hosts.
		"-context-store", h.FenixDSN,
		"-http-addr", "off",
		"-log-format", "text",
		"-log-level", "info",
	}
	cmd := h.Link.Command(h.cluster.cfg.WorkerBinary, append(args, h.cfg.Args...)...)
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+h.TemporalAddress(), "TEMPORAL_NAMESPACE="+h.cluster.Namespace)
	for k, v := range h.cluster.withClusterTLS(h.cluster.Compose.WorkerTLSEnv) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, h.cfg.Env...)
	file, err := os.OpenFile(h.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logs := &logBuffer{}
	cmd.Stdout = io.MultiWriter(file, logs)
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	worker, err := childproc.Start(cmd)
	if err != nil {
		file.Close()
		return fmt.Errorf("host %s: start worker: %w", h.Name, err)
	}
	h.mu.Lock()
	h.worker, h.logs = worker, logs
	h.mu.Unlock()
	go func() {
		<-worker.Done()
		file.Close()
	}()
	deadline := time.After(90 * time.Second)
	for !strings.Contains(logs.String(), "fenix worker started") {
		select {
		case <-worker.Done():
			return fmt.Errorf("host %s: worker exited before it started:\n%s", h.Name, tailString(logs.String(), 3000))
		case <-deadline:
			return fmt.Errorf("host %s: worker did not start within 90s:\n%s", h.Name, tailString(logs.String(), 3000))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// WorkerPID is the worker process's ID (nsenter execs the worker,
// so it is also the PID in the worker's Temporal identity "pid@host@").
func (h *Host) WorkerPID() int {
	if w := h.currentWorker(); w != nil {
		return w.PID()
	}
	return 0
}

// WorkerRunning reports whether the worker process is alive.
func (h *Host) WorkerRunning() bool {
	w := h.currentWorker()
	return w != nil && w.Running()
}

// StopWorker sends SIGTERM and waits up to grace before SIGKILL.
func (h *Host) StopWorker(grace time.Duration) error {
	w := h.currentWorker()
	if w == nil {
		return nil
	}
	if err := w.Stop(grace); err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	return nil
}

func (h *Host) currentWorker() *childproc.Process {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.worker
}

// Logs is what the current worker process has logged.
func (h *Host) Logs() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.logs == nil {
		return ""
	}
	return h.logs.String()
}

// LogPath is the file with every worker log of this host.
func (h *Host) LogPath() string { return h.logPath }

// Cut partitions the host: its link goes down (see Link.Cut).
func (h *Host) Cut(ctx context.Context) error { return h.Link.Cut(ctx) }

// Restore reconnects the host.
func (h *Host) Restore(ctx context.Context) error { return h.Link.Restore(ctx) }

func (h *Host) close(ctx context.Context) {
	_ = h.Link.Restore(ctx) // so a partitioned worker can drain
	_ = h.StopWorker(20 * time.Second)
	if h.pgProxy != nil {
		h.pgProxy.Close()
	}
	_ = h.Link.Delete(ctx)
}

// logBuffer collects a child's output while a test reads it.
type logBuffer = logbuf.Buffer

func lastN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
