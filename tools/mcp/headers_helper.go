package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// helperTimeout bounds a headersHelper run, as in Claude Code (a variable
// for tests).
var helperTimeout = 10 * time.Second

// maxHelperOutput bounds what a headersHelper may print.
const maxHelperOutput = 64 << 10

// helperHeaders runs the server's headersHelper, as Claude Code does at
// each connection: `sh -c` in the configuration's directory, with
// CLAUDE_CODE_MCP_SERVER_NAME and CLAUDE_CODE_MCP_SERVER_URL, at most ten
// seconds; its output is a JSON object of header names to string values,
// which win over the configured headers. It runs as a stdio server does —
// in its own cgroup, through the Launcher (the hooks' confinement, fenced
// off the frontend) — since the script sits in the project, where the
// agent can rewrite it; what it prints goes only to the server's origin.
func (s *server) helperHeaders(ctx context.Context) (map[string]string, error) {
	where := fmt.Sprintf("MCP server %q's headersHelper %q", s.cfg.Name, s.cfg.HeadersHelper)
	cmd := exec.Command("/bin/sh", "-c", s.cfg.HeadersHelper)
	cmd.Dir = s.cfg.Dir
	env := s.m.opts.HelperEnv
	if env == nil {
		env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	}
	cmd.Env = append(slices.Clone(env), "CLAUDE_CODE_MCP_SERVER_NAME="+s.cfg.Key, "CLAUDE_CODE_MCP_SERVER_URL="+s.cfg.URL)
	stdout := &tailBuffer{max: maxHelperOutput + 1}
	cmd.Stdout = stdout
	// What it leaves running must not hold the wait on its stdout; its
	// cgroup ends it after.
	cmd.WaitDelay = time.Second
	p := s.process(cmd)
	if err := p.start(); err != nil {
		return nil, fmt.Errorf("%s could not start: %w", where, err)
	}
	done := make(chan error, 1)
	go func() { done <- p.wait() }()
	timer := time.NewTimer(helperTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("%s failed: %v%s", where, err, p.stderrNote())
		}
	case <-timer.C:
		p.kill()
		return nil, fmt.Errorf("%s did not finish within %s%s", where, helperTimeout, p.stderrNote())
	case <-ctx.Done():
		p.kill()
		return nil, fmt.Errorf("%s: %w", where, ctx.Err())
	}
	out := []byte(stdout.String())
	if len(out) > maxHelperOutput {
		return nil, fmt.Errorf("%s printed more than %d bytes", where, maxHelperOutput)
	}
	// What it printed is not repeated: it holds a token.
	var headers map[string]string
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&headers); err != nil || headers == nil {
		return nil, fmt.Errorf("%s printed %d bytes that are not a JSON object of header names to string values (%v)", where, len(out), err)
	}
	for name, value := range headers {
		if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(value) {
			return nil, fmt.Errorf("%s printed header %q, which is not a valid HTTP header name and value", where, name)
		}
		if strings.EqualFold(name, "Content-Type") || strings.EqualFold(name, "Accept") || http.CanonicalHeaderKey(name) == "Mcp-Session-Id" {
			return nil, fmt.Errorf("%s printed header %q, which the MCP transport sets itself", where, name)
		}
	}
	return headers, nil
}
