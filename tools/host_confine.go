package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fenixrt/fenix/confine"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/proctree"
	"github.com/fenixrt/fenix/workspace"
)

// commandConfinement is how the host's commands are confined.
type commandConfinement struct {
	// confiner starts commands in a Landlock domain; nil runs them
	// unconfined (FENIX_COMMAND_CONFINEMENT=off, or no Landlock).
	confiner *confine.Confiner
	// temp is the commands' TMPDIR under a sandbox's write boundary.
	temp string
	// refused, when set, is why commands are refused: a settings file
	// turned the sandbox on with failIfUnavailable where it cannot be
	// applied.
	refused string
	// sandboxed is whether a settings file's sandbox is applied.
	sandboxed bool
}

func (c *commandConfinement) close() {
	if c != nil && c.confiner != nil {
		c.confiner.Close()
	}
}

// newConfinement builds what confines commands: the data directory, the
// cgroup hierarchies, cfg.Protected and sandbox (the settings files'
// "sandbox", from the files named in from) out of their reach. Where the kernel has no
// Landlock, auto runs them unconfined with a warning and require refuses
// to start; a sandbox with failIfUnavailable refuses the commands.
func newConfinement(cfg HostConfig, sandbox confine.Policy, failIfUnavailable bool, from []string) (*commandConfinement, error) {
	mode := cfg.Confinement
	if mode == "" {
		mode = confine.ModeAuto
	}
	settings := strings.Join(from, ", ")
	if mode == confine.ModeOff {
		if sandbox.Boundary != nil {
			return refuseOrRun(cfg, failIfUnavailable, settings, "FENIX_COMMAND_CONFINEMENT=off")
		}
		cfg.Logger.Warn("commands run unconfined (FENIX_COMMAND_CONFINEMENT=off): exec_command and process_exec can rewrite the worker's data directory, the pinned hook scripts in it included", "data_dir", cfg.DataDir)
		return &commandConfinement{}, nil
	}
	// The cgroup hierarchies are read-only to commands: writing there, a
	// command (root or not) could move itself out of its run's cgroup and
	// outlive its cancellation, or freeze or kill a hook's run, which then
	// times out or crashes and fails open.
	policy := confine.Policy{Hidden: []string{cfg.DataDir}, ReadOnly: append(proctree.Mounts(), workerHomes()...),
		SignalsAnywhere: cfg.SignalsAnywhere, PrivateIPC: true}.Merge(cfg.Protected).Merge(sandbox)
	if isolatesWorkspaces(cfg) {
		policy.Workspaces, policy.WorkspaceReach = cfg.WorkspaceBases, linkedRepository
	} else if cfg.SharedWorkspaces {
		cfg.Logger.Warn("commands and hooks reach every workspace in the bases (FENIX_COMMAND_WORKSPACES=all): one conversation's command can read and rewrite another's files", "workspace_bases", cfg.WorkspaceBases)
	}
	if cfg.CommandUser == nil && os.Geteuid() == 0 {
		policy = policy.Merge(rootCommandPolicy(cfg.SystemWritable))
		if cfg.SystemWritable {
			cfg.Logger.Warn("commands run as root may write the system's directories (FENIX_COMMAND_SYSTEM=writable): a command can replace a program or library the hooks run (python3, /etc/ld.so.preload) and switch the guard off")
		}
	}
	if cfg.SignalsAnywhere {
		cfg.Logger.Warn("commands may signal every process of their user (FENIX_COMMAND_SIGNALS=any): a command can kill a running hook (which then fails closed), an MCP server or another conversation's service")
	}
	if policy.Network != nil {
		// Nobody is asked about a destination the sandbox refuses; the log
		// keeps what the workspace's commands tried.
		network := *policy.Network
		network.OnRefused = func(workspace string, refusal error) {
			cfg.Logger.Info("a sandboxed command was refused a destination", "workspace", workspace, "reason", refusal.Error(), "sandbox_settings", settings)
		}
		policy.Network = &network
	}
	conf := &commandConfinement{}
	if policy.Boundary != nil || tempLeadsToProtected(policy) {
		conf.temp = filepath.Join(os.TempDir(), "fenix-commands-"+cfg.ID)
		if err := makeCommandTemp(conf.temp, cfg); err != nil {
			return nil, err
		}
		if policy.Boundary != nil {
			policy.Boundary.Temp = conf.temp
		}
	}
	c, err := confine.New(policy)
	switch {
	case err == nil:
		if why := c.NetworkUnavailable(); why != nil {
			if failIfUnavailable {
				c.Close()
				return refuseOrRun(cfg, true, settings, "its network part: "+why.Error())
			}
			cfg.Logger.Warn("commands reach the network as the worker does: the sandbox.network that "+settings+" applies cannot be ("+why.Error()+")", "sandbox_settings", settings)
		}
		if why := c.FenceUnavailable(); why != nil {
			cfg.Logger.Warn("commands and hooks can connect to " + strings.Join(cfg.Unreachable, ", ") + ": " + why.Error() + "; without client authentication on the Temporal frontend an agent's command could approve its own parked call")
		}
		conf.confiner = c
		conf.sandboxed = policy.Boundary != nil
		cfg.Logger.Info("commands are confined", "confinement", c.String(), "sandbox_settings", settings)
		return conf, nil
	case errors.Is(err, confine.ErrUnavailable) && sandbox.Boundary != nil:
		return refuseOrRun(cfg, failIfUnavailable, settings, err.Error())
	case errors.Is(err, confine.ErrUnavailable) && mode == confine.ModeAuto:
		cfg.Logger.Warn("commands run unconfined: "+err.Error()+"; exec_command and process_exec can rewrite the worker's data directory unless FENIX_COMMAND_USER runs them as another user (FENIX_COMMAND_CONFINEMENT=require refuses to start instead)", "data_dir", cfg.DataDir)
		return &commandConfinement{}, nil
	default:
		return nil, fmt.Errorf("FENIX_COMMAND_CONFINEMENT=%s: %w", mode, err)
	}
}

// unreachableEndpoints resolves HostConfig.Unreachable: what web_fetch
// and the browser refuse, and what the confinement's fence refuses to
// commands and hooks (fenced), which is nil, with a warning, where the
// worker cannot make the cgroups a fence is attached to or does not
// confine commands.
func unreachableEndpoints(cfg HostConfig) (all, fenced []confine.Endpoint, err error) {
	if len(cfg.Unreachable) == 0 {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, hostPort := range cfg.Unreachable {
		if hostPort == UnreachableFrontend {
			return nil, nil, fmt.Errorf("fencing commands off the Temporal frontend: its address was not filled in (tools.WithFrontend)")
		}
		endpoints, err := confine.EndpointsOf(ctx, hostPort)
		if err != nil {
			return nil, nil, fmt.Errorf("fencing commands off %s (FENIX_COMMAND_UNREACHABLE, or the Temporal frontend): %w", hostPort, err)
		}
		for _, e := range endpoints {
			if !slices.Contains(all, e) {
				all = append(all, e)
			}
		}
	}
	switch {
	case cfg.Confinement == confine.ModeOff:
		return all, nil, nil
	case proctree.Parent() == "":
		cfg.Logger.Warn("commands and hooks can connect to " + strings.Join(cfg.Unreachable, ", ") + ": the worker cannot make cgroups (no writable cgroup v2) to fence them off in; without client authentication on the Temporal frontend an agent's command could approve its own parked call")
		return all, nil, nil
	}
	return all, all, nil
}

// newHookConfinement builds what confines the hooks' processes, with
// codePaths of the worker's home read-only (see hookCodeGuard), or nil
// where nothing is to (no HostConfig.Hooks, FENIX_COMMAND_CONFINEMENT=off)
// or the kernel cannot. A hook is the worker's, trusted; but it runs what
// the agent wrote — a git config's fsmonitor or filter when it runs git
// status in the workspace, a node_modules/.bin program, a Makefile — and
// that code must not rewrite the pinned guards, the audit log or the
// command-run records, nor read the worker's keys, nor plant code for the
// next hooks (hookCodeGuard, with HookEnv; a root worker's hooks are
// bounded as its commands are, rootCommandPolicy), nor stop or kill the
// worker, an MCP server or another hook: each hook process signals only
// what it started (where the kernel scopes signals; FENIX_HOOK_SIGNALS=any
// for a hook that stops the agent's dev server, which sits in its
// conversation's domain). Hooks reach the network; the cgroup
// hierarchies are read-only to them, as to commands.
func newHookConfinement(cfg HostConfig, codePaths []string) (*confine.Confiner, error) {
	if len(cfg.Hooks.Hidden) == 0 || cfg.Confinement == confine.ModeOff {
		return nil, nil
	}
	policy := hookPolicy(cfg, codePaths)
	policy.PrivateIPC = true
	if isolatesWorkspaces(cfg) {
		// Code a hook runs is the agent's as often as not (a PostToolUse
		// npm test): it stays out of the other conversations' workspaces
		// as the agent's commands do. (MCP servers serve every
		// conversation and keep the whole of the bases.)
		policy.Workspaces, policy.WorkspaceReach = cfg.WorkspaceBases, linkedRepository
	}
	c, err := confine.New(policy)
	switch {
	case errors.Is(err, confine.ErrUnavailable):
		cfg.Logger.Warn("hooks run unconfined: " + err.Error() + "; code a hook runs from the workspace (a git config's fsmonitor, node_modules/.bin) could rewrite the worker's data directory")
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("confining hooks: %w", err)
	}
	if cfg.HookSignalsAnywhere {
		cfg.Logger.Warn("hooks and MCP servers may signal every process of their user (FENIX_HOOK_SIGNALS=any): code a hook runs from the workspace (a PostToolUse npm test, a git fsmonitor) can stop or kill the worker, an MCP server or a running guard")
	}
	cfg.Logger.Info("hooks are confined", "confinement", c.String())
	return c, nil
}

// hookPolicy is what the hooks' processes may not reach (see
// newHookConfinement).
func hookPolicy(cfg HostConfig, codePaths []string) confine.Policy {
	policy := cfg.Hooks.Merge(confine.Policy{Hidden: cfg.Protected.Hidden, ReadOnly: append(proctree.Mounts(), codePaths...),
		Unreachable: cfg.Protected.Unreachable, SignalsAnywhere: cfg.HookSignalsAnywhere})
	if os.Geteuid() == 0 {
		// A root worker's hooks run as root: the agent's code one of them
		// runs gets no more of the kernel or the system than a command.
		policy = policy.Merge(rootCommandPolicy(cfg.SystemWritable))
	}
	return policy
}

// newMCPServerConfinement builds what confines the stdio MCP servers (and
// their headersHelpers): the hooks' policy, its paths held in a mount
// namespace per server where the worker may make one (confine.Policy's
// HeldByMounts), since a server starts seldom and, unlike a hook, often
// makes a directory of its own in the home (desktop-commander's
// ~/.claude-server-commander), which the rules cut around the home's
// protected paths refuse. Elsewhere it is hooks, the hooks' confinement,
// or one like it where hooks keep to their workspace in the bases: a
// server serves every conversation, and keeps the whole of them.
// What a server could add to the home that the hooks would load is
// turned off for them (hookCodeGuard).
func newMCPServerConfinement(cfg HostConfig, codePaths []string, hooks *confine.Confiner) (*confine.Confiner, error) {
	if hooks == nil {
		return nil, nil
	}
	policy := hookPolicy(cfg, codePaths)
	switch {
	case hooks.ReadOnlyUnavailable() == nil:
		policy.HeldByMounts = true
	case !isolatesWorkspaces(cfg):
		return hooks, nil
	}
	c, err := confine.New(policy)
	if err != nil {
		return nil, fmt.Errorf("confining MCP servers: %w", err)
	}
	cfg.Logger.Info("MCP servers are confined", "confinement", c.String())
	return c, nil
}

// hookCodeGuard is what keeps a hook that runs the agent's code (see
// newHookConfinement) from planting code for the next hooks in the
// worker's home, where they load it without naming it: the python user
// site, ~/.local/bin on the PATH, git's user configuration (an fsmonitor,
// a filter, an alias runs), node's legacy module directories, npm's and
// yarn's user configuration (a script-shell, a yarnPath runs), ssh's (a
// ProxyCommand runs; an authorized key lets anyone in), and the shell's
// start-up files, which the operator's next login runs outside any
// domain. Those that exist are read-only to hooks (readOnly). Those that
// do not are turned off for hooks (env) where a variable can, so that one
// made later — by a hook, or by an MCP server, which may add to the home
// on a root worker (newMCPServerConfinement) — is not read:
// PYTHONNOUSERSITE=1 without a user site, GIT_CONFIG_GLOBAL naming the one
// user git configuration that exists (or /dev/null),
// NPM_CONFIG_USERCONFIG=/dev/null without a ~/.npmrc, node's
// --no-global-search-paths without its legacy directories (nodeGlobalsOff),
// a PATH without its missing entries in a home and without relative
// entries, which name the workspace the hook runs in. (A missing path
// protected by Landlock would keep hooks from creating any entry in the
// home, npm's cache on a first npx among them.) A missing ~/.ssh, yarn
// configuration or shell start-up file is not covered.
func hookCodeGuard(path string) (readOnly []string, env map[string]string) {
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	userSite := func(home string) bool {
		sites, _ := filepath.Glob(filepath.Join(home, ".local", "lib", "python*", "site-packages"))
		return len(sites) > 0
	}
	homes := workerHomes()
	for _, home := range homes {
		for _, rel := range []string{".local/bin", ".node_modules", ".node_libraries", ".gitconfig", ".config/git", ".npmrc", ".yarnrc", ".yarnrc.yml", ".ssh",
			".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".zshenv", ".zprofile", ".zshrc", ".zlogin"} {
			if p := filepath.Join(home, rel); exists(p) {
				readOnly = append(readOnly, p)
			}
		}
		if userSite(home) {
			readOnly = append(readOnly, filepath.Join(home, ".local", "lib"))
		}
		readOnly = append(readOnly, homeToolchains(home, path, exists)...)
	}
	// What the hooks' HOME lacks is turned off for them.
	env = map[string]string{}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		if !userSite(home) {
			env["PYTHONNOUSERSITE"] = "1"
		}
		dotfile, xdg := filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git")
		switch {
		case exists(dotfile) && exists(xdg):
		case exists(dotfile):
			env["GIT_CONFIG_GLOBAL"] = dotfile
		case exists(xdg):
			env["GIT_CONFIG_GLOBAL"] = filepath.Join(xdg, "config")
		default:
			env["GIT_CONFIG_GLOBAL"] = os.DevNull
		}
		if !exists(filepath.Join(home, ".npmrc")) && os.Getenv("NPM_CONFIG_USERCONFIG") == "" && os.Getenv("npm_config_userconfig") == "" {
			env["NPM_CONFIG_USERCONFIG"] = os.DevNull
		}
		if options, ok := nodeGlobalsOff(home, exists); ok {
			env["NODE_OPTIONS"] = options
		}
	}
	// A relative entry (".", "node_modules/.bin", an empty one, which the
	// shell reads as ".") is looked up in the directory the hook runs in,
	// the workspace: the agent's own jq or python3 there would run in the
	// guard's place.
	if joined := hookPATH(path, func(dir string) bool {
		inHome := slices.ContainsFunc(homes, func(home string) bool { return dir == home || strings.HasPrefix(dir, home+"/") })
		return !inHome || exists(dir)
	}); joined != path {
		env["PATH"] = joined
	}
	return readOnly, env
}

// homeToolchains are the places in home from which a hook's programs and
// their libraries load: the PATH's directories there (~/.cargo/bin,
// ~/go/bin, ~/.pyenv/shims, ~/bin; those under a directory whose name
// does not start with a dot are taken for a project's and left alone,
// but ~/bin and ~/go/bin), the interpreters a version manager installs
// (pyenv's, nvm's, uv's pythons, …), and the installation an interpreter
// on the PATH runs from when it lies in home (a virtualenv's, with its
// site-packages). Code a hook runs — or an MCP server — planted a
// python3 in ~/.pyenv/shims, or a .pth in the site-packages of the
// python the guard runs, and the next guard ran it.
func homeToolchains(home, path string, exists func(string) bool) []string {
	var out []string
	add := func(p string) {
		if p = filepath.Clean(p); p != home && strings.HasPrefix(p, home+"/") && exists(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, dir := range filepath.SplitList(path) {
		rel, err := filepath.Rel(home, filepath.Clean(dir))
		if !filepath.IsAbs(dir) || err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		if strings.HasPrefix(rel, ".") || rel == "bin" || rel == "go/bin" {
			add(dir)
		}
	}
	for _, rel := range []string{".pyenv/versions", ".rbenv/versions", ".nodenv/versions", ".goenv/versions", ".nvm/versions",
		".asdf/installs", ".local/share/mise/installs", ".local/share/rtx/installs", ".local/share/uv/python", ".volta/tools/image", ".bun/install/global"} {
		add(filepath.Join(home, rel))
	}
	for _, name := range []string{"python3", "python", "node", "ruby", "perl", "php"} {
		program, err := lookPathIn(path, name)
		if err != nil {
			continue
		}
		// A virtualenv's python links to the base interpreter; its
		// site-packages are the virtualenv's.
		if venv := filepath.Dir(filepath.Dir(program)); exists(filepath.Join(venv, "pyvenv.cfg")) {
			add(venv)
		}
		if real, err := filepath.EvalSymlinks(program); err == nil && filepath.Base(filepath.Dir(real)) == "bin" {
			add(filepath.Dir(filepath.Dir(real)))
		}
	}
	return out
}

// lookPathIn finds name as exec.LookPath does, on path's absolute entries.
func lookPathIn(path, name string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// nodeGlobalsOff is the NODE_OPTIONS that keeps node from loading modules
// from its legacy global directories (~/.node_modules, ~/.node_libraries,
// $PREFIX/lib/node), where none exists and no NODE_PATH is set (the flag
// turns both off), and where the node on the PATH takes the flag (16.10
// and later; one older than that would refuse to start with it).
func nodeGlobalsOff(home string, exists func(string) bool) (string, bool) {
	const flag = "--no-global-search-paths"
	if os.Getenv("NODE_PATH") != "" || exists(filepath.Join(home, ".node_modules")) || exists(filepath.Join(home, ".node_libraries")) {
		return "", false
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(node); err == nil && exists(filepath.Join(filepath.Dir(filepath.Dir(real)), "lib", "node")) {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if exec.CommandContext(ctx, node, flag, "-e", "").Run() != nil {
		return "", false
	}
	return strings.TrimSpace(os.Getenv("NODE_OPTIONS") + " " + flag), true
}

// hookPATH is path as hooks get it: its absolute entries that keep says
// to keep (relative ones never), or the system's directories when none
// is left.
func hookPATH(path string, keep func(dir string) bool) string {
	var kept []string
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) && keep(dir) {
			kept = append(kept, dir)
		}
	}
	if len(kept) == 0 {
		kept = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
	}
	return strings.Join(kept, string(filepath.ListSeparator))
}

// plainHookEnv is what hooks get from the worker where they run
// unconfined: a PATH without relative entries, the one change of
// hookCodeGuard's that needs no confinement to hold.
func plainHookEnv(path string) map[string]string {
	if joined := hookPATH(path, func(string) bool { return true }); joined != path {
		return map[string]string{"PATH": joined}
	}
	return nil
}

// workerHomes are the worker's home directories ($HOME, and its
// account's if another), read-only to commands: hooks run with that HOME,
// and what lies there runs in them — a python user site's
// usercustomize.py, ~/.local/bin on the PATH, a git or npm config.
// Commands get their workspace as HOME; a workspace in the home stays
// theirs, and so does a sandbox's allowWrite there.
func workerHomes() []string {
	var homes []string
	add := func(dir string) {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) == "/" || slices.Contains(homes, filepath.Clean(dir)) {
			return
		}
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			homes = append(homes, filepath.Clean(dir))
		}
	}
	add(os.Getenv("HOME"))
	if u, err := user.Current(); err == nil {
		add(u.HomeDir)
	}
	return homes
}

// systemDirs are where the programs and libraries the hooks and the
// worker run live, and their configuration (/etc/ld.so.preload loads a
// library into every program).
var systemDirs = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/boot",
	// A crontab or an at job in the spool runs as root outside any domain.
	"/var/spool/cron", "/var/spool/anacron", "/var/spool/at"}

// rootCommandPolicy is what keeps commands that run as root from the
// kernel's reach around Landlock: capabilities bounded (no modules,
// reboot, clock, network administration, mount, raw I/O, raised limits),
// /proc and /sys read-only (core_pattern, sysrq-trigger, uevent_helper
// run or do anything), the raw disks and memory hidden (the domain's
// hidden paths are on them), and, unless systemWritable, the system's
// directories read-only (a replaced python3 or an ld.so.preload runs in
// every hook).
func rootCommandPolicy(systemWritable bool) confine.Policy {
	p := confine.Policy{BoundCapabilities: true, ReadOnly: []string{"/proc", "/sys"}, RawDevicesIn: "/dev"}
	if !systemWritable {
		for _, dir := range systemDirs {
			if _, err := os.Stat(dir); err == nil {
				p.ReadOnly = append(p.ReadOnly, dir)
			}
		}
	}
	return p
}

// refuseOrRun is a sandbox that cannot be applied: as Claude Code does,
// commands are refused under failIfUnavailable and run unsandboxed, with
// a warning, otherwise.
func refuseOrRun(cfg HostConfig, failIfUnavailable bool, settings, why string) (*commandConfinement, error) {
	if failIfUnavailable {
		reason := fmt.Sprintf("the sandbox that %s turns on with failIfUnavailable cannot be applied (%s)", settings, why)
		cfg.Logger.Error("commands are refused: "+reason, "sandbox_settings", settings)
		return &commandConfinement{refused: reason}, nil
	}
	cfg.Logger.Warn("commands run unsandboxed: the sandbox that "+settings+" turns on cannot be applied ("+why+")", "sandbox_settings", settings)
	return &commandConfinement{}, nil
}

// tempLeadsToProtected is whether a path policy protects (or a
// workspace base it hides) lies in the temporary directory, which then
// leads to it: commands reach its entries but may not add any, so
// mktemp in /tmp fails. They get a TMPDIR of their own there instead,
// made before the rules are cut.
func tempLeadsToProtected(policy confine.Policy) bool {
	temp := os.TempDir()
	if real, err := filepath.EvalSymlinks(temp); err == nil {
		temp = real
	}
	for _, p := range slices.Concat(policy.Hidden, policy.ReadOnly, policy.Workspaces) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if rel, err := filepath.Rel(temp, p); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// makeCommandTemp creates the commands' temporary directory, theirs
// alone: the command user's when commands run as one.
func makeCommandTemp(dir string, cfg HostConfig) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sandbox temporary directory %s: %w", dir, err)
	}
	if u := cfg.CommandUser; u != nil {
		if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
			return fmt.Errorf("sandbox temporary directory %s: %w", dir, err)
		}
	}
	return nil
}

// SetCommandSandbox applies the loaded settings files' "sandbox" (see
// claudecode.CommandPolicy) to the commands started from now on; commands
// already running keep theirs. The worker calls it at load and on every
// hook reload.
func (h *Host) SetCommandSandbox(sandbox confine.Policy, failIfUnavailable bool, from []string) error {
	cfg := h.cfg
	cfg.ID = h.ID
	conf, err := newConfinement(cfg, sandbox, failIfUnavailable, from)
	if err != nil {
		return err
	}
	old := h.confinement.Swap(conf)
	// A command may be starting with the old rulesets right now.
	time.AfterFunc(time.Minute, old.close)
	return nil
}

// CommandsSandboxed reports whether the settings files' sandbox applies
// to the commands started now (not when it could not be applied, and they
// run unsandboxed or are refused).
func (h *Host) CommandsSandboxed() bool {
	conf := h.confinement.Load()
	return conf != nil && conf.sandboxed
}

// CommandsConfined reports whether commands start in a Landlock domain,
// which keeps them out of the protected paths (the worker's home among
// them); unconfined, they write whatever the worker's user can.
func (h *Host) CommandsConfined() bool {
	conf := h.confinement.Load()
	return conf != nil && conf.confiner != nil
}

// readOnly is what a command in ws may not write (Spec.ReadOnly), where
// its confiner can hold it to that: the list costs a stat of .git and
// is not made for an unconfined command.
func (conf *commandConfinement) readOnly(ws *workspace.Workspace) []string {
	if !conf.holdsReadOnly() {
		return nil
	}
	return ws.CommandReadOnly()
}

// holdsReadOnly reports whether commands are held to their workspace's
// read-only paths here.
func (conf *commandConfinement) holdsReadOnly() bool {
	return conf.confiner != nil && conf.confiner.ReadOnlyUnavailable() == nil
}

// commandConfinement is the confinement for a command about to start,
// or the ToolUnavailableError that refuses it.
func (h *Host) commandConfinement(tool string) (*commandConfinement, error) {
	conf := h.confinement.Load()
	if conf.refused != "" {
		return nil, fenixerr.New(fenixerr.TypeToolUnavailable, "%s is refused: %s", tool, conf.refused).WithTool(tool).WithCode("sandbox_unavailable")
	}
	return conf, nil
}

// isolatesWorkspaces is whether a command or hook reaches its own
// workspace only in the bases (FENIX_COMMAND_WORKSPACES=own).
func isolatesWorkspaces(cfg HostConfig) bool {
	return !cfg.SharedWorkspaces && len(cfg.WorkspaceBases) > 0
}

// linkedRepository is what a command in a linked worktree reaches beside
// it: the repository git made it from (workspace.LinkedRepository).
func linkedRepository(dir string) []string {
	if repo := workspace.LinkedRepository(dir); repo != "" {
		return []string{repo}
	}
	return nil
}
