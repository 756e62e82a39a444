package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/internal/mcpframe"
	"github.com/fenixrt/fenix/proctree"
)

// stderrTail is how much of a stdio server's stderr is kept for reports.
const stderrTail = 2048

// transport builds the server's transport, which counts the
// notifications/cancelled the client writes; proc is set for stdio
// servers.
func (s *server) transport(ctx context.Context) (sdk.Transport, *process, error) {
	inner, proc, err := s.innerTransport(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, streamable := inner.(*sdk.StreamableClientTransport); streamable {
		// The SDK opens a Streamable HTTP session's standalone stream
		// (where a server sends what belongs to no request: list changes,
		// questions) only on its own connection type, which a wrapper
		// hides; the session's HTTP client counts the cancels instead.
		return inner, proc, nil
	}
	return &recordingTransport{inner: inner, onCancel: func() { s.cancels.Add(1) }}, proc, nil
}

func (s *server) innerTransport(ctx context.Context) (sdk.Transport, *process, error) {
	switch s.cfg.Type {
	case TransportHTTP, TransportSSE:
		cfg := s.cfg
		if cfg.HeadersHelper != "" {
			helped, err := s.helperHeaders(ctx)
			if err != nil {
				return nil, nil, err
			}
			cfg.Headers = maps.Clone(cfg.Headers)
			if cfg.Headers == nil {
				cfg.Headers = map[string]string{}
			}
			maps.Copy(cfg.Headers, helped)
		}
		client, err := httpClient(cfg, s.m.opts.Net)
		if err != nil {
			return nil, nil, err
		}
		if s.cfg.Type == TransportSSE {
			if store := s.m.opts.Credentials; store != nil {
				handler, err := oauthHandler(s.cfg, store, s.m.opts.Net)
				if err != nil {
					return nil, nil, err
				}
				client.Transport = &authorizingTransport{base: client.Transport, handler: handler}
			}
			// The stream's first event names where messages are posted;
			// the client refuses one on another origin (see headerTransport).
			return &sseTransport{inner: &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: client, MaxEventSize: MaxMessageBytes}}, nil, nil
		}
		client.Transport.(*headerTransport).onCancel = func() { s.cancels.Add(1) }
		t := &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client, MaxRetries: 2}
		if store := s.m.opts.Credentials; store != nil {
			handler, err := oauthHandler(s.cfg, store, s.m.opts.Net)
			if err != nil {
				return nil, nil, err
			}
			t.OAuthHandler = handler
		}
		return t, nil, nil
	}
	cmd, err := s.command()
	if err != nil {
		return nil, nil, err
	}
	p := s.process(cmd)
	return &commandTransport{proc: p, terminate: 2 * time.Second, where: fmt.Sprintf("from MCP server %q by Fenix", s.cfg.Name), logger: s.logger()}, p, nil
}

// MaxMessageBytes bounds one JSON-RPC message read from a stdio server:
// the go-sdk's default line limit, kept because results may be large
// (images as base64; they go to the context store). A longer message is
// dropped and its call fails naming the limit; the session goes on.
const MaxMessageBytes = sdk.DefaultMaxLineLength

// commandTransport is the SDK's CommandTransport with the server's stdout
// behind a line guard (mcpframe): the SDK's reader ends the session, and
// every call on it, at the first message over its line limit.
type commandTransport struct {
	proc      *process
	terminate time.Duration
	where     string
	logger    *slog.Logger
}

func (t *commandTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.proc.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.proc.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.proc.start(); err != nil {
		return nil, err
	}
	// Closing the connection closes stdin, never stdout (cmd.Wait does).
	r := mcpframe.NewReader(stdout, MaxMessageBytes, nil)
	conn, err := (&sdk.IOTransport{
		Reader:        io.NopCloser(r),
		Writer:        &childStdin{proc: t.proc, stdin: stdin, terminate: t.terminate},
		MaxLineLength: mcpframe.SDKLineLimit(MaxMessageBytes),
	}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return mcpframe.NewConn(conn, r, t.where, t.logger), nil
}

// childStdin is the server's stdin. Close ends the server as the stdio
// transport's shutdown says: close its input, wait for it to exit, then
// SIGTERM, then SIGKILL.
type childStdin struct {
	proc      *process
	stdin     io.WriteCloser
	terminate time.Duration
}

func (c *childStdin) Write(p []byte) (int, error) { return c.stdin.Write(p) }

func (c *childStdin) Close() error {
	if err := c.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.proc.wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(c.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.proc.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := c.proc.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return fmt.Errorf("MCP server process %d did not exit after SIGKILL", c.proc.cmd.Process.Pid)
}

// command is the stdio server's child process: the configured command and
// arguments, in its cwd (default: the workspace), with only the
// environment its config names. PATH is the one exception when the config
// does not set it, so `npx`, `node` and `uvx` resolve as in Claude Code.
func (s *server) command() (*exec.Cmd, error) {
	env := map[string]string{}
	for k, v := range s.cfg.Env {
		env[k] = v
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = absolutePATH(os.Getenv("PATH"))
	}
	path, err := lookPath(s.cfg.Command, env["PATH"], s.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", s.cfg.Command, err)
	}
	dir := s.workspace()
	if s.cfg.Cwd != "" {
		dir = s.cfg.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.cfg.Dir, dir)
		}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("working directory %q is not a directory", dir)
	}
	cmd := exec.Command(path, s.cfg.Args...)
	cmd.Dir = dir
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	return cmd, nil
}

// absolutePATH is the worker's PATH as a server gets it: without relative
// entries (".", "node_modules/.bin", an empty one, which a shell reads as
// "."), which would name the workspace the server runs in, where the
// agent writes, for its program and every program it starts; the
// system's directories when none is left.
func absolutePATH(path string) string {
	var kept []string
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		kept = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
	}
	return strings.Join(kept, string(filepath.ListSeparator))
}

// lookPath resolves a command against the server's PATH (not the
// worker's); a relative path with a slash is relative to the config's
// directory.
func lookPath(command, pathList, dir string) (string, error) {
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) {
			command = filepath.Join(dir, command)
		}
		if info, err := os.Stat(command); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not an executable file", command)
		}
		return command, nil
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue // names the workspace the server runs in, or the worker's
		}
		candidate := filepath.Join(d, command)
		if info, err := os.Stat(candidate); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("not found in PATH %q", pathList)
}

// process is a stdio server's child process and what it started: the
// tree lives in a cgroup of its own where one can be made, so that
// stopping the server ends the node a `npx` started too, and a
// Launcher's fence holds for all of it.
type process struct {
	cmd       *exec.Cmd
	stderr    *tailBuffer
	launcher  Launcher
	workspace string
	// readOnly are the paths in workspace it may not write
	// (Options.ReadOnly).
	readOnly []string

	cgroup     *proctree.Cgroup
	release    func()
	stderrDone chan struct{} // closed when stderr reached its end
	waitOnce   sync.Once
	waitErr    error
}

// process is cmd to be started for s: in its workspace, through the
// manager's launcher, with its read-only paths.
func (s *server) process(cmd *exec.Cmd) *process {
	p := &process{cmd: cmd, stderr: &tailBuffer{max: stderrTail}, launcher: s.m.opts.Launcher, workspace: s.workspace()}
	if s.m.opts.ReadOnly != nil && p.workspace != "" {
		p.readOnly = s.m.opts.ReadOnly(p.workspace)
	}
	return p
}

// start starts the server: in its cgroup, through the launcher when
// there is one. Its stderr is a pipe read here, not by os/exec, so that
// Wait returns when the server exits even if a process it left behind
// holds stderr open; cleanUp then ends that process.
func (p *process) start() error {
	if p.cmd.SysProcAttr == nil {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cg, err := proctree.New(proctree.Parent(), proctree.PrefixMCP); err == nil {
		p.cgroup = cg
		cg.Attach(p.cmd.SysProcAttr)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		p.cleanUp()
		return err
	}
	p.cmd.Stderr = stderrW
	if p.launcher != nil {
		p.release, err = p.launcher.StartCommand(p.cmd, confine.CommandOptions{Workspace: p.workspace, ReadOnly: p.readOnly})
		if err != nil {
			err = fmt.Errorf("starting it confined: %w", err)
		}
	} else {
		err = p.cmd.Start()
	}
	stderrW.Close()
	if err != nil {
		stderrR.Close()
		p.cleanUp()
		return err
	}
	// A server goes before the worker when memory runs out.
	_ = proctree.PreferOOMKill(p.cmd.Process.Pid)
	p.stderrDone = make(chan struct{})
	go func() {
		_, _ = io.Copy(p.stderr, stderrR)
		stderrR.Close()
		close(p.stderrDone)
	}()
	return nil
}

// stderrDrain is how long wait lets a server's stderr drain once what it
// left behind was ended (without a cgroup, a leftover may hold it open).
const stderrDrain = 2 * time.Second

// wait reaps the server once, then ends what it left behind.
func (p *process) wait() error {
	p.waitOnce.Do(func() {
		p.waitErr = p.cmd.Wait()
		p.cleanUp()
		select {
		case <-p.stderrDone:
		case <-time.After(stderrDrain):
		}
	})
	return p.waitErr
}

func (p *process) cleanUp() {
	if p.cgroup != nil {
		p.cgroup.Close()
	}
	if p.release != nil {
		p.release()
	}
}

func (p *process) pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *process) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.wait()
	}
}

// stderrNote is the server's stderr, its start and its tail, for error
// messages; a confined server refused a write says why it may be.
func (p *process) stderrNote() string {
	text := strings.TrimSpace(p.stderr.String())
	if text == "" {
		return ""
	}
	note := "; stderr: " + text
	if p.launcher != nil && refusedWrite.MatchString(text) {
		note += " (" + confinedServerNote + ")"
	}
	return note
}

// refusedWrite is how programs report a write their confinement refused.
var refusedWrite = regexp.MustCompile(`EACCES|EROFS|EPERM|[Pp]ermission denied|[Rr]ead-only file system|[Oo]peration not permitted`)

// confinedServerNote says what a stdio server may not write.
const confinedServerNote = "a stdio server runs confined as the hooks are: it may not write the worker's data directory or " +
	"the code the hooks load (~/.local/bin, a python user site, git's and npm's configuration), and, unless the worker runs " +
	"as root, may not make a new entry directly in a directory leading to one (the home directory, ~/.local, ~/.config); " +
	"give it a directory of its own in its env in .mcp.json, such as HOME or TMPDIR"

// tailBuffer keeps the first headBytes and the last max bytes written to
// it: a program's first error line (a Node stack's "Error: EACCES: …")
// and how it ended.
type tailBuffer struct {
	mu        sync.Mutex
	max       int
	head, buf []byte
	dropped   bool
}

const headBytes = 512

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := headBytes - len(b.head); room > 0 && b.max > headBytes {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		if n == len(p) {
			return len(p), nil
		}
		b.buf = append(b.buf, p[n:]...)
	} else {
		b.buf = append(b.buf, p...)
	}
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
		b.dropped = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped {
		return string(b.head) + " … " + string(b.buf)
	}
	return string(b.head) + string(b.buf)
}

// recordingTransport counts the notifications/cancelled the client writes
// to a server (the SDK sends them itself when a call's context ends).
type recordingTransport struct {
	inner    sdk.Transport
	onCancel func()
}

func (t *recordingTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: conn, onCancel: t.onCancel}, nil
}

type recordingConn struct {
	sdk.Connection
	onCancel func()
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "notifications/cancelled" {
		c.onCancel()
	}
	return err
}
