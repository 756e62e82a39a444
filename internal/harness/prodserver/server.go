package prodserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/codec"
	"github.com/fenixrt/fenix/internal/harness/childproc"
)

// Options start a server process.
type Options struct {
	Binaries Binaries
	// Env is the container environment of docker-compose.yml's temporal
	// service (DB, POSTGRES_SEEDS, ..., DYNAMIC_CONFIG_FILE_PATH as a host
	// path), with whatever the caller overrides (ports, databases).
	Env map[string]string
	// Dir is the server's root: config/docker.yaml is rendered there.
	Dir string
	// Frontend is where the frontend is dialed to check that the server is
	// up, e.g. 127.0.0.1:<FRONTEND_GRPC_PORT>.
	Frontend string
	// FrontendTLS is the client TLS the health check dials the frontend
	// with (nil: plain), for a configuration that requires it.
	FrontendTLS *tls.Config
	// Output receives the server's log (default: discarded).
	Output io.Writer
	// StartTimeout bounds the wait for a healthy frontend (default 2 min).
	StartTimeout time.Duration
}

// Server is a running temporal-server process (all four services).
type Server struct {
	opts Options

	mu   sync.Mutex
	proc *childproc.Process
}

// Start renders the config, starts temporal-server and waits until its
// frontend answers a health check.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	config, err := RenderConfig(opts.Binaries.ConfigTemplate(), opts.Env)
	if err != nil {
		return nil, err
	}
	configDir := filepath.Join(opts.Dir, "config")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(configDir, "docker.yaml"), config, 0o600); err != nil {
		return nil, err
	}
	s := &Server{opts: opts}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// start runs the binary exactly as the image's entrypoint does.
func (s *Server) start(ctx context.Context) error {
	cmd := exec.Command(s.opts.Binaries.Server, "--root", s.opts.Dir, "--env", "docker", "start")
	cmd.Dir = s.opts.Dir
	cmd.Stdout, cmd.Stderr = s.opts.Output, s.opts.Output
	// Its own process group, so a stop reaches nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	proc, err := childproc.Start(cmd)
	if err != nil {
		return fmt.Errorf("start %s: %w", s.opts.Binaries.Server, err)
	}
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()
	waitCtx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	if err := s.waitHealthy(waitCtx, proc); err != nil {
		proc.Kill()
		return err
	}
	return nil
}

func (s *Server) waitHealthy(ctx context.Context, proc *childproc.Process) error {
	var last error
	for {
		select {
		case <-proc.Done():
			return fmt.Errorf("temporal-server exited during start: %v", proc.Err())
		case <-ctx.Done():
			return fmt.Errorf("temporal-server frontend %s not healthy: %w (last: %v)", s.opts.Frontend, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
		if last = checkHealth(ctx, s.opts.Frontend, s.opts.FrontendTLS); last == nil {
			return nil
		}
	}
}

func checkHealth(ctx context.Context, addr string, tlsConfig *tls.Config) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quietLogger{}, DataConverter: codec.NewDataConverter(nil),
		ConnectionOptions: client.ConnectionOptions{TLS: tlsConfig}})
	if err != nil {
		return err
	}
	defer c.Close()
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = c.CheckHealth(hctx, &client.CheckHealthRequest{})
	return err
}

func (s *Server) process() *childproc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// PID is the running process's ID.
func (s *Server) PID() int { return s.process().PID() }

// Running reports whether the process has not exited.
func (s *Server) Running() bool { return s.process().Running() }

// Stop sends SIGTERM (the server drains and exits) and waits up to grace,
// then SIGKILLs its process group.
func (s *Server) Stop(grace time.Duration) error {
	if err := s.process().Stop(grace); err != nil {
		return fmt.Errorf("temporal-server: %w", err)
	}
	return nil
}

// Kill SIGKILLs the server's process group and waits for it.
func (s *Server) Kill() { s.process().Kill() }

// Restart starts the process again with the same configuration and waits
// until it is healthy. The old process must have exited (Stop or Kill).
func (s *Server) Restart(ctx context.Context) error {
	if s.Running() {
		return errors.New("temporal-server is still running; stop it before restarting")
	}
	return s.start(ctx)
}

// quietLogger drops the health-check client's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
