package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/tools/procs"
)

// corpusCase is one hostile input. Every case must end with the specific
// outcome check expects, within limit (hangs are failures).
type corpusCase struct {
	name string
	tool string
	args func(f *corpusFixture) map[string]any
	// cancelAfter cancels the call's context after this long.
	cancelAfter time.Duration
	limit       time.Duration
	check       func(t *testing.T, f *corpusFixture, res corpusResult)
}

type corpusResult struct {
	p       Projection
	raw     json.RawMessage
	err     error
	elapsed time.Duration
}

type corpusFixture struct {
	*testRig
	port       int    // a loopback HTTP server that must stay unreachable
	allowedURL string // the same server through the allowlisted name "localhost"
}

func refused(sentinel *fenixerr.Error, code string) func(*testing.T, *corpusFixture, corpusResult) {
	return func(t *testing.T, _ *corpusFixture, res corpusResult) {
		t.Helper()
		errorIs(t, res.err, sentinel, code)
	}
}

func escapes() func(*testing.T, *corpusFixture, corpusResult) {
	return refused(fenixerr.ErrWorkspaceEscape, "")
}

func protected() func(*testing.T, *corpusFixture, corpusResult) {
	return refused(fenixerr.ErrWorkspaceEscape, "protected_path")
}

func notRegular() func(*testing.T, *corpusFixture, corpusResult) {
	return refused(fenixerr.ErrValidation, "not_regular_file")
}

func blocked() func(*testing.T, *corpusFixture, corpusResult) {
	return func(t *testing.T, _ *corpusFixture, res corpusResult) {
		t.Helper()
		errorIs(t, res.err, fenixerr.ErrValidation, "destination_not_allowed")
		if fe := fenixerr.As(res.err); fe.Class != fenixerr.ClassAuthorization || !errors.Is(res.err, netguard.ErrBlocked) {
			t.Fatalf("error %q: class %s, want authorization and netguard.ErrBlocked", res.err, fe.Class)
		}
	}
}

func args(kv ...any) func(*corpusFixture) map[string]any {
	return func(*corpusFixture) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
}

func execResult(t *testing.T, res corpusResult) ExecCommandResult {
	t.Helper()
	if res.err != nil {
		t.Fatalf("exec_command failed: %v", res.err)
	}
	return decode[ExecCommandResult](t, res.raw)
}

func groupGone(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no pid recorded")
	}
	if n := procs.LiveGroupSize(pid); n != 0 {
		t.Fatalf("process group %d still has %d live processes", pid, n)
	}
}

var securityCorpus = []corpusCase{
	// Path traversal, in every workspace tool and every tool taking a path.
	{name: "read ../ traversal", tool: "workspace_read", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"path": "../" + filepath.Base(f.outside) + "/sentinel.txt"}
	}, check: escapes()},
	{name: "write ../ traversal", tool: "workspace_write", args: args("path", "../escape.txt", "content", "x"), check: escapes()},
	{name: "list ../ traversal", tool: "workspace_list", args: args("path", ".."), check: escapes()},
	{name: "search ../ traversal", tool: "workspace_search", args: args("pattern", "x", "path", "../.."), check: escapes()},
	{name: "edit ../ traversal", tool: "workspace_edit", args: args("path", "../x", "old_string", "a", "new_string", "b"), check: escapes()},
	{name: "nested traversal", tool: "workspace_read", args: args("path", "docs/../../x"), check: escapes()},
	{name: "read absolute path", tool: "workspace_read", args: args("path", "/etc/passwd"), check: escapes()},
	{name: "write absolute path", tool: "workspace_write", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"path": filepath.Join(f.outside, "sentinel.txt"), "content": "pwned"}
	}, check: escapes()},
	{name: "list absolute path", tool: "workspace_list", args: args("path", "/"), check: escapes()},
	{name: "search absolute path", tool: "workspace_search", args: args("pattern", "root", "path", "/etc"), check: escapes()},
	{name: "edit absolute path", tool: "workspace_edit", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"path": filepath.Join(f.outside, "sentinel.txt"), "old_string": "untouched", "new_string": "pwned"}
	}, check: escapes()},
	{name: "memory_read traversal key", tool: "memory_read", args: args("key", "../../../etc/passwd"), check: refused(fenixerr.ErrValidation, "")},
	{name: "memory_write traversal key", tool: "memory_write", args: args("key", "../escape", "content", "x"), check: refused(fenixerr.ErrValidation, "")},
	{name: "exec_command cwd traversal", tool: "exec_command", args: args("command_line", "pwd", "cwd", "../"), check: escapes()},
	{name: "process_exec absolute cwd", tool: "process_exec", args: args("command_line", "pwd", "cwd", "/tmp"), check: escapes()},
	// A NUL byte in the line made the kernel refuse the shell's start,
	// reported as ToolUnavailableError ("fork/exec /bin/sh: invalid
	// argument"): the caller's bad argument read as the tool's failure.
	{name: "exec_command NUL in the command line", tool: "exec_command", args: args("command_line", "echo a\x00b"), check: refused(fenixerr.ErrValidation, "")},
	{name: "process_exec NUL in the command line", tool: "process_exec", args: args("command_line", "sleep 1\x00"), check: refused(fenixerr.ErrValidation, "")},

	// Symlinks leading out, dangling, to system files, into protected paths.
	{name: "read through symlinked dir outside", tool: "workspace_read", args: args("path", "outlink/sentinel.txt"), check: escapes()},
	{name: "write through symlinked dir outside", tool: "workspace_write", args: args("path", "outlink/new.txt", "content", "x"), check: escapes()},
	{name: "list symlinked dir outside", tool: "workspace_list", args: args("path", "outlink"), check: escapes()},
	{name: "search symlinked dir outside", tool: "workspace_search", args: args("pattern", "untouched", "path", "outlink"), check: escapes()},
	{name: "edit through symlinked dir outside", tool: "workspace_edit", args: args("path", "outlink/sentinel.txt", "old_string", "untouched", "new_string", "pwned"), check: escapes()},
	{name: "read relative symlink escaping", tool: "workspace_read", args: args("path", "rellink"), check: escapes()},
	{name: "write through dangling symlink outside", tool: "workspace_write", args: args("path", "dangling", "content", "x"), check: escapes()},
	{name: "read symlink to /etc/passwd", tool: "workspace_read", args: args("path", "passwd"), check: escapes()},
	{name: "exec_command cwd symlink outside", tool: "exec_command", args: args("command_line", "ls", "cwd", "outlink"), check: escapes()},
	{name: "search does not follow symlinks", tool: "workspace_search", args: args("pattern", "untouched sentinel"), check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
		if res.err != nil || !strings.HasPrefix(res.p.Content, "No matches") {
			t.Fatalf("search found the outside sentinel: %q (%v)", res.p.Content, res.err)
		}
	}},
	{name: "recursive list does not descend symlinks", tool: "workspace_list", args: args("recursive", true), check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
		if res.err != nil || strings.Contains(res.p.Content, "outlink/") || !strings.Contains(res.p.Content, "outlink -> ") {
			t.Fatalf("listing = %q (%v)", res.p.Content, res.err)
		}
	}},
	{name: "write through symlink into .git/hooks", tool: "workspace_write", args: args("path", "hooklink", "content", "#!/bin/sh\nevil"), check: protected()},
	{name: "write .git/hooks/pre-commit", tool: "workspace_write", args: args("path", ".git/hooks/pre-commit", "content", "evil"), check: protected()},
	{name: "write .git/config", tool: "workspace_write", args: args("path", ".git/config", "content", "[core]\n\thooksPath = /tmp"), check: protected()},
	{name: "edit .claude/settings.json", tool: "workspace_edit", args: args("path", ".claude/settings.json", "old_string", "{}", "new_string", `{"hooks":{}}`), check: protected()},
	{name: "write through a hard link to an outside file", tool: "workspace_write", args: args("path", "linked.txt", "content", "pwned"), check: refused(fenixerr.ErrWorkspaceEscape, "hard_link")},
	{name: "edit through a hard link to an outside file", tool: "workspace_edit", args: args("path", "linked.txt", "old_string", "original", "new_string", "pwned"), check: refused(fenixerr.ErrWorkspaceEscape, "hard_link")},
	{name: "write .mcp.json", tool: "workspace_write", args: args("path", ".mcp.json", "content", `{"mcpServers":{"x":{"command":"sh"}}}`), check: protected()},
	{name: "write a nested repository's hook", tool: "workspace_write", args: args("path", "vendor/lib/.git/hooks/post-checkout", "content", "evil"), check: protected()},
	{name: "write .GIT/config (case-insensitive mount)", tool: "workspace_write", args: args("path", ".GIT/config", "content", "[core]\n\tfsmonitor = evil"), check: protected()},
	{name: "write through symlink into a nested .git", tool: "workspace_write", args: args("path", "subgitlink/pre-commit", "content", "evil"), check: protected()},

	// Devices and FIFOs must be refused without blocking.
	{name: "read symlink to /dev/zero", tool: "workspace_read", args: args("path", "zero"), check: escapes()},
	{name: "read FIFO", tool: "workspace_read", args: args("path", "pipe"), check: notRegular()},
	{name: "write FIFO", tool: "workspace_write", args: args("path", "pipe", "content", "x"), check: notRegular()},
	{name: "edit FIFO", tool: "workspace_edit", args: args("path", "pipe", "old_string", "a", "new_string", "b"), check: notRegular()},
	{name: "read symlink to FIFO", tool: "workspace_read", args: args("path", "pipelink"), check: notRegular()},
	{name: "write symlink to FIFO", tool: "workspace_write", args: args("path", "pipelink", "content", "x"), check: notRegular()},
	{name: "search skips FIFO", tool: "workspace_search", args: args("pattern", "zzz-none"), check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
		if res.err != nil || !strings.HasPrefix(res.p.Content, "No matches") {
			t.Fatalf("search = %q (%v)", res.p.Content, res.err)
		}
	}},
	{name: "list shows FIFO", tool: "workspace_list", args: args(), check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
		if res.err != nil || !strings.Contains(res.p.Content, "\npipe (fifo)") {
			t.Fatalf("listing = %q (%v)", res.p.Content, res.err)
		}
	}},

	// Runaway commands.
	{name: "1 GB of output is capped", tool: "exec_command", args: args("command_line", "head -c 1000000000 /dev/zero"), limit: 20 * time.Second,
		check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
			r := execResult(t, res)
			if r.Reason != procs.ReasonOutputLimit || r.StdoutBytes > 80<<20 || len(r.Stdout) > 32<<10 {
				t.Fatalf("reason %q, %d bytes counted, %d kept; want killed at the 64 MiB limit with a 32 KiB tail", r.Reason, r.StdoutBytes, len(r.Stdout))
			}
			if !strings.Contains(res.p.Content, "It was killed because its output passed the 64 MiB limit.") {
				t.Fatalf("content = %.200q", res.p.Content)
			}
			groupGone(t, r.PID)
		}},
	{name: "SIGTERM-ignoring command dies on cancel", tool: "exec_command", args: args("command_line", "trap '' TERM; sleep 60 & sleep 60; wait"),
		cancelAfter: 300 * time.Millisecond, limit: 4 * time.Second,
		check: func(t *testing.T, f *corpusFixture, res corpusResult) {
			errorIs(t, res.err, fenixerr.ErrCanceled, "")
			if !errors.Is(res.err, context.Canceled) {
				t.Fatalf("error %q does not wrap context.Canceled", res.err)
			}
			runs := f.host.CommandRuns(1)
			if len(runs) != 1 || runs[0].Status != procs.RunCanceled {
				t.Fatalf("registry = %+v, want the run recorded as canceled", runs)
			}
			rec, err := f.host.runs.Get(runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			groupGone(t, rec.PID)
		}},
	{name: "SIGTERM-ignoring command dies on timeout", tool: "exec_command", args: args("command_line", "trap '' TERM; sleep 60", "timeout_seconds", 1), limit: 5 * time.Second,
		check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
			r := execResult(t, res)
			if r.Status != procs.RunTimedOut || r.Signal != "SIGKILL" || r.ExitStatus != 137 {
				t.Fatalf("status %s signal %s exit %d, want timed_out by SIGKILL (137)", r.Status, r.Signal, r.ExitStatus)
			}
			groupGone(t, r.PID)
		}},
	{name: "fork loop is stopped by the process limit", tool: "exec_command",
		args:  args("command_line", `i=0; while [ $i -lt 3000 ]; do sleep 10 & i=$((i+1)); done; wait`),
		limit: 15 * time.Second,
		check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
			r := execResult(t, res)
			if r.Reason != procs.ReasonProcessLimit || !strings.Contains(res.p.Content, "It was killed because it started more than 64 processes.") {
				t.Fatalf("reason %q, content %q", r.Reason, res.p.Content)
			}
			groupGone(t, r.PID)
		}},
	{name: "background child does not outlive the command", tool: "exec_command", args: args("command_line", "sleep 60 & echo $!"),
		check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
			r := execResult(t, res)
			if r.ExitStatus != 0 || strings.TrimSpace(r.Stdout) == "" {
				t.Fatalf("exit %d stdout %q", r.ExitStatus, r.Stdout)
			}
			groupGone(t, r.PID)
		}},
	{name: "file size limit", tool: "exec_command", args: args("command_line", "head -c 3000000 /dev/zero > big.bin"),
		check: func(t *testing.T, f *corpusFixture, res corpusResult) {
			r := execResult(t, res)
			info, err := os.Stat(filepath.Join(f.dir, "big.bin"))
			if r.ExitStatus != 128+int(syscall.SIGXFSZ) || err != nil || info.Size() > 1<<20 {
				t.Fatalf("exit %d, file %v (%v); want SIGXFSZ and at most 1 MiB written", r.ExitStatus, info, err)
			}
		}},
	{name: "non-UTF-8 output is made valid", tool: "exec_command", args: args("command_line", `printf '\377\376ok\n'; printf 'caf\351' >&2`),
		check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
			r := execResult(t, res)
			if !utf8.ValidString(r.Stdout) || !utf8.ValidString(r.Stderr) || r.Stdout != "\uFFFDok\n" || r.Stderr != "caf\uFFFD" {
				t.Fatalf("stdout %q stderr %q", r.Stdout, r.Stderr)
			}
			if !utf8.ValidString(res.p.Content) || !json.Valid(res.raw) {
				t.Fatal("projection or raw result is not valid UTF-8 JSON")
			}
		}},
	{name: "worker secrets are not in the command environment", tool: "exec_command", args: args("command_line", "env; echo \"[$FENIX_TEST_SECRET][$AWS_SECRET_ACCESS_KEY]\""),
		check: func(t *testing.T, _ *corpusFixture, res corpusResult) {
			r := execResult(t, res)
			if strings.Contains(r.Stdout, "hunter2") || strings.Contains(r.Stdout, "do-not-leak") || !strings.Contains(r.Stdout, "[][]") {
				t.Fatalf("environment leaked:\n%s", r.Stdout)
			}
		}},

	// Malformed and oversized arguments.
	{name: "oversize command line", tool: "exec_command", args: args("command_line", strings.Repeat("x", 70000)), check: refused(fenixerr.ErrValidation, "")},
	{name: "oversize write content", tool: "workspace_write", args: args("path", "big.txt", "content", strings.Repeat("x", 1100<<10)), check: refused(fenixerr.ErrPayloadTooLarge, "")},
	{name: "oversize arguments", tool: "calculator", args: args("expression", "1", "pad", strings.Repeat("x", 300<<10)), check: refused(fenixerr.ErrPayloadTooLarge, "")},
	{name: "edit replace_all growing the file a millionfold", tool: "workspace_edit",
		args: args("path", "repeat.txt", "old_string", "x", "new_string", strings.Repeat("y", 256<<10), "replace_all", true),
		check: func(t *testing.T, f *corpusFixture, res corpusResult) {
			errorIs(t, res.err, fenixerr.ErrPayloadTooLarge, "")
			if b, err := os.ReadFile(filepath.Join(f.dir, "repeat.txt")); err != nil || len(b) != 1<<20 {
				t.Fatalf("repeat.txt changed: %d bytes (%v)", len(b), err)
			}
		}},
	{name: "oversize memory content", tool: "memory_write", args: args("key", "k", "content", strings.Repeat("x", 70000)), check: refused(fenixerr.ErrValidation, "")},
	{name: "unknown field in exec_command", tool: "exec_command", args: args("command_line", "true", "shell", "bash"), check: refused(fenixerr.ErrValidation, "")},
	{name: "unknown field in workspace_read", tool: "workspace_read", args: args("path", "a.txt", "follow_symlinks", true), check: refused(fenixerr.ErrValidation, "")},
	{name: "wrong argument type", tool: "exec_command", args: args("command_line", "true", "timeout_seconds", "10"), check: refused(fenixerr.ErrValidation, "")},
	{name: "timeout above the schema maximum", tool: "exec_command", args: args("command_line", "true", "timeout_seconds", 99999), check: refused(fenixerr.ErrValidation, "")},
	{name: "invalid env variable name", tool: "exec_command", args: args("command_line", "true", "env", map[string]any{"BAD-NAME": "x"}), check: refused(fenixerr.ErrValidation, "")},

	// Server-side request forgery.
	{name: "SSRF to 127.0.0.1", tool: "web_fetch", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"url": "http://127.0.0.1:" + itoa(f.port) + "/"}
	}, check: blocked()},
	{name: "SSRF to [::1]", tool: "web_fetch", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"url": "http://[::1]:" + itoa(f.port) + "/"}
	}, check: blocked()},
	{name: "SSRF to IPv4-mapped loopback", tool: "web_fetch", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"url": "http://[::ffff:127.0.0.1]:" + itoa(f.port) + "/"}
	}, check: blocked()},
	{name: "SSRF to 0.0.0.0", tool: "web_fetch", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"url": "http://0.0.0.0:" + itoa(f.port) + "/"}
	}, check: blocked()},
	{name: "SSRF to cloud metadata 169.254.169.254", tool: "web_fetch", args: args("url", "http://169.254.169.254/latest/meta-data/"), check: blocked()},
	{name: "SSRF to private 10.0.0.1", tool: "web_fetch", args: args("url", "http://10.0.0.1/"), check: blocked()},
	{name: "SSRF through a redirect to loopback", tool: "web_fetch", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"url": f.allowedURL + "/redirect?to=" + url.QueryEscape("http://127.0.0.1:"+itoa(f.port)+"/secret")}
	}, check: blocked()},
	{name: "SSRF through a redirect to metadata", tool: "web_fetch", args: func(f *corpusFixture) map[string]any {
		return map[string]any{"url": f.allowedURL + "/redirect?to=" + url.QueryEscape("http://169.254.169.254/latest/meta-data/")}
	}, check: blocked()},
	{name: "non-http scheme", tool: "web_fetch", args: args("url", "file:///etc/passwd"), check: refused(fenixerr.ErrValidation, "")},
}

func TestSecurityCorpus(t *testing.T) {
	r := newRig(t, func(c *HostConfig) {
		c.Exec.Limits.MaxProcesses = 64
		c.Exec.Limits.MaxFileBytes = 1 << 20
		// Only the name "localhost" may reach loopback: literal loopback
		// addresses and redirects to them stay blocked.
		c.Fetch = netguard.Policy{AllowHosts: []string{"localhost"}}
	})
	f := &corpusFixture{testRig: r}

	// Fixtures: a sentinel outside the workspace and hostile entries inside.
	sentinel := filepath.Join(r.outside, "sentinel.txt")
	if err := os.WriteFile(sentinel, []byte("untouched sentinel"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(r.dir, sentinel)
	if err != nil {
		t.Fatal(err)
	}
	// A hard link into the workspace, as exec_command could make one.
	linked := filepath.Join(r.outside, "linked.txt")
	if err := os.WriteFile(linked, []byte("outside original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(linked, filepath.Join(r.dir, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	r.write(t, "a.txt", "alpha\n")
	r.write(t, "repeat.txt", strings.Repeat("x", 1<<20))
	r.write(t, ".git/hooks/README", "hooks\n")
	r.write(t, ".claude/settings.json", "{}")
	for link, target := range map[string]string{
		"outlink":    r.outside,
		"rellink":    rel,
		"dangling":   filepath.Join(r.outside, "created-by-escape.txt"),
		"passwd":     "/etc/passwd",
		"zero":       "/dev/zero",
		"hooklink":   ".git/hooks/pre-commit",
		"subgitlink": "vendor/lib/.git/hooks",
		"pipelink":   "pipe",
	} {
		if err := os.Symlink(target, filepath.Join(r.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(r.dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, r.outside)

	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, req.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("internal secret")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f.port = srv.Listener.Addr().(*net.TCPAddr).Port
	f.allowedURL = "http://localhost:" + itoa(f.port)

	// The allowlisted name itself works, so the refusals below are the
	// guard's doing and not a broken server.
	if _, _, err := r.call(t, "web_fetch", map[string]any{"url": f.allowedURL + "/"}); err != nil {
		t.Fatalf("allowlisted fetch failed: %v", err)
	}

	passed := 0
	for _, c := range securityCorpus {
		ok := t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelAfter > 0 {
				timer := time.AfterFunc(c.cancelAfter, cancel)
				defer timer.Stop()
			}
			limit := c.limit
			if limit == 0 {
				limit = 3 * time.Second
			}
			type outcome struct {
				res corpusResult
			}
			done := make(chan outcome, 1)
			begin := time.Now()
			go func() {
				p, raw, err := r.callCtx(ctx, t, c.tool, c.args(f))
				done <- outcome{corpusResult{p: p, raw: raw, err: err, elapsed: time.Since(begin)}}
			}()
			select {
			case o := <-done:
				if o.res.elapsed > limit {
					t.Fatalf("took %s, limit %s", o.res.elapsed, limit)
				}
				c.check(t, f, o.res)
			case <-time.After(limit + 5*time.Second):
				cancel()
				t.Fatalf("hung: no answer within %s", limit+5*time.Second)
			}
		})
		if ok {
			passed++
		}
	}
	t.Logf("security corpus: %d/%d cases passed", passed, len(securityCorpus))

	if after := snapshotDir(t, r.outside); after != before {
		t.Fatalf("the directory outside the workspace changed:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshotDir describes every file under dir: name, size, mode, mtime and
// content.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		line := p + " " + info.Mode().String() + " " + itoa(int(info.Size())) + " " + info.ModTime().String()
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += " " + string(b)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
