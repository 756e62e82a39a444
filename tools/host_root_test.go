package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/confine"
)

// A command that runs as root (a root worker without FENIX_COMMAND_USER)
// used to reach the kernel around its Landlock domain: load a module,
// write /proc/sys/kernel/core_pattern (whose pipe handler runs as root
// outside any domain), read a raw disk beneath the hidden data
// directory, replace python3 or /etc/ld.so.preload under every hook. Now
// it keeps a container root's capabilities only, /proc, /sys and the
// system's directories are read-only to it, and the raw disks are
// hidden; everyday root work in its workspace still goes.
func TestRootCommandsStayOutOfTheKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("commands run as root only for a root worker")
	}
	if confine.ABIVersion() < 2 {
		t.Skip("no Landlock ABI 2 here: commands run unconfined")
	}
	probes := []string{"/usr/lib/fenix-root-probe", "/etc/fenix-root-probe", "/opt/fenix-root-probe"}
	t.Cleanup(func() {
		for _, p := range probes {
			os.Remove(p)
		}
	})
	// A disk the test itself can read, so its refusal means something.
	var disks []string
	for _, dev := range confine.RawDevices("/dev") {
		if f, err := os.Open(dev); err == nil {
			buf := make([]byte, 512)
			if n, _ := f.Read(buf); n == 512 {
				disks = append(disks, dev)
			}
			f.Close()
		}
	}
	script := `grep CapBnd /proc/self/status
renice -n -5 -p $$ >/dev/null 2>&1 && echo reniced
unshare -n true 2>/dev/null && echo unshared
cat /proc/sys/kernel/core_pattern > pattern && cat pattern > /proc/sys/kernel/core_pattern 2>/dev/null && echo wrote-sysctl
for p in ` + strings.Join(probes, " ") + `; do touch "$p" 2>/dev/null && echo "wrote-$p"; done
for d in ` + strings.Join(disks, " ") + `; do n=$(head -c 512 "$d" 2>/dev/null | wc -c); [ "$n" -gt 0 ] && echo "read-$d"; done
echo ok > out && chown 65534 out && cat out
cat /proc/sys/kernel/ostype && ls /sys/kernel >/dev/null && echo read-proc-sys
cat /proc/` + strconv.Itoa(os.Getpid()) + `/environ >/dev/null 2>&1 && echo read-worker-environ
echo through-proc > /proc/self/fd/1
python3 -c 'print("python ran")'
true`
	p, _, err := newRig(t).call(t, "exec_command", map[string]any{"command_line": script})
	if err != nil {
		t.Fatal(err)
	}
	out := p.Content
	t.Logf("raw devices hidden: %v; of them readable by the test: %v", confine.RawDevices("/dev"), disks)
	for _, escaped := range []string{"reniced", "unshared", "wrote-sysctl", "wrote-/", "read-/dev", "read-worker-environ"} {
		if strings.Contains(out, escaped) {
			t.Errorf("a root command %s: %q", escaped, out)
		}
	}
	for _, want := range []string{"ok", "Linux", "read-proc-sys", "through-proc", "python ran"} {
		if !strings.Contains(out, want) {
			t.Errorf("a root command's everyday work: %q lacks %q", out, want)
		}
	}
	// FENIX_COMMAND_SYSTEM=writable gives the system's directories back,
	// and nothing else.
	p, _, err = newRig(t, func(c *HostConfig) { c.SystemWritable = true }).call(t, "exec_command", map[string]any{
		"command_line": "touch /opt/fenix-root-probe && echo wrote-opt; renice -n -5 -p $$ >/dev/null 2>&1 && echo reniced; true"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Content, "wrote-opt") || strings.Contains(p.Content, "reniced") {
		t.Errorf("with FENIX_COMMAND_SYSTEM=writable: %q, want /opt written and capabilities still bounded", p.Content)
	}
	_, bnd, _ := strings.Cut(out, "CapBnd:")
	bnd, _, _ = strings.Cut(strings.TrimSpace(bnd), "\n")
	got, err := strconv.ParseUint(strings.TrimSpace(bnd), 16, 64)
	if err != nil || got != confine.KeptCapabilitiesMask() {
		t.Errorf("CapBnd = %q (%v), want %016x", bnd, err, confine.KeptCapabilitiesMask())
	}
}

// A root worker's hooks are bounded as its commands are, and no hook may
// write where the next hooks load code from: a hook runs code the agent
// wrote (a git fsmonitor), which must not plant a usercustomize.py or
// replace the system's python.
func TestRootHooksAreBoundedAndCannotPlantCode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("hooks run as root only for a root worker")
	}
	if confine.ABIVersion() < 2 {
		t.Skip("no Landlock ABI 2 here: hooks run unconfined")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	userSite := filepath.Join(home, ".local", "lib", "python3", "site-packages")
	if err := os.MkdirAll(userSite, 0o755); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	r := newRig(t, func(c *HostConfig) { c.Hooks = confine.Policy{Hidden: []string{state}} })
	hooks := r.host.HookConfiner()
	if hooks == nil {
		t.Fatal("no hook confinement on a root worker with Landlock")
	}
	t.Cleanup(func() { os.Remove("/usr/lib/fenix-hook-probe") })
	script := `grep CapBnd /proc/self/status
touch ` + filepath.Join(userSite, "usercustomize.py") + ` 2>/dev/null && echo planted-user-site
touch /usr/lib/fenix-hook-probe 2>/dev/null && echo wrote-usr
ls ` + state + ` >/dev/null 2>&1; cat ` + filepath.Join(state, "x") + ` 2>/dev/null && echo read-state
echo ok > ` + filepath.Join(r.dir, "from-hook") + ` && echo wrote-workspace`
	cmd := exec.Command("/bin/sh", "-c", script)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	release, err := hooks.Start(cmd, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	release()
	for _, escaped := range []string{"planted-user-site", "wrote-usr", "read-state"} {
		if strings.Contains(out.String(), escaped) {
			t.Errorf("a hook %s: %q", escaped, out.String())
		}
	}
	if !strings.Contains(out.String(), "wrote-workspace") {
		t.Errorf("a hook could not write the workspace: %q", out.String())
	}
	_, bnd, _ := strings.Cut(out.String(), "CapBnd:")
	bnd, _, _ = strings.Cut(strings.TrimSpace(bnd), "\n")
	if got, err := strconv.ParseUint(strings.TrimSpace(bnd), 16, 64); err != nil || got != confine.KeptCapabilitiesMask() {
		t.Errorf("a root hook's CapBnd = %q (%v), want %016x", bnd, err, confine.KeptCapabilitiesMask())
	}
}

// In a home without a python user site or a git configuration, a hook
// running the agent's code can make one (read-only protection of a
// missing path would keep hooks from adding anything to the home), so
// the hooks' environment turns them off: the next python hook does not
// import the planted usercustomize.py, and git reads no planted config.
func TestHookEnvTurnsOffMissingCodePaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	missingBin := filepath.Join(home, ".local", "bin")
	readOnly, env := hookCodeGuard("/usr/bin:" + missingBin + ":/bin")
	for _, p := range readOnly {
		if strings.HasPrefix(p, home) {
			t.Errorf("a missing path %s is read-only: hooks could not add to the home", p)
		}
	}
	if env["PYTHONNOUSERSITE"] != "1" || env["GIT_CONFIG_GLOBAL"] != os.DevNull || env["PATH"] != "/usr/bin:/bin" {
		t.Fatalf("env = %v, want the user site and git config off and %s out of PATH", env, missingBin)
	}

	// The plant a hijacked hook makes, and the next python hook.
	out, err := exec.Command("python3", "-c", "import site; print(site.getusersitepackages())").Output()
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	site := strings.TrimSpace(string(out))
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "usercustomize.py"), []byte("print('planted code ran')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := exec.Command("python3", "-c", "print('guard ran')")
	hook.Env = []string{"HOME=" + home, "PATH=" + env["PATH"], "PYTHONNOUSERSITE=" + env["PYTHONNOUSERSITE"]}
	got, err := hook.CombinedOutput()
	if err != nil || strings.Contains(string(got), "planted") || !strings.Contains(string(got), "guard ran") {
		t.Errorf("the next python hook: %q, %v; want the plant ignored", got, err)
	}
	// Without the variable the plant runs: what the test guards against.
	hook = exec.Command("python3", "-c", "print('guard ran')")
	hook.Env = []string{"HOME=" + home, "PATH=" + env["PATH"]}
	if got, _ := hook.CombinedOutput(); !strings.Contains(string(got), "planted") {
		t.Errorf("without PYTHONNOUSERSITE the plant did not run either (%q): the test shows nothing", got)
	}

	// npm reads no planted ~/.npmrc (its script-shell runs for every
	// npx), and node no module planted in ~/.node_modules (an optional
	// require() a hook's library makes in a try finds it).
	if env["NPM_CONFIG_USERCONFIG"] != os.DevNull {
		t.Errorf("env = %v, want npm's user configuration off", env)
	}
	if _, err := exec.LookPath("node"); err == nil {
		if !strings.Contains(env["NODE_OPTIONS"], "--no-global-search-paths") {
			t.Errorf("env = %v, want node's legacy global directories off", env)
		}
		planted := filepath.Join(home, ".node_modules", "bufferutil")
		if err := os.MkdirAll(planted, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(planted, "index.js"), []byte("console.log('planted code ran')\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script := "try { require('bufferutil') } catch (e) {} console.log('guard ran')"
		hook := exec.Command("node", "-e", script)
		hook.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "NODE_OPTIONS=" + env["NODE_OPTIONS"]}
		if got, err := hook.CombinedOutput(); err != nil || strings.Contains(string(got), "planted") || !strings.Contains(string(got), "guard ran") {
			t.Errorf("the next node hook: %q, %v; want the plant ignored", got, err)
		}
		hook = exec.Command("node", "-e", script)
		hook.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		if got, _ := hook.CombinedOutput(); !strings.Contains(string(got), "planted") {
			t.Errorf("without the flag the plant did not run either (%q): the test shows nothing", got)
		}
		if err := os.RemoveAll(filepath.Join(home, ".node_modules")); err != nil {
			t.Fatal(err)
		}
	}

	// Where they exist they are read-only instead, and git is held to
	// the one configuration there is.
	gitconfig := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{".npmrc", ".ssh"} {
		if err := os.Mkdir(filepath.Join(home, rel), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	readOnly, env = hookCodeGuard("/usr/bin")
	if !slices.Contains(readOnly, gitconfig) || !slices.Contains(readOnly, filepath.Join(home, ".local", "lib")) || env["GIT_CONFIG_GLOBAL"] != gitconfig || env["PYTHONNOUSERSITE"] != "" {
		t.Errorf("readOnly = %v, env = %v; want the git config and user site read-only and git held to %s", readOnly, env, gitconfig)
	}
	if !slices.Contains(readOnly, filepath.Join(home, ".npmrc")) || !slices.Contains(readOnly, filepath.Join(home, ".ssh")) || env["NPM_CONFIG_USERCONFIG"] != "" {
		t.Errorf("readOnly = %v, env = %v; want ~/.npmrc and ~/.ssh read-only and npm's user configuration read", readOnly, env)
	}
}

// A hook runs in the workspace, so a worker PATH with a relative entry
// (".", "node_modules/.bin", or an empty one, which the shell reads as
// ".": a trailing ":" from PATH=$PATH:$EXTRA with EXTRA unset) ran the
// agent's own program in the guard's place: jq, python3 or node, planted
// in the workspace by workspace_write. The hooks' PATH leaves such
// entries out.
func TestHookPathLeavesOutRelativeEntries(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"guardtool", "node_modules/.bin/guardtool"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sys := t.TempDir()
	if err := os.WriteFile(filepath.Join(sys, "guardtool"), []byte("#!/bin/sh\necho guard\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{".:" + sys, "node_modules/.bin:" + sys, ":" + sys, sys + "::/bin", "/usr/bin:" + sys + ":"} {
		_, confined := hookCodeGuard(path)
		// Where hooks run unconfined (plainHookEnv) as where they are
		// confined (hookCodeGuard).
		for _, env := range []map[string]string{confined, plainHookEnv(path)} {
			checkHookPath(t, ws, path, env)
		}
	}
}

func checkHookPath(t *testing.T, ws, path string, env map[string]string) {
	t.Helper()
	hookPath, ok := env["PATH"]
	if !ok {
		hookPath = path
	}
	for _, dir := range filepath.SplitList(hookPath) {
		if !filepath.IsAbs(dir) {
			t.Errorf("PATH %q: the hooks' PATH %q keeps the relative entry %q", path, hookPath, dir)
		}
	}
	hook := exec.Command("/bin/sh", "-c", "guardtool")
	hook.Dir = ws
	hook.Env = []string{"PATH=" + hookPath}
	got, err := hook.CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != "guard" {
		t.Errorf("PATH %q: a hook's guardtool printed %q (%v), want the system's guard", path, got, err)
	}
}

// An MCP server (or code a hook runs) wrote python3 into ~/.pyenv/shims,
// first on the worker's PATH, or a .pth into the site-packages of the
// python the guard runs, and the next guard ran it: the home's toolchains
// are read-only to hooks and servers. A project's directory on the PATH
// is not: hooks write their workspace.
func TestHomeToolchainsAreCodePaths(t *testing.T) {
	home := t.TempDir()
	for _, dir := range []string{".pyenv/shims", ".pyenv/versions/3.12.1/bin", "go/bin", "project/node_modules/.bin", "venvs/tools/bin", ".nvm/versions/node/v22/bin"} {
		if err := os.MkdirAll(filepath.Join(home, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "venvs", "tools", "pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if err := os.Symlink(python, filepath.Join(home, "venvs", "tools", "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{filepath.Join(home, "venvs", "tools", "bin"), filepath.Join(home, ".pyenv", "shims"), filepath.Join(home, "go", "bin"),
		filepath.Join(home, "project", "node_modules", ".bin"), "/usr/bin"}, ":")
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	got := homeToolchains(home, path, exists)
	for _, want := range []string{".pyenv/shims", "go/bin", ".pyenv/versions", ".nvm/versions", "venvs/tools"} {
		if !slices.Contains(got, filepath.Join(home, want)) {
			t.Errorf("%s is not among the code paths %v", want, got)
		}
	}
	if slices.Contains(got, filepath.Join(home, "project", "node_modules", ".bin")) || slices.Contains(got, home) {
		t.Errorf("a project's directory, or the home itself, is among the code paths %v", got)
	}
}

// What code a hook runs could write, for a start that decides whether a
// changed policy file is the operator's (tools.Host.HooksReach): the
// home's settings and a directory beside the workspaces are within its
// reach, the system's directories and the worker's state are not.
func TestHooksReachTheHomeButNotTheSystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a root worker's hooks are kept from the system's directories")
	}
	if confine.ABIVersion() < 2 {
		t.Skip("no Landlock ABI 2 here: hooks run unconfined")
	}
	home, state := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	r := newRig(t, func(c *HostConfig) { c.Hooks = confine.Policy{Hidden: []string{state}} })
	for path, want := range map[string]bool{
		filepath.Join(home, ".claude", "settings.json"): true,
		"/srv/policy/guard.sh":                          true,
		"/etc/fenix/hooks.json":                         false,
		filepath.Join(state, "accepted-policy.json"):    false,
	} {
		if got := r.host.HooksReach(path); got != want {
			t.Errorf("HooksReach(%s) = %v, want %v", path, got, want)
		}
	}
}
