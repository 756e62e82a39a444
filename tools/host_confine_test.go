package tools

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/proctree"
	"github.com/fenixrt/fenix/workspace"
)

// A sandbox that cannot be applied (here: confinement off) runs commands
// unsandboxed, as Claude Code does, unless a settings file asked for
// failIfUnavailable: then exec_command and process_exec are refused with
// a ToolUnavailableError naming the file, and run again once the sandbox
// is dropped.
func TestSandboxThatCannotBeAppliedRefusesCommandsWhenAskedTo(t *testing.T) {
	r := newRig(t, func(c *HostConfig) { c.Confinement = confine.ModeOff })
	sandbox := confine.Policy{Boundary: &confine.Boundary{}}
	if err := r.host.SetCommandSandbox(sandbox, true, []string{"/p/.claude/settings.json"}); err != nil {
		t.Fatal(err)
	}
	for tool, args := range map[string]map[string]any{
		"exec_command": {"command_line": "echo x > ran.txt"},
		"process_exec": {"command_line": "echo x > ran.txt"},
	} {
		_, _, err := r.call(t, tool, args)
		var fe *fenixerr.Error
		if !errors.As(err, &fe) || fe.Type != fenixerr.TypeToolUnavailable || fe.Code != "sandbox_unavailable" {
			t.Fatalf("%s: got %v, want ToolUnavailableError sandbox_unavailable", tool, err)
		}
		if !strings.Contains(fe.Message, "/p/.claude/settings.json") {
			t.Errorf("%s: the refusal does not name the settings file: %s", tool, fe.Message)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "ran.txt")); err == nil {
		t.Fatal("a refused command ran")
	}
	if err := r.host.SetCommandSandbox(sandbox, false, []string{"/p/.claude/settings.json"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.call(t, "exec_command", map[string]any{"command_line": "echo x > ran.txt"}); err != nil {
		t.Fatalf("without failIfUnavailable the command runs unsandboxed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "ran.txt")); err != nil {
		t.Fatal(err)
	}
}

// A command cannot write the cgroup hierarchies: it cannot move itself out
// of its run's cgroup (and outlive cancellation), nor freeze or kill
// another run's cgroup (a hook's: a frozen hook times out and fails open).
// It can still read them. Unconfined, the same writes go through.
func TestCommandsCannotWriteCgroups(t *testing.T) {
	parent := proctree.Parent()
	if parent == "" {
		t.Skip("no writable cgroup v2 here: commands get no cgroup of their own")
	}
	if confine.ABIVersion() < 2 {
		t.Skip("no Landlock ABI 2 here: commands run unconfined")
	}
	victim, err := proctree.New(parent, proctree.PrefixHook)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	sleeper := exec.Command("sleep", "30")
	sleeper.SysProcAttr = &syscall.SysProcAttr{}
	victim.Attach(sleeper.SysProcAttr)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()

	script := `own=$(sed -n 's/^0:://p' /proc/self/cgroup)
case "$own" in */fenix-cmd-*) echo in-run-cgroup ;; esac
cat "$VICTIM/cgroup.procs" >/dev/null && echo read
echo 1 > "$VICTIM/cgroup.freeze" 2>/dev/null && echo froze-victim
echo 0 > "$VICTIM/cgroup.freeze" 2>/dev/null
sh -c 'echo $$ > "$PARENT/cgroup.procs" 2>/dev/null && echo left-cgroup'
true`
	env := map[string]any{"VICTIM": victim.Dir(), "PARENT": parent}
	run := func(t *testing.T, r *testRig) string {
		t.Helper()
		p, _, err := r.call(t, "exec_command", map[string]any{"command_line": script, "env": env})
		if err != nil {
			t.Fatal(err)
		}
		return p.Content
	}

	confined := run(t, newRig(t))
	for _, want := range []string{"in-run-cgroup", "read"} {
		if !strings.Contains(confined, want) {
			t.Errorf("confined command: %q lacks %q", confined, want)
		}
	}
	for _, escaped := range []string{"froze-victim", "left-cgroup"} {
		if strings.Contains(confined, escaped) {
			t.Errorf("confined command: %s (%q)", escaped, confined)
		}
	}

	unconfined := run(t, newRig(t, func(c *HostConfig) { c.Confinement = confine.ModeOff }))
	if !strings.Contains(unconfined, "froze-victim") || !strings.Contains(unconfined, "left-cgroup") {
		t.Logf("unconfined, the writes did not go through either (not this machine's user's cgroups?): %q", unconfined)
	}
}

// A service started by process_exec under a network sandbox listens on
// its own namespace's loopback: nothing on the host reaches its port
// directly, but the readiness check and the reverse proxy dial it from
// inside, so it serves as before.
func TestSandboxedServiceIsReachedInsideItsNetwork(t *testing.T) {
	if confine.ABIVersion() < 2 || os.Geteuid() != 0 {
		t.Skip("a network namespace per command needs Landlock and a root worker")
	}
	r := newRig(t)
	refuseAll := netguard.DomainList{Setting: "sandbox.network of /p/.claude/settings.json"}
	sandbox := confine.Policy{Boundary: &confine.Boundary{}, Network: &confine.Network{Dial: refuseAll.DialContext(&net.Dialer{}), Describe: refuseAll.String()}}
	if err := r.host.SetCommandSandbox(sandbox, true, []string{"/p/.claude/settings.json"}); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	_, raw := r.mustCall(t, "process_exec", map[string]any{
		"command_line": helperCommand(t),
		"port":         port,
		"env":          map[string]any{helperEnv: "http"},
	})
	res := decode[ProcessExecResult](t, raw)
	defer r.mustCall(t, "process_stop", map[string]any{"process_run_id": res.ProcessRunID})
	if !res.Ready {
		t.Fatalf("the sandboxed service was not found ready: %+v", res)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(port))); err == nil {
		conn.Close()
		t.Fatal("the service's port is open on the host's loopback: it is not in its workspace's namespace")
	}
	code, body := httpGet(t, res.ProxyURL+"api?x=1")
	if code != http.StatusOK || !strings.HasPrefix(body, "helper says hi: path=/api query=x=1") {
		t.Fatalf("through the reverse proxy: %d %q", code, body)
	}

	// The port is the workspace's: the same workspace cannot declare it
	// twice, another workspace can, and each proxy reaches its own.
	args := map[string]any{"command_line": helperCommand(t), "port": port, "env": map[string]any{helperEnv: "http"}}
	if _, _, err := r.call(t, "process_exec", args); err == nil || !strings.Contains(err.Error(), "port in use") {
		t.Fatalf("a second service on the port in the same workspace: %v, want port in use", err)
	}
	other, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	env := *r.env
	env.Workspace = other
	raw, err = r.reg.Execute(context.Background(), &env, contract.ToolCall{CallID: "call-2", ToolName: "process_exec", Arguments: args})
	if err != nil {
		t.Fatalf("the same port in another workspace: %v", err)
	}
	second := decode[ProcessExecResult](t, raw)
	defer r.mustCall(t, "process_stop", map[string]any{"process_run_id": second.ProcessRunID})
	if !second.Ready {
		t.Fatalf("the other workspace's service was not found ready: %+v", second)
	}
	for _, run := range []ProcessExecResult{res, second} {
		if code, body := httpGet(t, run.ProxyURL); code != http.StatusOK || !strings.HasSuffix(body, "prefix=/proxy/"+run.ProcessRunID) {
			t.Errorf("process run %s through its proxy: %d %q", run.ProcessRunID, code, body)
		}
	}
}

// A protected path in /tmp (a data directory there, workspace bases
// under /tmp) leaves commands no new entries in /tmp itself: mktemp
// failed in every command. They get a TMPDIR of their own there, which
// mktemp, python's tempfile and Go's os.TempDir use.
func TestCommandsHaveATemporaryDirectoryPastAProtectedPathInTmp(t *testing.T) {
	if confine.ABIVersion() < 2 {
		t.Skip("no Landlock ABI 2 here: commands run unconfined")
	}
	r := newRig(t) // its data directory is in t.TempDir, under /tmp
	p, _, err := r.call(t, "exec_command", map[string]any{"command_line": `f=$(mktemp) && echo scratch > "$f" && cat "$f" && rm "$f" && echo "in $TMPDIR"`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, "scratch") || !strings.Contains(p.Content, "fenix-commands-") {
		t.Errorf("mktemp in a command: %q", p.Content)
	}
}
