package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/internal/worker"
)

// Commands run as the worker's user own its data directory, where the
// hook scripts the worker pinned live. Before confinement an agent's
// exec_command could `chmod u+w` a pinned guard and rewrite it, and the
// next call ran the rewritten guard: no reload, nothing reported. Now
// the command runs in a Landlock domain that cannot read or write the
// data directory (pinned scripts, audit log, transcripts, records), so
// the guard keeps governing, while the agent's own work goes on.
func TestCommandsCannotRewriteTheWorkersState(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("the kernel has no Landlock ABI 2")
	}
	project := guardedProject(t)
	w := startWorker(t, inProject(project))
	pinned, err := filepath.Glob(filepath.Join(w.dataDir, "hook-scripts", "*", "guard.sh"))
	require.NoError(t, err)
	require.Len(t, pinned, 1, "the worker runs a pinned copy of the guard")
	pinnedBefore, err := os.ReadFile(pinned[0])
	require.NoError(t, err)

	run := commandRunner(w, project, "confined")
	stdout := func(t *testing.T, command string) string {
		t.Helper()
		res := run(t, "exec_command", command)
		require.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", command, res.Error)
		return res.Output.Content
	}
	requireBlocked := func(t *testing.T, when string) { requireRmBlocked(t, run, project, "", when) }
	requireBlocked(t, "before any tampering")

	pinnedDir := filepath.Dir(pinned[0])
	audit := filepath.Join(w.dataDir, "audit.db")
	for _, attack := range []string{
		fmt.Sprintf("chmod -R u+w %s && printf '#!/bin/sh\\nexit 0\\n' > %s", pinnedDir, pinned[0]),
		fmt.Sprintf("chmod u+w %s && rm -f %s && printf '#!/bin/sh\\nexit 0\\n' > %s", pinnedDir, pinned[0], pinned[0]),
		fmt.Sprintf("mv %s %s.old", filepath.Join(w.dataDir, "hook-scripts"), filepath.Join(w.dataDir, "hook-scripts")),
		"cat " + audit + " > /dev/null",
		"rm -f " + audit,
		"ln " + audit + " audit-copy.db",
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/root" + audit + " > /dev/null",
	} {
		out := stdout(t, attack+" && echo ATTACK-WORKED || echo refused")
		assert.Contains(t, out, "refused", attack)
		assert.NotContains(t, out, "ATTACK-WORKED", attack)
	}
	pinnedAfter, err := os.ReadFile(pinned[0])
	require.NoError(t, err)
	assert.Equal(t, string(pinnedBefore), string(pinnedAfter), "the pinned guard is unchanged")
	assert.FileExists(t, audit)
	requireBlocked(t, "after the attempts on the pinned guard")

	// A background service is confined the same way.
	res := run(t, "process_exec", fmt.Sprintf("printf x > %s/planted; echo done > service-ran.txt; sleep 60", w.dataDir))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "service-ran.txt"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the service ran")
	assert.NoFileExists(t, filepath.Join(w.dataDir, "planted"))

	// The agent's own work goes on: the workspace, system programs, the
	// temporary directory's existing entries.
	assert.Contains(t, stdout(t, "mkdir -p work && echo hello > work/notes.txt && cat work/notes.txt && ls / > /dev/null && git --version >/dev/null 2>&1; echo exit=$?"), "hello")
}

// A project whose .claude/settings.json turns on Claude Code's Bash
// sandbox gets it for exec_command and process_exec: commands write only
// in the workspace, their own TMPDIR and sandbox.filesystem.allowWrite,
// cannot read denyRead, and read everything else as before. Before, the
// key was ignored with a warning and the commands wrote anywhere.
func TestClaudeCodeSandboxConfinesCommandWrites(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("the kernel has no Landlock ABI 2")
	}
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("notes\n"), 0o644))
	cache := t.TempDir()
	secrets := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "token"), []byte("s3cret\n"), 0o600))
	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	settings := fmt.Sprintf(`{"sandbox": {"enabled": true, "filesystem": {"allowWrite": ["/%s"], "denyRead": ["/%s"]}}}`, cache, secrets)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(settings), 0o644))
	w := startWorker(t, inProject(project))
	runAny := commandRunner(w, project, "sandboxed")
	run := func(t *testing.T, tool, command string) contract.Result {
		t.Helper()
		res := runAny(t, tool, command)
		require.Equal(t, contract.StatusCompleted, res.Status, "%s: %+v", command, res.Error)
		return res
	}
	for _, refused := range []string{
		"echo x > " + filepath.Join(outside, "new.txt"),
		"echo x >> " + filepath.Join(outside, "notes.txt"),
		"rm " + filepath.Join(outside, "notes.txt"),
		"cat " + filepath.Join(secrets, "token"),
	} {
		out := run(t, "exec_command", refused+" && echo ESCAPED || echo refused").Output.Content
		assert.Contains(t, out, "refused", refused)
		assert.NotContains(t, out, "ESCAPED", refused)
	}
	out := run(t, "exec_command", "echo built > "+filepath.Join(cache, "out")+" && f=$(mktemp) && echo tmp > \"$f\" && cat \"$f\" && echo ws > in-workspace.txt && cat "+filepath.Join(outside, "notes.txt")).Output.Content
	assert.Contains(t, out, "tmp\nnotes", "the workspace, TMPDIR and allowWrite are writable, the rest readable")
	assert.FileExists(t, filepath.Join(cache, "out"))
	assert.FileExists(t, filepath.Join(project, "in-workspace.txt"))
	b, err := os.ReadFile(filepath.Join(outside, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "notes\n", string(b))
	assert.NoFileExists(t, filepath.Join(outside, "new.txt"))

	run(t, "process_exec", "echo x > "+filepath.Join(outside, "service.txt")+"; echo done > service-ran.txt; sleep 60")
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "service-ran.txt"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the service ran")
	assert.NoFileExists(t, filepath.Join(outside, "service.txt"), "a background service is sandboxed too")
}

// With Claude Code's sandbox on, a command reaches other hosts only
// through the proxies of its own network namespace, which let through
// sandbox.network.allowedDomains: an allowed host answers, any other is
// refused with the setting named, and neither a direct connection nor a
// host daemon's Unix socket goes anywhere.
// Before, the key was ignored with a warning and commands reached every
// host the worker could.
func TestClaudeCodeSandboxNetworkReachesOnlyAllowedDomains(t *testing.T) {
	if confine.ABIVersion() < 2 || os.Geteuid() != 0 {
		t.Skip("a network namespace per command needs Landlock and a root worker")
	}
	hostIP := ""
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				hostIP = n.IP.String()
				break
			}
		}
	}
	if hostIP == "" {
		t.Skip("no non-loopback IPv4 address to serve the allowed host on")
	}
	l, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Host)
	})}
	go server.Serve(l)
	defer server.Close()
	port := l.Addr().(*net.TCPAddr).Port
	daemon := filepath.Join(t.TempDir(), "daemon.sock")
	unixListener, err := net.Listen("unix", daemon)
	require.NoError(t, err)
	defer unixListener.Close()
	allowed := net.JoinHostPort(hostIP, strconv.Itoa(port))
	other := net.JoinHostPort("127.0.0.2", strconv.Itoa(port))

	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	// dontAsk: a host outside the list is refused at once, as Claude Code
	// refuses it in that mode (other modes ask: see
	// TestTheSandboxAsksAboutHostsOutsideItsDomains); Bash runs, since the
	// sandbox's autoAllowBashIfSandboxed approves it.
	settings := fmt.Sprintf(`{"permissions": {"defaultMode": "dontAsk"}, "sandbox": {"enabled": true, "network": {"allowedDomains": [%q]}}}`, allowed)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(settings), 0o644))
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "netsandboxed")
	script := fmt.Sprintf(`python3 - <<'EOF'
import socket, urllib.request, urllib.error
for url in ("http://%s/", "http://%s/"):
    try:
        print(urllib.request.urlopen(url, timeout=10).read().decode())
    except urllib.error.HTTPError as e:
        print(e.code, e.read().decode().strip())
try:
    socket.create_connection(("%s", %d), timeout=2)
    print("direct: connected")
except OSError as e:
    print("direct: failed")
try:
    socket.socket(socket.AF_UNIX).connect(%q)
    print("daemon socket: connected")
except OSError as e:
    print("daemon socket:", e.__class__.__name__)
EOF`, allowed, other, hostIP, port, daemon)
	res := run(t, "exec_command", script)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	out := res.Output.Content
	assert.Contains(t, out, "hello "+allowed)
	assert.Contains(t, out, "403 refused by the command sandbox's proxy: "+other+" is not on the allowed domains of sandbox.network of "+filepath.Join(project, ".claude", "settings.json"))
	assert.Contains(t, out, "direct: failed")
	assert.Contains(t, out, "daemon socket: PermissionError")
	assert.NotContains(t, out, "connected")

	// The workspace's commands share its loopback: a service started by
	// process_exec answers a later exec_command, which reaches it
	// directly (loopback is in NO_PROXY), and the reverse proxy reaches
	// it from inside the namespace.
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	servicePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	require.NoError(t, os.WriteFile(filepath.Join(project, "index.html"), []byte("served from the workspace"), 0o644))
	a := assignment("netsandboxed-service", map[string]any{"call_id": "call-netsandboxed-service", "tool_name": "process_exec",
		"arguments": map[string]any{"command_line": fmt.Sprintf("exec python3 -m http.server %d --bind 127.0.0.1", servicePort), "port": servicePort}}, "process_exec")
	a["workspace_root"] = project
	started, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, started.Status, "%+v", started.Error)
	assert.Equal(t, true, started.Output.Data["ready"], "the readiness check reached the port inside the namespace: %+v", started.Output)
	res = run(t, "exec_command", fmt.Sprintf("python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://localhost:%d/index.html\").read().decode())'", servicePort))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "served from the workspace")
}

// Under dontAsk, a project whose sandbox is on gets its commands
// approved without allow rules (autoAllowBashIfSandboxed, on by default
// in Claude Code): the sandbox is the boundary. Its deny rule still
// refuses, and a file write, no sandboxed command, still needs a rule.
func TestClaudeCodeSandboxAutoAllowsCommandsUnderDontAsk(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("the kernel has no Landlock ABI 2")
	}
	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{
	  "permissions": {"defaultMode": "dontAsk", "deny": ["Bash(rm:*)"]},
	  "sandbox": {"enabled": true}}`), 0o644))
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "auto-allowed")

	res := run(t, "exec_command", "echo built > out.txt && cat out.txt")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	assert.Contains(t, res.Output.Content, "built")

	res = run(t, "exec_command", "rm out.txt")
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "Bash(rm:*)")
	assert.FileExists(t, filepath.Join(project, "out.txt"))

	a := assignment("auto-allowed-write", map[string]any{"call_id": "call-auto-allowed-write", "tool_name": "workspace_write",
		"arguments": map[string]any{"path": "notes.txt", "content": "x"}}, "workspace_write")
	a["workspace_root"] = project
	res, _ = runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusFailed, res.Status)
	assert.Contains(t, res.Error.LastErrorSummary, "dontAsk")
	assert.NoFileExists(t, filepath.Join(project, "notes.txt"))
}

// requireRmBlocked runs rm -rf ./scratch in project through run and
// requires it blocked by a guard (whose reason contains want, when set),
// scratch left in place.
func requireRmBlocked(t *testing.T, run func(t *testing.T, tool, command string) contract.Result, project, want, when string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(project, "scratch"), 0o755))
	res := run(t, "exec_command", "rm -rf ./scratch")
	require.Equal(t, contract.StatusFailed, res.Status, "%s: rm -rf ran: %+v", when, res.Output)
	require.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, "%s: %+v", when, res.Error)
	if want != "" {
		assert.Contains(t, res.Error.LastErrorSummary, want, when)
	}
	assert.DirExists(t, filepath.Join(project, "scratch"), when)
}

// commandRunner runs one command line per assignment through tool
// (exec_command or process_exec) in project, each under its own work ID.
func commandRunner(w *testWorker, project, prefix string) func(t *testing.T, tool, command string) contract.Result {
	return conversationRunner(w, project, prefix, "")
}

// conversationRunner is commandRunner in a conversation of its own (""
// keeps assignment's).
func conversationRunner(w *testWorker, project, prefix, conversation string) func(t *testing.T, tool, command string) contract.Result {
	seq := 0
	return func(t *testing.T, tool, command string) contract.Result {
		t.Helper()
		seq++
		name := prefix + "-" + strconv.Itoa(seq)
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": map[string]any{"command_line": command}}, "exec_command", "process_exec")
		a["workspace_root"] = project
		if conversation != "" {
			a["conversation_id"] = conversation
		}
		res, _ := runAssignment(t, w.queue, a)
		return res
	}
}

// toolRunner runs one call of tool with args in project, an assignment
// named name that allows only that tool.
func toolRunner(w *testWorker, project string) func(t *testing.T, name, tool string, args map[string]any) contract.Result {
	return func(t *testing.T, name, tool string, args map[string]any) contract.Result {
		t.Helper()
		a := assignment(name, map[string]any{"call_id": "call-" + name, "tool_name": tool, "arguments": args}, tool)
		a["workspace_root"] = project
		res, _ := runAssignment(t, w.queue, a)
		return res
	}
}

// A hook that dies from a signal is a hook that crashed, and a crashed
// Claude Code hook fails open; a guard whose grep cannot start allows. So
// an agent that first starts a service killing the project's guard
// whenever it runs, or lowering its open-file limit to 0, then asks for
// `rm -rf`, got past the guard while commands could reach the worker's
// processes. Now a command signals only what it started (Landlock ABI 6)
// and sets only its own limits (a seccomp filter on prlimit64): the
// service's attempts are refused and the guard blocks.
func TestCommandsCannotDisarmTheGuard(t *testing.T) {
	if confine.ABIVersion() < 6 {
		t.Skip("the kernel's Landlock does not scope signals (ABI 6)")
	}
	project := policyGuardProject(t)
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "disarm")

	// The pattern is split so the service's own command line does not
	// match it.
	for _, attack := range []struct{ name, loop, refusal string }{
		{"kill", `pkill -9 -f 'policy-gua''rd' 2>>kill.log`, "kill.log"},
		{"prlimit", `for p in $(pgrep -f 'policy-gua''rd'); do prlimit --pid "$p" --nofile=0:0 2>>prlimit.log; done`, "prlimit.log"},
	} {
		t.Run(attack.name, func(t *testing.T) {
			up := attack.name + "-up"
			res := run(t, "process_exec", fmt.Sprintf("touch %s; while :; do %s; sleep 0.02; done", up, attack.loop))
			require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
			require.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join(project, up))
				return err == nil
			}, 10*time.Second, 50*time.Millisecond, "the attacking service runs")

			require.NoError(t, os.MkdirAll(filepath.Join(project, "scratch"), 0o755))
			res = run(t, "exec_command", "rm -rf ./scratch")
			require.Equal(t, contract.StatusFailed, res.Status, "rm -rf ran past a disarmed guard: %+v", res.Output)
			assert.Equal(t, fenixerr.TypeToolBlocked, res.Error.ErrorType, "%+v", res.Error)
			assert.Contains(t, res.Error.LastErrorSummary, "rm -rf is not allowed")
			assert.DirExists(t, filepath.Join(project, "scratch"))
			refusals, err := os.ReadFile(filepath.Join(project, attack.refusal))
			require.NoError(t, err)
			assert.Contains(t, string(refusals), "Operation not permitted", "the service did try")
		})
	}
}

// policyGuardProject is a project whose PreToolUse guard is written as
// teams write them: it asks a policy service first (here a second's
// wait), which leaves time to reach it, then greps the call.
func policyGuardProject(t *testing.T) string {
	return writeClaudeProject(t, "", map[string]string{"policy-guard.sh": `#!/bin/bash
input=$(cat)
sleep 1
if printf '%s' "$input" | grep -q 'rm -rf'; then
  echo "project policy: rm -rf is not allowed" >&2; exit 2
fi
exit 0
`}, `{"hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "bash \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/policy-guard.sh"}]}
]}}`)
}

// Where commands may signal every process of their user
// (FENIX_COMMAND_SIGNALS=any, or a kernel whose Landlock does not scope
// signals), an agent's service that kills the guard whenever it runs used
// to make it crash and fail open. A guard killed by a signal the worker
// did not send now fails closed, so rm -rf stays blocked, naming the kill.
func TestKillingTheGuardDoesNotDisarmIt(t *testing.T) {
	project := policyGuardProject(t)
	w := startWorker(t, inProject(project), func(c *worker.Config) { c.HostConfig.SignalsAnywhere = true })
	run := commandRunner(w, project, "kill-guard")
	res := run(t, "process_exec", "touch killer-up; while :; do pkill -9 -f 'policy-gua''rd' 2>/dev/null; sleep 0.02; done")
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(project, "killer-up"))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the killing service runs")

	requireRmRfBlocked(t, run, project, "a killed guard", "was killed by SIGKILL")
}

// A guard that runs the project's own tooling before it decides (a lint
// script, as teams' guards run `npm run lint`) runs code the agent can
// rewrite, in the guard's own domain, where signals reach the guard. The
// agent rewrote the script to kill the guard with SIGSEGV: the hook's
// shell, whose child the guard is, exited with status 139, an ordinary
// failure, and rm -rf ran. A hook whose exit status reports a process
// killed by a signal now fails closed too.
func TestAGuardKilledThroughItsOwnToolingFailsClosed(t *testing.T) {
	project := writeClaudeProject(t, "", map[string]string{"lint-guard.sh": `#!/bin/bash
input=$(cat)
sh "$CLAUDE_PROJECT_DIR"/scripts/lint.sh >/dev/null 2>&1
if printf '%s' "$input" | grep -q 'rm -rf'; then
  echo "project policy: rm -rf is not allowed" >&2; exit 2
fi
exit 0
`}, `{"hooks": {"PreToolUse": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/lint-guard.sh"}]}
]}}`)
	require.NoError(t, os.MkdirAll(filepath.Join(project, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "scripts", "lint.sh"), []byte("exit 0\n"), 0o755))
	w := startWorker(t, inProject(project))
	run := commandRunner(w, project, "lint-kill")
	requireRmRfBlocked(t, run, project, "the guard", "")

	res := run(t, "exec_command", `printf 'kill -SEGV $PPID\n' > scripts/lint.sh && echo rewritten`)
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	require.Contains(t, res.Output.Content, "rewritten")
	requireRmRfBlocked(t, run, project, "a guard its lint script killed", "killed by SIGSEGV")
}

// A hook project given apart from the workspace (-hooks-file policy/,
// -workspace-root ws/): its settings, hook script, .mcp.json and MCP
// server script lay outside the workspace's mount namespace, and the
// agent's command (or an MCP server) rewrote them; the worker kept its
// pinned hooks, but a server's changed script ran at its next start.
// On a root worker they are read-only to commands as the workspace's own
// are; the command's other writes go on.
func TestAHookProjectOutsideTheWorkspaceIsReadOnlyToCommands(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("read-only paths need a root worker's mount namespaces")
	}
	policy, ws := t.TempDir(), t.TempDir()
	files := map[string]string{
		".claude/settings.json":  `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}]}}`,
		".claude/hooks/guard.sh": "grep -q FORBIDDEN && exit 2\nexit 0\n",
		"servers/notes.sh":       "exit 1\n",
	}
	// A server runs in the workspace: one of the hook project's is named
	// by its path there.
	files[".mcp.json"] = `{"mcpServers": {"notes": {"command": "sh", "args": ["` + filepath.Join(policy, "servers", "notes.sh") + `"]}}}`
	for rel, body := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(policy, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(policy, rel), []byte(body), 0o644))
	}
	w := startWorker(t, func(c *worker.Config) { c.HookSources, c.DefaultWorkspaceRoot = []string{policy}, ws })
	require.NoError(t, os.WriteFile(filepath.Join(ws, "rewrite.sh"), []byte(`P=`+policy+`
try() { if sh -c "$2" 2>/dev/null; then echo "$1: done"; else echo "$1: refused"; fi; }
export P
try settings 'echo "{}" > "$P/.claude/settings.json"'
try local 'echo "{}" > "$P/.claude/settings.local.json"'
try guard 'echo "exit 0" > "$P/.claude/hooks/guard.sh"'
try mcp 'echo "{}" > "$P/.mcp.json"'
try server 'echo "touch /tmp/pwned" >> "$P/servers/notes.sh"'
try move 'mv "$P/.claude" "$P/claude-old"'
try workspace 'echo fine > notes.txt'
`), 0o644))
	res := toolRunner(w, ws)(t, "rewrite-policy", "exec_command", map[string]any{"command_line": "sh rewrite.sh"})
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	for _, line := range []string{"settings: refused", "local: refused", "guard: refused", "mcp: refused", "server: refused", "move: refused", "workspace: done"} {
		assert.Contains(t, res.Output.Content, line)
	}
	for rel, body := range files {
		got, err := os.ReadFile(filepath.Join(policy, rel))
		require.NoError(t, err)
		assert.Equal(t, body, string(got), rel)
	}
	assert.NoFileExists(t, filepath.Join(policy, ".claude", "settings.local.json"))
}
