//go:build linux

package confine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fenixrt/fenix/netguard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// layout is a worker's state next to a workspace and other files, the
// way a data directory sits in a home directory.
type layout struct {
	root, state, skills, guard, audit, ws, other, loose string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	root := t.TempDir()
	l := layout{
		root:   root,
		state:  filepath.Join(root, "state"),
		skills: filepath.Join(root, "state", "skills"),
		guard:  filepath.Join(root, "state", "hook-scripts", "0123", "guard.sh"),
		audit:  filepath.Join(root, "state", "audit.db"),
		ws:     filepath.Join(root, "ws"),
		other:  filepath.Join(root, "other"),
		loose:  filepath.Join(root, "notes.txt"),
	}
	for _, d := range []string{l.skills, filepath.Dir(l.guard), l.ws, l.other} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(l.guard, []byte("#!/bin/sh\nexit 2\n"), 0o500))
	require.NoError(t, os.Chmod(filepath.Dir(l.guard), 0o500))
	require.NoError(t, os.WriteFile(l.audit, []byte("audit rows"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(l.skills, "run.sh"), []byte("echo skill ran\n"), 0o644))
	require.NoError(t, os.WriteFile(l.loose, []byte("notes\n"), 0o644))
	t.Cleanup(func() { os.Chmod(filepath.Dir(l.guard), 0o700) })
	return l
}

func newConfiner(t *testing.T, p Policy) *Confiner {
	t.Helper()
	c, err := New(p)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no Landlock here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// sh runs script confined in workspace and returns its exit code and
// combined output.
func sh(t *testing.T, c *Confiner, workspace, script string) (int, string) {
	t.Helper()
	return shIn(t, c, workspace, "", script)
}

// shIn is sh in group (StartInGroup's).
func shIn(t *testing.T, c *Confiner, workspace, group, script string) (int, string) {
	t.Helper()
	return shWith(t, c, workspace, group, nil, script)
}

func TestCommandsCannotReachHiddenPaths(t *testing.T) {
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}, ReadOnly: []string{l.skills}})
	refused := map[string]string{
		"read the audit log":              "cat " + l.audit,
		"rewrite a pinned guard":          fmt.Sprintf("chmod u+w %s %s; printf 'exit 0' > %s", filepath.Dir(l.guard), l.guard, l.guard),
		"replace a pinned guard":          fmt.Sprintf("chmod u+w %s; rm -f %s; printf 'exit 0' > %s", filepath.Dir(l.guard), l.guard, l.guard),
		"plant bytecode next to a guard":  fmt.Sprintf("chmod u+w %s; mkdir %s/__pycache__", filepath.Dir(l.guard), filepath.Dir(l.guard)),
		"remove the audit log":            "rm " + l.audit,
		"move the state away":             fmt.Sprintf("mv %s %s.old", l.state, l.state),
		"hard-link the audit log out":     fmt.Sprintf("ln %s %s/audit-copy", l.audit, l.ws),
		"follow a symlink into the state": fmt.Sprintf("ln -s %s %s/link && cat %s/link/audit.db", l.state, l.other, l.other),
		"go through the worker's root":    fmt.Sprintf("cat /proc/%d/root%s", os.Getpid(), l.audit),
		"write a read-only skill":         fmt.Sprintf("echo x >> %s/run.sh", l.skills),
		"add a skill":                     fmt.Sprintf("echo x > %s/new.sh", l.skills),
		"add an entry beside the state":   "touch " + filepath.Join(l.root, "new-entry"),
	}
	for what, script := range refused {
		code, out := sh(t, c, l.ws, script)
		assert.NotZero(t, code, "%s: %s ran: %s", what, script, out)
	}
	guard, err := os.ReadFile(l.guard)
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\nexit 2\n", string(guard), "the pinned guard is unchanged")
	assert.FileExists(t, l.audit)
	assert.NoDirExists(t, filepath.Join(filepath.Dir(l.guard), "__pycache__"))
	assert.NoFileExists(t, filepath.Join(l.ws, "audit-copy"))

	allowed := map[string]string{
		"write the workspace":            "echo ok > out.txt && cat out.txt",
		"write beside the state":         fmt.Sprintf("echo ok > %s/out.txt && mkdir -p %s/sub/dir", l.other, l.other),
		"read and append a loose file":   fmt.Sprintf("cat %s && echo more >> %s", l.loose, l.loose),
		"run a skill":                    "sh " + filepath.Join(l.skills, "run.sh"),
		"list the state's names":         "ls " + l.state,
		"run system programs":            "ls / >/dev/null && date >/dev/null",
		"write the workspace's children": "mkdir -p a/b && echo x > a/b/c && mv a/b/c a/d && rm -r a",
	}
	for what, script := range allowed {
		code, out := sh(t, c, l.ws, script)
		assert.Zero(t, code, "%s: %s failed: %s", what, script, out)
	}
	// The worker itself is not confined.
	require.NoError(t, os.WriteFile(l.audit, []byte("more rows"), 0o600))
}

// A directory added beside the state after the rules were cut is reached
// by the next command: its leading directory changed, so the rules are
// cut again.
func TestEntriesAddedLaterAreReached(t *testing.T) {
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	code, out := sh(t, c, l.ws, "true")
	require.Zero(t, code, out)
	later := filepath.Join(l.root, "later")
	require.NoError(t, os.Mkdir(later, 0o755))
	code, out = sh(t, c, l.ws, "echo x > "+filepath.Join(later, "file"))
	assert.Zero(t, code, out)
	code, out = sh(t, c, l.ws, "cat "+l.audit)
	assert.NotZero(t, code, "still hidden after the rebuild: %s", out)
}

// A workspace inside the state is the command's. The worker's paths are
// protected inside a workspace too (that workspace then gets no new
// entries in its root); a Boundary's deny lists inside it only where the
// command gets a mount namespace (a root worker), which holds them without
// costing the root its new entries.
func TestWorkspacesAndProtectedPathsNested(t *testing.T) {
	l := newLayout(t)
	inner := filepath.Join(l.state, "workspaces", "w1")
	require.NoError(t, os.MkdirAll(inner, 0o755))
	private := filepath.Join(l.ws, ".private")
	require.NoError(t, os.Mkdir(private, 0o755))
	c := newConfiner(t, Policy{Hidden: []string{l.state}, Boundary: &Boundary{DenyRead: []string{private}, Writable: []string{"/"}}})

	code, out := sh(t, c, inner, "echo x > file && cat file")
	assert.Zero(t, code, "a workspace inside the state: %s", out)
	code, out = sh(t, c, inner, "cat "+l.audit)
	assert.NotZero(t, code, "the rest of the state stays hidden: %s", out)

	if c.ReadOnlyUnavailable() != nil {
		code, out = sh(t, c, l.ws, "echo x > new-file && echo y > .private/file")
		assert.Zero(t, code, "a deny list inside the workspace is left out: %s", out)
	} else {
		require.NoError(t, os.WriteFile(filepath.Join(private, "file"), []byte("s3cret-token\n"), 0o644))
		code, out = sh(t, c, l.ws, "echo x > new-file")
		assert.Zero(t, code, "the workspace's root takes new entries: %s", out)
		code, out = sh(t, c, l.ws, "cat .private/file || ls -A .private; echo z > .private/other")
		assert.NotZero(t, code, "a deny list inside the workspace is held: %s", out)
		assert.NotContains(t, out, "s3cret-token", "read through the deny list")
	}
	code, out = sh(t, c, l.other, "cat "+filepath.Join(private, "file"))
	assert.NotZero(t, code, "from another workspace it is hidden: %s", out)

	code, out = sh(t, c, l.root, "cat "+l.audit)
	assert.NotZero(t, code, "a workspace holding the state does not uncover it: %s", out)
	code, out = sh(t, c, l.root, "echo x > ws/from-above")
	assert.Zero(t, code, "its existing entries stay writable: %s", out)
}

// A read-only home that holds the hidden data directory and the
// workspace: the home's files and directories, its entries' entries
// included, are read but never written (a python user site is where a
// command would plant code for the hooks to run), the data directory
// stays hidden, and the workspace in it is the command's.
func TestReadOnlyHomeAroundTheStateAndTheWorkspace(t *testing.T) {
	l := newLayout(t)
	site := filepath.Join(l.root, ".local", "lib", "python3", "site-packages")
	require.NoError(t, os.MkdirAll(site, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(l.root, ".bashrc"), []byte("# rc\n"), 0o644))
	c := newConfiner(t, Policy{Hidden: []string{l.state}, ReadOnly: []string{l.root}})
	refused := map[string]string{
		"plant a usercustomize in the user site": "echo 'import os' > " + filepath.Join(site, "usercustomize.py"),
		"make the user site":                     "mkdir -p " + filepath.Join(l.root, ".local", "lib", "python3.99", "site-packages"),
		"append to a dotfile":                    "echo evil >> " + filepath.Join(l.root, ".bashrc"),
		"add a file to the home":                 "touch " + filepath.Join(l.root, "new"),
		"read the audit log":                     "cat " + l.audit,
		"write beside the workspace":             "echo x > " + filepath.Join(l.other, "f"),
	}
	for what, script := range refused {
		code, out := sh(t, c, l.ws, script)
		assert.NotZero(t, code, "%s: %s ran: %s", what, script, out)
	}
	assert.NoFileExists(t, filepath.Join(site, "usercustomize.py"))
	allowed := map[string]string{
		"read a dotfile":         "cat " + filepath.Join(l.root, ".bashrc"),
		"list the user site":     "ls " + site,
		"list the state's names": "ls " + l.state,
		"write the workspace":    "mkdir -p a/b && echo x > a/b/c && cat a/b/c",
	}
	for what, script := range allowed {
		code, out := sh(t, c, l.ws, script)
		assert.Zero(t, code, "%s: %s failed: %s", what, script, out)
	}

	// A sandbox's allowWrite in the home is written, and only it.
	npm := filepath.Join(l.root, ".npm")
	require.NoError(t, os.Mkdir(npm, 0o755))
	c = newConfiner(t, Policy{Hidden: []string{l.state}, ReadOnly: []string{l.root}, Boundary: &Boundary{Writable: []string{npm}}})
	code, out := sh(t, c, l.ws, "mkdir -p "+filepath.Join(npm, "cache")+" && echo x > "+filepath.Join(npm, "cache", "f"))
	assert.Zero(t, code, "an allowWrite in the home: %s", out)
	code, out = sh(t, c, l.ws, "echo 'import os' > "+filepath.Join(site, "usercustomize.py"))
	assert.NotZero(t, code, "the rest of the home stays read-only: %s", out)
}

// Writable paths inside a hidden one are reached, as a hook's plugin
// data directory in the data directory, whose pinned scripts it reads
// and whose audit log it does not.
func TestWritablePathsInsideAHiddenOne(t *testing.T) {
	l := newLayout(t)
	plugin := filepath.Join(l.state, "plugin-data", "p1")
	require.NoError(t, os.MkdirAll(plugin, 0o755))
	c := newConfiner(t, Policy{Hidden: []string{l.state}, ReadOnly: []string{filepath.Dir(l.guard)}, Writable: []string{filepath.Join(l.state, "plugin-data")}})
	code, out := sh(t, c, l.ws, "echo x > "+filepath.Join(plugin, "cache")+" && cat "+l.guard)
	assert.Zero(t, code, "write the plugin data, read the pinned guard: %s", out)
	for what, script := range map[string]string{
		"rewrite the pinned guard":   "echo 'exit 0' > " + l.guard,
		"read the audit log":         "cat " + l.audit,
		"add beside the plugin data": "touch " + filepath.Join(l.state, "new"),
	} {
		code, out := sh(t, c, l.ws, script)
		assert.NotZero(t, code, "%s: %s ran: %s", what, script, out)
	}
}

func TestPolicyRefusesTheRoot(t *testing.T) {
	_, err := New(Policy{Hidden: []string{"/"}})
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"/"`)
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, " Require ": ModeRequire, "off": ModeOff} {
		got, err := ParseMode(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseMode("strict")
	assert.ErrorContains(t, err, `"strict"`)
}

// A parent-death signal fires when the thread that started a process
// ends: the confining thread lives until release, so a command started
// with one (as procs starts every shell) is not killed when Start
// returns.
func TestCommandsOutliveStart(t *testing.T) {
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	cmd := exec.Command("/bin/sh", "-c", "sleep 0.3; echo alive")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &strings.Builder{}
	cmd.Stdout = out
	release, err := c.Start(cmd, l.ws)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	release()
	assert.Equal(t, "alive\n", out.String())
}

// With a Boundary (Claude Code's sandbox.enabled) a command writes only
// in its workspace, the temporary directories, /dev and the paths the
// settings add; it still reads everything it could, and the hidden paths
// stay hidden.
func TestBoundaryConfinesWrites(t *testing.T) {
	l := newLayout(t)
	elsewhere := filepath.Join(l.root, "elsewhere")
	require.NoError(t, os.Mkdir(elsewhere, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "data.txt"), []byte("data\n"), 0o644))
	temp := filepath.Join(l.root, "tmp")
	require.NoError(t, os.Mkdir(temp, 0o700))
	c := newConfiner(t, Policy{Hidden: []string{l.state}, Boundary: &Boundary{Temp: temp, Writable: []string{l.other, "build"}}})
	allowed := map[string]string{
		"write the workspace":        "mkdir -p build sub && echo x > sub/f && echo x > build/out && mv sub/f sub/g",
		"write the temporary dir":    "f=$(TMPDIR=" + temp + " mktemp) && echo x > \"$f\" && rm \"$f\"",
		"write /dev/null":            "echo x > /dev/null",
		"write an allowed path":      "echo x > " + filepath.Join(l.other, "out.txt"),
		"read outside the workspace": "cat " + filepath.Join(elsewhere, "data.txt") + " " + l.loose,
		"run programs":               "ls / > /dev/null",
	}
	for what, script := range allowed {
		code, out := sh(t, c, l.ws, script)
		assert.Zero(t, code, "%s: %s failed: %s", what, script, out)
	}
	refused := map[string]string{
		"write a sibling directory":      "echo x > " + filepath.Join(elsewhere, "new.txt"),
		"append to a file outside":       "echo x >> " + l.loose,
		"remove a file outside":          "rm " + filepath.Join(elsewhere, "data.txt"),
		"move a file into the workspace": "mv " + filepath.Join(elsewhere, "data.txt") + " .",
		"read a hidden path":             "cat " + l.audit,
	}
	for what, script := range refused {
		code, out := sh(t, c, l.ws, script)
		assert.NotZero(t, code, "%s: %s ran: %s", what, script, out)
	}
	assert.FileExists(t, filepath.Join(elsewhere, "data.txt"))
	b, err := os.ReadFile(l.loose)
	require.NoError(t, err)
	assert.Equal(t, "notes\n", string(b))
}

// Where the kernel scopes them (ABI 6), a command connects only to the
// abstract unix sockets its own processes listen on: not to one the
// worker (or a host service, or another run's command) listens on, which
// no file rule reaches since it has no path.
func TestAbstractSocketsStayWithinTheCommand(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}, SignalsAnywhere: true})
	if c.ABI() < 6 {
		t.Skipf("Landlock ABI %d does not scope abstract sockets (6 does)", c.ABI())
	}
	require.True(t, c.SocketsScoped(), "scoped whether or not signals are")
	name := fmt.Sprintf("fenix-test-%d", os.Getpid())
	outside, err := net.Listen("unix", "@"+name)
	require.NoError(t, err)
	defer outside.Close()
	go func() {
		for {
			conn, err := outside.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Write([]byte("the worker's secret\n"))
			conn.Close()
		}
	}()
	code, out := sh(t, c, l.ws, fmt.Sprintf(`python3 - <<'PY'
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0%s"); print("outside-reached", s.recv(100))
except OSError as e:
    print("outside-refused", e)
own = socket.socket(socket.AF_UNIX); own.bind("\0%s-own"); own.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect("\0%s-own"); print("own-reached")
PY`, name, name, name))
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "outside-refused")
	assert.Contains(t, out, "Operation not permitted")
	assert.NotContains(t, out, "outside-reached")
	assert.Contains(t, out, "own-reached", "a command's own abstract sockets still work")
	conn, err := net.Dial("unix", "@"+name)
	require.NoError(t, err, "the worker, outside the domain, still connects")
	conn.Close()
}

// Where the kernel scopes signals (ABI 6), a command signals only the
// processes it started: not the worker, not a hook or any other process
// the worker runs unconfined, not another command — also under a
// sandbox's stacked boundary. Killing a hook would make it fail open;
// killing another conversation's service would reach past its run.
func TestSignalsStayWithinTheCommand(t *testing.T) {
	l := newLayout(t)
	for _, p := range []Policy{{Hidden: []string{l.state}}, {Hidden: []string{l.state}, Boundary: &Boundary{}}} {
		c := newConfiner(t, p)
		if c.ABI() < 6 {
			t.Skipf("Landlock ABI %d does not scope signals (6 does)", c.ABI())
		}
		require.True(t, c.SignalsScoped())
		hook := exec.Command("sleep", "30")
		require.NoError(t, hook.Start())
		other := exec.Command("sleep", "30")
		release, err := c.Start(other, l.ws)
		require.NoError(t, err)

		code, out := sh(t, c, l.ws, fmt.Sprintf(`sleep 30 & child=$!
kill -0 $child && echo own-child
kill $child && wait $child; echo child-ended
kill -0 $$ && echo itself
kill -9 %d 2>&1 || echo hook-refused
kill -9 %d 2>&1 || echo other-command-refused
kill -0 %d 2>&1 || echo worker-refused
true`, hook.Process.Pid, other.Process.Pid, os.Getpid()))
		assert.Equal(t, 0, code, out)
		for _, want := range []string{"own-child", "child-ended", "itself", "hook-refused", "other-command-refused", "worker-refused"} {
			assert.Contains(t, out, want, "boundary %v", p.Boundary != nil)
		}
		assert.Contains(t, out, "Operation not permitted")

		// FENIX_COMMAND_SIGNALS=any gives the old reach back.
		p.SignalsAnywhere = true
		open := newConfiner(t, p)
		assert.False(t, open.SignalsScoped())
		code, out = sh(t, open, l.ws, fmt.Sprintf("kill -0 %d && kill -0 %d && echo reached-both", hook.Process.Pid, other.Process.Pid))
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "reached-both")

		// Both are still alive; the worker (unconfined) ends them.
		require.NoError(t, hook.Process.Signal(syscall.Signal(0)))
		require.NoError(t, other.Process.Signal(syscall.Signal(0)))
		require.NoError(t, hook.Process.Kill())
		require.NoError(t, other.Process.Kill())
		_, _ = hook.Process.Wait()
		_, _ = other.Process.Wait()
		release()
	}
}

// A command cannot change the limits of a process it shares a user with
// but did not start (a hook mid-run, the worker): its grep and jq would
// fail, and a guard written as `if … | grep -q` would allow. Its own
// limits it sets as before.
func TestPrlimitReachesOnlyTheCommandItself(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("no prlimit(1) here")
	}
	l := newLayout(t)
	if c := newConfiner(t, Policy{Hidden: []string{l.state}}); !c.PrlimitFiltered() {
		t.Skipf("no prlimit64 filter on %s here: %s", runtime.GOARCH, c)
	}
	hook := exec.Command("sleep", "30")
	require.NoError(t, hook.Start())
	defer func() { _ = hook.Process.Kill(); _, _ = hook.Process.Wait() }()
	script := fmt.Sprintf(`prlimit --pid %d --nofile=0:0 2>&1 || echo hook-refused
ulimit -n 100 && echo own-ulimit=$(ulimit -n)
prlimit --nofile=50:50 sh -c 'echo started-with=$(ulimit -n)'
true`, hook.Process.Pid)
	for _, p := range []Policy{{Hidden: []string{l.state}}, {Hidden: []string{l.state}, Boundary: &Boundary{}}} {
		c := newConfiner(t, p)
		code, out := sh(t, c, l.ws, script)
		assert.Equal(t, 0, code, out)
		for _, want := range []string{"hook-refused", "Operation not permitted", "own-ulimit=100", "started-with=50"} {
			assert.Contains(t, out, want, "boundary %v", p.Boundary != nil)
		}
		var lim unix.Rlimit
		require.NoError(t, unix.Prlimit(hook.Process.Pid, unix.RLIMIT_NOFILE, nil, &lim))
		assert.NotZero(t, lim.Cur, "the hook's limit is unchanged")
	}
}

// A command of the same (non-root) user as a hook cannot read the hook's
// environment, write into its output pipe through /proc/PID/fd (a forged
// decision), or signal it; unconfined, all three work. (A root command
// reads /proc/PID/environ regardless: run commands as their own user.)
func TestCommandsCannotReachTheirUsersOtherProcesses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run both processes as nobody")
	}
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	hook := exec.Command("sh", "-c", "sleep 30 | cat")
	hook.Dir = "/"
	hook.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	require.NoError(t, hook.Start())
	defer func() { _ = hook.Process.Kill(); _, _ = hook.Process.Wait() }()
	script := fmt.Sprintf(`v=%d
cat /proc/$v/environ >/dev/null 2>&1 && echo read-environ
echo '{"decision":"approve"}' > /proc/$v/fd/1 2>/dev/null && echo wrote-its-stdout
kill -0 $v 2>/dev/null && echo signalled
true`, hook.Process.Pid)
	run := func(confined bool) string {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if !confined {
			require.NoError(t, cmd.Run())
			return out.String()
		}
		release, err := c.Start(cmd, "/tmp")
		require.NoError(t, err)
		require.NoError(t, cmd.Wait())
		release()
		return out.String()
	}
	assert.Equal(t, "read-environ\nwrote-its-stdout\nsignalled\n", run(false), "unconfined, the same user reaches the hook")
	reached := run(true)
	assert.NotContains(t, reached, "read-environ")
	assert.NotContains(t, reached, "wrote-its-stdout")
	if c.SignalsScoped() {
		assert.NotContains(t, reached, "signalled")
	}
}

// fetchAllowedAndElsewhere is the start of the python the network tests
// run as a command: a fetch from an allowed host through the proxy, then
// one from another host, printing the refusal.
const fetchAllowedAndElsewhere = `import os, socket, urllib.request, urllib.error
print(urllib.request.urlopen("http://api.allowed.test/").read().decode())
try:
    urllib.request.urlopen("http://elsewhere.test/")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
`

// allowedTestDial is a sandbox.network allowing *.allowed.test, and a
// dial that decides by it and connects every allowed host to target, a
// local server standing in for them.
func allowedTestDial(t *testing.T, target string) (netguard.DomainList, netguard.DialFunc) {
	t.Helper()
	list := netguard.DomainList{Setting: "sandbox.network of settings.json"}
	allowed, err := netguard.ParseDomainPattern("*.allowed.test", false)
	require.NoError(t, err)
	list.Allowed = append(list.Allowed, allowed)
	return list, func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(address)
		if err := list.Decide(host, 80); err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, target)
	}
}

// TestNetworkSandboxReachesOnlyTheAllowedDomains runs commands with
// Claude Code's sandbox.network applied: they reach an allowed host
// through their proxies (HTTP and SOCKS5), are refused the others with
// the reason, and connect nowhere directly, not even to the worker's
// loopback.
func TestNetworkSandboxReachesOnlyTheAllowedDomains(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to play the command's HTTP client")
	}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Host)
	}))
	l, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	server.Listener = l
	server.Start()
	defer server.Close()
	port := l.Addr().(*net.TCPAddr).Port
	daemon := filepath.Join(t.TempDir(), "daemon.sock")
	unixListener, err := net.Listen("unix", daemon)
	require.NoError(t, err)
	defer unixListener.Close()

	list, dial := allowedTestDial(t, l.Addr().String())
	lay := newLayout(t)
	var refusedMu sync.Mutex
	var refused []string
	onRefused := func(workspace string, err error) {
		refusedMu.Lock()
		refused = append(refused, workspace+": "+err.Error())
		refusedMu.Unlock()
	}
	c := newConfiner(t, Policy{Hidden: []string{lay.state}, Network: &Network{Dial: dial, Describe: list.String(), OnRefused: onRefused}})
	if c.noNetns != nil {
		t.Skipf("no network namespace per workspace here: %v", c.noNetns)
	}
	assert.Contains(t, c.String(), "network: a namespace per workspace, out only through proxies (allowed *.allowed.test; denied none)")

	hostIP := "127.0.0.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				hostIP = n.IP.String()
				break
			}
		}
	}
	script := fmt.Sprintf(`%s - <<'EOF'
`+fetchAllowedAndElsewhere+`for host in ("127.0.0.1", %q):
    try:
        socket.create_connection((host, %d), timeout=2)
        print("direct", host, "connected")
    except OSError as e:
        print("direct", host, "failed:", e.__class__.__name__)
try:
    socket.socket(socket.AF_UNIX).connect(%q)
    print("daemon socket connected")
except OSError as e:
    print("daemon socket failed:", e.__class__.__name__)
try:
    os.open("/proc/%d/ns/net", os.O_RDONLY)
    print("worker namespace opened")
except OSError as e:
    print("worker namespace refused:", e.__class__.__name__)
a, b = socket.socketpair()
a.send(b"pair")
print("socketpair", b.recv(4).decode())
EOF`, python, hostIP, port, daemon, os.Getpid())
	code, out := sh(t, c, lay.ws, script)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "hello api.allowed.test")
	assert.Contains(t, out, "403 refused by the command sandbox's proxy: elsewhere.test:80 is not on the allowed domains of sandbox.network of settings.json")
	assert.Contains(t, out, "direct 127.0.0.1 failed")
	assert.Contains(t, out, "direct "+hostIP+" failed")
	assert.Contains(t, out, "daemon socket failed: PermissionError", "a Unix socket would carry the command out of its namespace")
	assert.Contains(t, out, "socketpair pair")
	refusedMu.Lock()
	assert.Equal(t, []string{lay.ws + ": elsewhere.test:80 is not on the allowed domains of sandbox.network of settings.json: add it there if commands must reach it"}, refused,
		"the refusal is reported with its workspace")
	refusedMu.Unlock()
	assert.Contains(t, out, "worker namespace refused: PermissionError", "setns back into the worker's namespace")
	assert.NotContains(t, out, "connected")
	assert.Contains(t, c.String(), "Unix sockets: refused")

	// A workspace's commands share its loopback, as on one machine: a
	// service one started answers the next; another workspace's commands
	// do not reach it.
	service := exec.Command(python, "-c", `import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 47000)); s.listen()
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.send(b"from the workspace's service"); c.close()`)
	service.Dir = lay.ws
	ready, err := service.StdoutPipe()
	require.NoError(t, err)
	release, err := c.Start(service, lay.ws)
	require.NoError(t, err)
	defer func() { _ = service.Process.Kill(); _ = service.Wait(); release() }()
	line := make([]byte, 9)
	_, err = io.ReadFull(ready, line)
	require.NoError(t, err, "the service did not start")
	reach := python + ` -c 'import socket
try:
    print(socket.create_connection(("127.0.0.1", 47000), timeout=2).recv(64).decode())
except OSError as e:
    print("unreached:", e.__class__.__name__)'`
	_, out = sh(t, c, lay.ws, reach)
	assert.Contains(t, out, "from the workspace's service")
	_, out = sh(t, c, lay.other, reach)
	assert.Contains(t, out, "unreached: ConnectionRefusedError", "another workspace has a loopback of its own")

	// allowAllUnixSockets gives them back, and with them the way out.
	open := newConfiner(t, Policy{Hidden: []string{lay.state}, Network: &Network{Dial: dial, Describe: list.String(), UnixSockets: true}})
	_, out = sh(t, open, lay.ws, script)
	assert.Contains(t, out, "daemon socket connected")

	if curl, err := exec.LookPath("curl"); err == nil {
		code, out := sh(t, c, lay.ws, curl+` -sS --proxy "$ALL_PROXY" http://socks.allowed.test/; echo; `+curl+` -sS --proxy "$ALL_PROXY" http://elsewhere.test/ 2>&1; echo "exit $?"`)
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "hello socks.allowed.test")
		assert.Regexp(t, `(?s)elsewhere\.test.*exit 97`, out, "curl's SOCKS refusal")
	}

	// The worker's own threads never left its namespace.
	resp, err := http.Get(server.URL)
	require.NoError(t, err)
	resp.Body.Close()
}

// Commands started while a leading directory keeps changing (new files
// beside the data directory, as in a busy /tmp) each get a ruleset cut
// for them or a fresher one, never one closed under them: before, a
// command whose ruleset was replaced between being handed it and
// restricting itself failed to start ("its ruleset was replaced").
func TestCommandsStartWhileRulesetsAreRecut(t *testing.T) {
	lay := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{lay.state}})
	stop := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := filepath.Join(lay.root, fmt.Sprintf("churn-%d", i%4))
			_ = os.WriteFile(p, nil, 0o644)
			_ = os.Remove(p)
		}
	}()
	errs := make(chan error, 200)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				cmd := exec.Command("/bin/true")
				release, err := c.Start(cmd, lay.ws)
				if err != nil {
					errs <- err
					continue
				}
				_ = cmd.Wait()
				release()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-churned
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Where the worker cannot make namespaces (as in the shipped container:
// no CAP_SYS_ADMIN), a network-sandboxed command is held to proxies on the
// worker's loopback by Landlock's TCP rules, with UDP and Unix sockets
// refused: the allowed host answers through the proxy, others are refused,
// and a direct connection, even to the worker's loopback, is refused.
func TestNetworkSandboxWithoutNamespacesHoldsCommandsToTheProxies(t *testing.T) {
	if ABIVersion() < 4 {
		t.Skip("no Landlock TCP rules (ABI 4) here")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to play the command's HTTP client")
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Host)
	}))
	defer server.Close()
	port := server.Listener.Addr().(*net.TCPAddr).Port
	list, dial := allowedTestDial(t, server.Listener.Addr().String())
	if os.Getenv(asUnprivilegedEnv) == "" {
		// As root, the namespace probe is made to fail; the same test also
		// runs as an unprivileged user, where it fails for real, as in the
		// shipped container.
		real := netnsProbe
		netnsProbe = func() error { return errors.New("no namespaces in this test") }
		defer func() { netnsProbe = real }()
		defer runAsUnprivileged(t, "^TestNetworkSandboxWithoutNamespacesHoldsCommandsToTheProxies$")
	}
	lay := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{lay.state}, Network: &Network{Dial: dial, Describe: list.String()}})
	require.NoError(t, c.NetworkUnavailable())
	assert.Contains(t, c.String(), "TCP held to their two ports by Landlock and UDP refused")

	script := fmt.Sprintf(`%s - <<'EOF'
`+fetchAllowedAndElsewhere+`for name, make in (("direct", lambda: socket.create_connection(("127.0.0.1", %d), timeout=2)),
                   ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
                   ("unix", lambda: socket.socket(socket.AF_UNIX))):
    try:
        make()
        print(name, "opened")
    except OSError as e:
        print(name, "refused:", e.__class__.__name__)
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print("a server binds")
EOF`, python, port)
	code, out := sh(t, c, lay.ws, script)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "hello api.allowed.test")
	assert.Contains(t, out, "403 refused by the command sandbox's proxy: elsewhere.test:80 is not on the allowed domains")
	assert.Contains(t, out, "direct refused: PermissionError")
	assert.Contains(t, out, "udp refused: PermissionError")
	assert.Contains(t, out, "unix refused: PermissionError")
	assert.Contains(t, out, "a server binds")
	assert.NotContains(t, out, "opened")
}

// asUnprivilegedEnv marks a test binary runAsUnprivileged started.
const asUnprivilegedEnv = "FENIX_CONFINE_TEST_UNPRIVILEGED"

// runAsUnprivileged runs the tests matching pattern again in a copy of
// this test binary as uid/gid 65534, when this one runs as root: what a
// worker without CAP_SYS_ADMIN gets. Elsewhere it does nothing.
func runAsUnprivileged(t *testing.T, pattern string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	dir, err := os.MkdirTemp("", "fenix-confine-unprivileged-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	bin := filepath.Join(dir, "confine.test")
	require.NoError(t, os.WriteFile(bin, self, 0o755))
	cmd := exec.Command(bin, "-test.run", pattern, "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp", asUnprivilegedEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "as uid 65534:\n%s", out)
	if !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("as uid 65534 nothing passed:\n%s", out)
	}
	t.Logf("as uid 65534: %s", strings.TrimSpace(string(out)))
}

// A user's everyday clients follow the proxy variables: git clones over
// http, curl fetches over https (CONNECT) from allowed hosts, in both
// network modes, and both show the refusal of any other host.
func TestSandboxedGitAndCurlGoThroughTheProxies(t *testing.T) {
	for _, tool := range []string{"git", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	src := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=dev@example.test", "-c", "user.name=dev"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	git(src, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(src, "README"), []byte("hi from git\n"), 0o644))
	git(src, "add", ".")
	git(src, "commit", "-qm", "first")
	bare := filepath.Join(t.TempDir(), "repo.git")
	git(src, "clone", "-q", "--bare", src, bare)
	git(bare, "update-server-info") // git's dumb http protocol
	plain := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(bare))))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello over tls") }))
	defer secure.Close()
	list, _ := allowedTestDial(t, "")
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		host, portText, _ := net.SplitHostPort(address)
		port, _ := strconv.Atoi(portText)
		if err := list.Decide(host, port); err != nil {
			return nil, err
		}
		target := plain.Listener.Addr().String()
		if port == 443 {
			target = secure.Listener.Addr().String()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, target)
	}
	script := `export HOME=$PWD
git clone -q http://git.allowed.test/repo.git cloned && cat cloned/README
curl -sSk https://api.allowed.test/; echo
curl -sSk https://evil.test/ 2>&1
git clone -q http://evil.test/repo.git stolen 2>&1
true`
	for _, mode := range []string{"namespace", "ports"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "ports" {
				if ABIVersion() < 4 {
					t.Skip("no Landlock TCP rules (ABI 4) here")
				}
				real := netnsProbe
				netnsProbe = func() error { return errors.New("no namespaces in this test") }
				defer func() { netnsProbe = real }()
			}
			lay := newLayout(t)
			c := newConfiner(t, Policy{Hidden: []string{lay.state}, Network: &Network{Dial: dial, Describe: list.String()}})
			if mode == "namespace" && c.noNetns != nil {
				t.Skipf("no network namespace per workspace here: %v", c.noNetns)
			}
			_, out := sh(t, c, lay.ws, script)
			assert.Contains(t, out, "hi from git")
			assert.Contains(t, out, "hello over tls")
			assert.Contains(t, out, "CONNECT tunnel failed, response 403")
			assert.Contains(t, out, "refused by the command sandbox's proxy: evil.test:80 is not on the allowed domains", "git shows the proxy's reason")
		})
	}
}

// A rule holds the file it was cut for: after a disk filled up, a big file
// the operator deleted from a directory on the way to the data directory
// kept its space while a ruleset cut before the deletion stayed cached —
// on an idle worker, until the next command. Stale rulesets are now
// dropped within sweepInterval.
func TestDeletedFilesDoNotKeepTheirSpace(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	state := filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(state, 0o700))
	big := filepath.Join(dir, "big.bin")
	require.NoError(t, os.WriteFile(big, make([]byte, 8<<20), 0o644))
	free := func() uint64 {
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(dir, &st))
		return st.Bfree * uint64(st.Bsize)
	}
	before := free()
	old := sweepInterval
	sweepInterval = 50 * time.Millisecond
	t.Cleanup(func() { sweepInterval = old })
	c := newConfiner(t, Policy{Hidden: []string{state}})
	code, out := sh(t, c, "", "true")
	require.Zero(t, code, out)
	require.NoError(t, os.Remove(big))
	assert.Eventually(t, func() bool { return free() >= before+7<<20 }, 5*time.Second, 20*time.Millisecond,
		"the deleted file's 8 MiB stayed allocated (free %d, was %d)", free(), before)
}

// One conversation's commands neither read nor write another's
// workspace in the same base (Policy.Workspaces), nor move, link or
// rename their way into it; a command whose workspace holds the base
// reaches every workspace in it, and a linked worktree reaches the
// repository WorkspaceReach names beside it, not the rest of that
// workspace.
func TestCommandsReachOnlyTheirOwnWorkspace(t *testing.T) {
	l := newLayout(t)
	base := filepath.Join(l.root, "workspaces")
	mine, theirs, worktree := filepath.Join(base, "conv-a"), filepath.Join(base, "conv-b"), filepath.Join(base, "conv-b-task")
	for _, d := range []string{mine, filepath.Join(theirs, ".git", "objects"), worktree} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	secret := filepath.Join(theirs, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("conversation b's secret\n"), 0o644))
	reach := func(workspace string) []string {
		if workspace == worktree {
			return []string{filepath.Join(theirs, ".git")}
		}
		return nil
	}
	c := newConfiner(t, Policy{Hidden: []string{l.state}, Workspaces: []string{base}, WorkspaceReach: reach})
	assert.Contains(t, c.String(), "workspaces: a command reaches its own only (and a linked worktree's repository) in "+base)

	code, out := sh(t, c, mine, "echo mine > "+filepath.Join(mine, "notes")+" && cat "+filepath.Join(mine, "notes")+" && ls "+base)
	assert.Zero(t, code, "a command reaches its own workspace: %s", out)
	for what, script := range map[string]string{
		"read another workspace":                "cat " + secret,
		"write another workspace":               "echo x > " + filepath.Join(theirs, "planted"),
		"rename another workspace":              "mv " + theirs + " " + filepath.Join(base, "moved"),
		"make a workspace beside its own":       "mkdir " + filepath.Join(base, "conv-c"),
		"hard-link another's file into its own": "ln " + secret + " " + filepath.Join(mine, "copy"),
		"follow a symlink into another":         "ln -s " + theirs + " " + filepath.Join(mine, "link") + " && cat " + filepath.Join(mine, "link", "secret.txt"),
		"reach it through /proc":                fmt.Sprintf("cat /proc/%d/root%s", os.Getpid(), secret),
	} {
		code, out := sh(t, c, mine, script)
		assert.NotZero(t, code, "%s: %s ran: %s", what, script, out)
	}
	code, out = sh(t, c, "", "cat "+secret)
	assert.NotZero(t, code, "a command without a workspace read a workspace: %s", out)

	code, out = sh(t, c, base, "cat "+secret+" && echo x > "+filepath.Join(mine, "from-the-base"))
	assert.Zero(t, code, "a command whose workspace holds the base reaches every workspace in it: %s", out)

	code, out = sh(t, c, worktree, "echo obj > "+filepath.Join(theirs, ".git", "objects", "ab"))
	assert.Zero(t, code, "a linked worktree writes its repository's objects: %s", out)
	code, out = sh(t, c, worktree, "cat "+secret)
	assert.NotZero(t, code, "a linked worktree read the rest of the repository's workspace: %s", out)

	open := newConfiner(t, Policy{Hidden: []string{l.state}})
	code, out = sh(t, open, mine, "cat "+secret)
	assert.Zero(t, code, "without Workspaces the test shows nothing: %s", out)
}

// A base the policy cannot hide without taking what every command needs
// is left shared, and the start log says so.
func TestWorkspacesThatStayShared(t *testing.T) {
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}, ReadOnly: []string{l.skills}, Workspaces: []string{"/", os.TempDir(), l.skills}})
	desc := c.String()
	assert.NotContains(t, desc, "a command reaches its own only")
	assert.Contains(t, desc, "workspaces every command reaches: / (the root directory)")
	assert.Contains(t, desc, "it holds the temporary directory")
	assert.Contains(t, desc, l.skills+" (protected as such already)")
	code, out := sh(t, c, l.ws, "cat "+l.loose+" && echo x >> "+l.loose)
	assert.Zero(t, code, "the temporary directory's files stay reachable: %s", out)
}

// The kernel's keyrings are shared by every process of a user: a
// command neither reads what its user keeps there (a root worker's
// commands, root's) nor leaves a key for another run's command to read.
// Unconfined the same calls go through.
func TestCommandsCannotReachTheKernelsKeyrings(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here")
	}
	calls, ok := filteredCallsFor(runtime.GOARCH)
	if !ok {
		t.Skipf("no seccomp filter for %s", runtime.GOARCH)
	}
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	if !c.PrlimitFiltered() {
		t.Skipf("no seccomp filter here: %s", c)
	}
	// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 1) and
	// add_key("user", "fenix-test", "x", 1, KEY_SPEC_USER_KEYRING).
	script := fmt.Sprintf(`%s -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
r = libc.syscall(%d, 0, -4, 1)
print("keyctl", r, os.strerror(ctypes.get_errno()) if r < 0 else "ok")
r = libc.syscall(%d, b"user", b"fenix-test", b"x", 1, -4)
print("add_key", r, os.strerror(ctypes.get_errno()) if r < 0 else "ok")
'`, python, calls.keys[2], calls.keys[0])
	code, out := sh(t, c, l.ws, script)
	require.Zero(t, code, out)
	assert.Contains(t, out, "keyctl -1 Operation not permitted")
	assert.Contains(t, out, "add_key -1 Operation not permitted")
	unconfined, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
	require.NoError(t, err, "%s", unconfined)
	assert.NotContains(t, string(unconfined), "keyctl -1", "unconfined, the test shows nothing: %s", unconfined)
	// The key the unconfined call added, if any, goes again.
	_ = exec.Command(python, "-c", fmt.Sprintf(`import ctypes; libc = ctypes.CDLL(None); k = libc.syscall(%d, 10, b"user", b"fenix-test", 0); k > 0 and libc.syscall(%d, 21, k, -4)`, calls.keys[2], calls.keys[2])).Run()
}

// Where the worker may make namespaces, one workspace's commands share
// neither SysV IPC objects nor /dev/shm files with another's or the
// host's; a later command of the same workspace finds what an earlier
// one left in /dev/shm, and programs still make their own there.
func TestCommandsKeepIPCWithinTheirWorkspace(t *testing.T) {
	if _, err := exec.LookPath("ipcmk"); err != nil {
		t.Skip("no ipcmk here")
	}
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}, PrivateIPC: true})
	if c.ReadOnlyUnavailable() != nil {
		t.Skipf("no mount namespaces here: %v", c.ReadOnlyUnavailable())
	}
	hostFile := filepath.Join("/dev/shm", filepath.Base(l.root)+"-host")
	require.NoError(t, os.WriteFile(hostFile, []byte("host segment\n"), 0o666))
	t.Cleanup(func() { os.Remove(hostFile) })
	hostQueue, err := exec.Command("ipcmk", "-Q").Output()
	require.NoError(t, err)
	qid := strings.TrimSpace(strings.TrimPrefix(string(hostQueue), "Message queue id: "))
	t.Cleanup(func() { _ = exec.Command("ipcrm", "-q", qid).Run() })

	code, out := sh(t, c, l.other, "echo from-other > /dev/shm/note && ipcmk -Q > /dev/null && ipcs -q | grep -c '^0x' ")
	require.Zero(t, code, out)
	code, out = sh(t, c, l.ws, "cat /dev/shm/note 2>&1; cat "+hostFile+" 2>&1; ipcs -q | grep -c '^0x'; echo mine > /dev/shm/mine && cat /dev/shm/mine")
	assert.Zero(t, code, out)
	assert.NotContains(t, out, "from-other", "another workspace's /dev/shm file")
	assert.NotContains(t, out, "host segment", "the host's /dev/shm file")
	assert.Contains(t, out, "\n0\n", "another workspace's or the host's message queues were listed: %s", out)
	assert.Contains(t, out, "mine", "a command makes its own /dev/shm files")
	code, out = sh(t, c, l.other, "cat /dev/shm/note")
	assert.Zero(t, code, out)
	assert.Contains(t, out, "from-other", "a later command of the same workspace finds its /dev/shm files")
	assert.Contains(t, c.String(), "IPC: a namespace and a /dev/shm of its workspace's")
}

// io_uring_setup fails with EPERM in a command (and its program falls
// back to ordinary calls); unconfined, where the kernel allows io_uring,
// it returns a ring.
func TestCommandsCannotSetUpIOUring(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here")
	}
	if _, ok := filteredCallsFor(runtime.GOARCH); !ok {
		t.Skipf("no seccomp filter for %s", runtime.GOARCH)
	}
	l := newLayout(t)
	c := newConfiner(t, Policy{Hidden: []string{l.state}})
	if !c.PrlimitFiltered() {
		t.Skipf("no seccomp filter here: %s", c)
	}
	script := fmt.Sprintf(`%s -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
r = libc.syscall(%d, 1, ctypes.create_string_buffer(120))
print("io_uring_setup", r, os.strerror(ctypes.get_errno()) if r < 0 else "ok")
'`, python, unix.SYS_IO_URING_SETUP)
	code, out := sh(t, c, l.ws, script)
	require.Zero(t, code, out)
	assert.Contains(t, out, "io_uring_setup -1 Operation not permitted")
	unconfined, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
	require.NoError(t, err, "%s", unconfined)
	if strings.Contains(string(unconfined), "io_uring_setup -1") {
		t.Logf("the kernel refuses io_uring unconfined too: %s", unconfined)
	}
}
