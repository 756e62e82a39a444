package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
)

func TestExecCommandProjection(t *testing.T) {
	r := newRig(t)
	r.write(t, "sub/file.txt", "in sub\n")
	tests := []struct {
		name       string
		args       map[string]any
		want       string
		wantStatus string
		wantExit   int
	}{
		{"stdout", map[string]any{"command_line": "echo hello"},
			"Command exited with status 0 after streaming output.\n\nstdout:\nhello", procs.RunExited, 0},
		{"both streams and a status", map[string]any{"command_line": "echo out; echo err >&2; exit 3"},
			"Command exited with status 3 after streaming output.\n\nstdout:\nout\n\nstderr:\nerr", procs.RunExited, 3},
		{"no output", map[string]any{"command_line": "true"},
			"Command exited with status 0 after streaming output.\n\n(no output)", procs.RunExited, 0},
		{"cwd", map[string]any{"command_line": "cat file.txt", "cwd": "sub"},
			"Command exited with status 0 after streaming output.\n\nstdout:\nin sub", procs.RunExited, 0},
		{"extra env", map[string]any{"command_line": "echo $GREETING", "env": map[string]any{"GREETING": "hi there"}},
			"Command exited with status 0 after streaming output.\n\nstdout:\nhi there", procs.RunExited, 0},
		{"timeout", map[string]any{"command_line": "echo started; sleep 30", "timeout_seconds": 1},
			"Command exited with status 143 after streaming output. It was killed because it ran past its 1s timeout.\n\nstdout:\nstarted", procs.RunTimedOut, 143},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, raw := r.mustCall(t, "exec_command", tt.args)
			if p.Content != tt.want {
				t.Errorf("content = %q, want %q", p.Content, tt.want)
			}
			res := decode[ExecCommandResult](t, raw)
			if res.Status != tt.wantStatus || res.ExitStatus != tt.wantExit {
				t.Errorf("status %s exit %d, want %s exit %d", res.Status, res.ExitStatus, tt.wantStatus, tt.wantExit)
			}
			if !strings.HasPrefix(res.CommandRunID, "cmd_test-host_") || p.Metadata["command_run_id"] != res.CommandRunID {
				t.Errorf("command_run_id = %q (metadata %v), want cmd_test-host_...", res.CommandRunID, p.Metadata["command_run_id"])
			}
			if p.Metadata["exit_status"] != tt.wantExit {
				t.Errorf("metadata exit_status = %v, want %d", p.Metadata["exit_status"], tt.wantExit)
			}
		})
	}
}

func TestExecCommandEnvironmentIsScrubbed(t *testing.T) {
	r := newRig(t)
	t.Setenv("FENIX_WORKER_ONLY", "from-the-worker-process")
	_, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "env"})
	out := decode[ExecCommandResult](t, raw).Stdout
	for _, leaked := range []string{"hunter2", "do-not-leak", "from-the-worker-process"} {
		if strings.Contains(out, leaked) {
			t.Errorf("command environment contains %q:\n%s", leaked, out)
		}
	}
	for _, want := range []string{"HOME=" + r.ws.Dir(), "TERM=dumb", "LANG=C.UTF-8", "PATH="} {
		if !strings.Contains(out, want+"") {
			t.Errorf("command environment lacks %q:\n%s", want, out)
		}
	}
}

// The settings files' env reaches every command and service, over the
// worker's allowed variables and under the call's own env; a sandbox's
// TMPDIR wins over it, and a name no shell could hold is left out.
func TestSettingsEnvReachesCommands(t *testing.T) {
	r := newRig(t, func(c *HostConfig) { c.EnvAllowlist = []string{"FENIX_TEST_SHARED"} })
	t.Setenv("FENIX_TEST_SHARED", "from-the-worker")
	r.host.SetCommandEnv(map[string]string{"FENIX_TEST_SHARED": "from-settings", "PROJECT_STAGE": "dev", "NODE_ENV": "development",
		"TMPDIR": "/settings-tmp", "BAD-NAME": "x"}, []string{"/p/.claude/settings.json"})
	_, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "env", "env": map[string]any{"NODE_ENV": "test"}})
	out := decode[ExecCommandResult](t, raw).Stdout
	for _, want := range []string{"FENIX_TEST_SHARED=from-settings", "PROJECT_STAGE=dev", "NODE_ENV=test", "TMPDIR=/settings-tmp"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("command environment lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "BAD-NAME") {
		t.Errorf("an invalid name reached the command:\n%s", out)
	}
	if confine.ABIVersion() >= 2 {
		if err := r.host.SetCommandSandbox(confine.Policy{Boundary: &confine.Boundary{}}, false, []string{"/p/.claude/settings.json"}); err != nil {
			t.Fatal(err)
		}
		_, raw = r.mustCall(t, "exec_command", map[string]any{"command_line": "echo \"$TMPDIR\""})
		if got := decode[ExecCommandResult](t, raw).Stdout; !strings.Contains(got, "fenix-commands-") {
			t.Errorf("under the sandbox TMPDIR = %q, want the sandbox's own", got)
		}
	}
	r.host.SetCommandEnv(nil, nil)
	_, raw = r.mustCall(t, "exec_command", map[string]any{"command_line": "env"})
	if out := decode[ExecCommandResult](t, raw).Stdout; strings.Contains(out, "PROJECT_STAGE") {
		t.Errorf("the settings env outlived its files:\n%s", out)
	}
}

func TestExecCommandStreamsProgressAndHeartbeats(t *testing.T) {
	r := newRig(t)
	_, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "for i in 1 2 3; do echo line$i; sleep 0.3; done; echo oops >&2"})
	res := decode[ExecCommandResult](t, raw)
	r.mu.Lock()
	chunks := append([]contract.ToolOutputChunk(nil), r.chunks...)
	r.mu.Unlock()
	var stdout, stderr strings.Builder
	for _, c := range chunks {
		if c.CallID != "call-1" {
			t.Errorf("chunk call_id = %q", c.CallID)
		}
		switch c.Stream {
		case "stdout":
			if int64(stdout.Len()) != c.Offset {
				t.Errorf("stdout chunk at offset %d, want %d (no gaps or overlaps)", c.Offset, stdout.Len())
			}
			stdout.WriteString(c.Text)
		case "stderr":
			stderr.WriteString(c.Text)
		}
	}
	if stdout.String() != res.Stdout || stderr.String() != "oops\n" {
		t.Errorf("streamed stdout %q stderr %q, want %q and %q", stdout.String(), stderr.String(), res.Stdout, "oops\n")
	}
	if len(chunks) < 3 {
		t.Errorf("got %d chunks, want output streamed while running (at least one per line)", len(chunks))
	}
}

func TestCompleteUTF8Prefix(t *testing.T) {
	e := []byte("é") // 2 bytes
	tests := []struct {
		in   []byte
		want int
	}{
		{[]byte("abc"), 3},
		{append([]byte("ab"), e[0]), 2},
		{append([]byte("ab"), e...), 4},
		{[]byte{0xe6, 0x97}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := completeUTF8Prefix(tt.in); got != tt.want {
			t.Errorf("completeUTF8Prefix(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// A command run's command line and output are its conversation's: another
// conversation's agent cannot read them by ID.
func TestCommandRunReadKeepsToItsConversation(t *testing.T) {
	r := newRig(t)
	_, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "echo token=hunter3"})
	id := decode[ExecCommandResult](t, raw).CommandRunID
	r.env.ConversationID = "conv-other"
	_, _, err := r.call(t, "command_run_read", map[string]any{"command_run_id": id})
	errorIs(t, err, fenixerr.ErrValidation, "other_conversation")
	r.env.ConversationID = "conv-1"
	if p, _ := r.mustCall(t, "command_run_read", map[string]any{"command_run_id": id}); !strings.Contains(p.Content, "hunter3") {
		t.Fatalf("its own conversation cannot read it: %s", p.Content)
	}
}

func TestCommandRunRead(t *testing.T) {
	r := newRig(t)
	_, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "printf 'abcdefghij'; printf 'E' >&2; exit 4"})
	id := decode[ExecCommandResult](t, raw).CommandRunID
	zero := 0
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"both streams", map[string]any{"command_run_id": id},
			"Command run " + id + " exited with status 4.\nCommand: printf 'abcdefghij'; printf 'E' >&2; exit 4\n\nstdout:\nabcdefghij\n\nstderr:\nE"},
		{"tail window", map[string]any{"command_run_id": id, "stream": "stdout", "max_bytes": 3},
			"Command run " + id + " exited with status 4.\nCommand: printf 'abcdefghij'; printf 'E' >&2; exit 4\n\nstdout (bytes 7-10 of 10):\nhij"},
		{"offset window", map[string]any{"command_run_id": id, "stream": "stdout", "offset": 2, "max_bytes": 3},
			"Command run " + id + " exited with status 4.\nCommand: printf 'abcdefghij'; printf 'E' >&2; exit 4\n\nstdout (bytes 2-5 of 10):\ncde"},
		{"offset zero", map[string]any{"command_run_id": id, "stream": "stderr", "offset": zero},
			"Command run " + id + " exited with status 4.\nCommand: printf 'abcdefghij'; printf 'E' >&2; exit 4\n\nstderr:\nE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := r.mustCall(t, "command_run_read", tt.args)
			if p.Content != tt.want {
				t.Errorf("content =\n%q\nwant\n%q", p.Content, tt.want)
			}
		})
	}

	t.Run("offset needs one stream", func(t *testing.T) {
		_, _, err := r.call(t, "command_run_read", map[string]any{"command_run_id": id, "offset": 1})
		errorIs(t, err, fenixerr.ErrValidation, "")
	})
	t.Run("unknown run", func(t *testing.T) {
		_, _, err := r.call(t, "command_run_read", map[string]any{"command_run_id": "cmd_test-host_0000000000000000"})
		errorIs(t, err, fenixerr.ErrValidation, "not_found")
	})
	t.Run("run of another host", func(t *testing.T) {
		_, _, err := r.call(t, "command_run_read", map[string]any{"command_run_id": "cmd_other-host_0123456789abcdef"})
		errorIs(t, err, fenixerr.ErrToolUnavailable, "wrong_host")
		if !strings.Contains(err.Error(), "fenix-host-other-host") {
			t.Errorf("error %q does not name the owner's task queue", err)
		}
	})
	t.Run("survives a worker restart", func(t *testing.T) {
		dataDir := r.host.DataDir()
		r.host.Close()
		h2, err := NewHost(HostConfig{DataDir: dataDir, ID: "test-host"})
		if err != nil {
			t.Fatal(err)
		}
		defer h2.Close()
		r.env.Host = h2
		p, _ := r.mustCall(t, "command_run_read", map[string]any{"command_run_id": id, "stream": "stdout"})
		if !strings.HasSuffix(p.Content, "stdout:\nabcdefghij") {
			t.Errorf("after restart content = %q", p.Content)
		}
	})
}

func TestCommandRunReadWhileRunning(t *testing.T) {
	r := newRig(t)
	done := make(chan ExecCommandResult, 1)
	go func() {
		_, raw, err := r.call(t, "exec_command", map[string]any{"command_line": "echo first; sleep 2"})
		if err != nil {
			t.Error(err)
		}
		done <- decode[ExecCommandResult](t, raw)
	}()
	var id string
	deadline := time.Now().Add(5 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		for _, s := range r.host.CommandRuns(10) {
			if s.Status == procs.RunRunning {
				id = s.ID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("the running command never appeared in the registry")
	}
	var p Projection
	for time.Now().Before(deadline) {
		p, _ = r.mustCall(t, "command_run_read", map[string]any{"command_run_id": id})
		if strings.Contains(p.Content, "first") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasPrefix(p.Content, "Command run "+id+" is still running.") || !strings.Contains(p.Content, "stdout:\nfirst") {
		t.Errorf("live read = %q", p.Content)
	}
	<-done
}

func TestHostCloseKillsRunningCommands(t *testing.T) {
	r := newRig(t)
	done := make(chan Projection, 1)
	go func() {
		p, _, err := r.call(t, "exec_command", map[string]any{"command_line": "trap '' TERM; echo up; sleep 60"})
		if err != nil {
			t.Error(err)
		}
		done <- p
	}()
	// Close only once the shell has printed "up": before that its trap is
	// not set yet, and SIGTERM alone would end it (status 143).
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if runs := r.host.CommandRuns(1); len(runs) > 0 {
			if p, _ := r.mustCall(t, "command_run_read", map[string]any{"command_run_id": runs[0].ID}); strings.Contains(p.Content, "stdout:\nup") {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.host.Close()
	select {
	case p := <-done:
		if !strings.HasPrefix(p.Content, "Command exited with status 137 after streaming output. It was killed because the worker shut down.") {
			t.Fatalf("content = %q", p.Content)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exec_command still running after Host.Close")
	}
}

// TestExecCommandOrphanedByLostContactIsRecordedAsWorkerLost: when the
// call's context ends because the worker lost contact with Temporal (not a
// requested cancel), the command is killed and its run recorded as
// worker_lost, which command_run_read reports.
func TestExecCommandOrphanedByLostContactIsRecordedAsWorkerLost(t *testing.T) {
	r := newRig(t)
	lost := errors.New("heartbeat: server unreachable")
	r.env.ContactLost = func() bool { return true }
	ctx, cancel := context.WithCancelCause(context.Background())
	type outcome struct {
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		_, _, err := r.callCtx(ctx, t, "exec_command", map[string]any{"command_line": "echo up; sleep 60"})
		done <- outcome{err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	// Wait for the command's "up" to reach its stdout: cancelling before
	// the shell echoed it would leave nothing for command_run_read to show.
	for time.Now().Before(deadline) {
		if runs := r.host.CommandRuns(1); len(runs) == 1 && runs[0].StdoutBytes > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel(lost)
	var got outcome
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("exec_command still running after its context ended")
	}
	errorIs(t, got.err, fenixerr.ErrWorkerLost, "worker_lost")
	if !strings.Contains(got.err.Error(), "lost contact with Temporal") || !strings.Contains(got.err.Error(), lost.Error()) {
		t.Errorf("error = %v", got.err)
	}
	runs := r.host.CommandRuns(1)
	if len(runs) != 1 || runs[0].Status != procs.RunKilled {
		t.Fatalf("runs = %+v, want one killed run", runs)
	}
	r.env.ContactLost = nil
	p, _ := r.mustCall(t, "command_run_read", map[string]any{"command_run_id": runs[0].ID})
	if p.Metadata["reason"] != procs.ReasonWorkerLost || !strings.Contains(p.Content, "lost contact with Temporal") || !strings.Contains(p.Content, "stdout:\nup") {
		t.Errorf("command_run_read = %q %v", p.Content, p.Metadata)
	}
}

// What a command does to the protected paths (settings, hook scripts, MCP
// configurations, git config and hooks, a hook script outside the
// workspace) is reported in its result, its metadata and its text, and
// nothing is reported for a command that leaves them alone. Where the
// host holds them read-only to commands (a root worker), those outside
// the workspace included, only what the command could still do is:
// create a missing one.
func TestExecCommandReportsChangesToProtectedPaths(t *testing.T) {
	r := newRig(t)
	r.write(t, ".claude/settings.json", `{"permissions":{"deny":["Bash(rm *)"]}}`)
	r.write(t, ".claude/hooks/guard.sh", "#!/bin/sh\nexit 2\n")
	r.write(t, ".git/config", "[core]\n")
	r.write(t, "notes.txt", "n\n")
	outsideGuard := filepath.Join(r.outside, "guard.sh")
	if err := os.WriteFile(outsideGuard, []byte("#!/bin/sh\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.ws.Protect([]string{outsideGuard}, nil)

	p, raw := r.mustCall(t, "exec_command", map[string]any{"command_line": "echo x >> notes.txt; cat .claude/settings.json >/dev/null; ls .git"})
	if res := decode[ExecCommandResult](t, raw); len(res.ProtectedPathsChanged) != 0 || p.Metadata["protected_paths_changed"] != nil {
		t.Fatalf("a command that only read them: changed %v", res.ProtectedPathsChanged)
	}

	p, raw = r.mustCall(t, "exec_command", map[string]any{"command_line": `echo '{}' > .claude/settings.json; printf 'exit 0\n' > .claude/hooks/guard.sh; ` +
		`printf '#!/bin/sh\n' > .git/hooks/pre-commit 2>/dev/null || { mkdir -p .git/hooks && printf '#!/bin/sh\n' > .git/hooks/pre-commit; }; ` +
		`echo '{"mcpServers":{}}' > .mcp.json; echo evil > .git/commondir; echo 'exit 0' > ` + outsideGuard})
	res := decode[ExecCommandResult](t, raw)
	want := []string{".claude/hooks/guard.sh", ".claude/settings.json", ".git/commondir", ".git/hooks", ".git/hooks/pre-commit", ".mcp.json", outsideGuard}
	if r.host.confinement.Load().holdsReadOnly() {
		// Those that existed were read-only to the command, the one
		// outside the workspace too; what it could still do is create one
		// (.mcp.json, .git/commondir).
		want = []string{".git/commondir", ".mcp.json"}
		settings, err := os.ReadFile(filepath.Join(r.ws.Dir(), ".claude", "settings.json"))
		if err != nil || string(settings) != `{"permissions":{"deny":["Bash(rm *)"]}}` {
			t.Errorf("settings = %q, %v", settings, err)
		}
		if guard, err := os.ReadFile(outsideGuard); err != nil || string(guard) != "#!/bin/sh\nexit 2\n" {
			t.Errorf("the hook script outside the workspace = %q, %v", guard, err)
		}
	}
	slices.Sort(want)
	if !slices.Equal(res.ProtectedPathsChanged, want) {
		t.Errorf("protected_paths_changed = %q, want %q", res.ProtectedPathsChanged, want)
	}
	if !strings.Contains(p.Content, "It changed protected paths (") || !strings.Contains(p.Content, ".claude/settings.json") {
		t.Errorf("content = %q, want the changed protected paths named", p.Content)
	}
	if p.Metadata["protected_paths_changed"] == nil {
		t.Errorf("metadata = %v, want protected_paths_changed", p.Metadata)
	}
}
