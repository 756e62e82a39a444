package confine

import (
	"os/exec"
	"runtime"
	"strings"
	"sync"
)

// A group's commands share one domain. Start gives every command a domain
// of its own, so with the signal scope (ABI 6) a command signals only what
// it started: a `kill $(cat app.pid)` or `nginx -s reload` of a service
// an earlier call of the same conversation started was refused, although
// Claude Code's Bash runs it. StartInGroup starts a group's commands from
// one thread that confined itself once (a launcher): they all inherit its
// domain, so they reach each other's processes, and still nothing outside
// it — the worker, a hook, an MCP server, another group's commands. A
// launcher lives while one of its commands does: a parent-death signal
// fires when the thread that started a process ends, and once none of
// its processes is left there is nothing in the domain to reach.
//
// A launcher keeps the ruleset it confined itself with while it lives,
// even after a leading directory changed and the workspace's rules were
// cut again: a new launcher would be a new domain, and the group's later
// commands could no longer signal the services its earlier ones started
// (a new entry in /tmp, where the data directory sits in a test, made
// `kill $(cat app.pid)` fail). What the group then misses are entries
// added to a leading directory since: no rule reached them, so they stay
// out of its reach, never the other way round.

// launcherKey names a group's launcher: the workspace, the network
// namespace (nil: none), the group and the read-only paths (NUL-separated;
// a launcher's mounts are made once, so a command given others, after a
// `git init` made .git/config, gets a launcher, and a domain, of its own).
type launcherKey struct {
	workspace string
	net       *network
	group     string
	readOnly  string
}

// launcher is a locked thread in a group's domain that starts the group's
// commands.
type launcher struct {
	key      launcherKey
	requests chan launchRequest
	// users counts the commands started through it and not yet released;
	// under Confiner.launchMu. At zero the launcher ends.
	users int
}

type launchRequest struct {
	cmd        *exec.Cmd
	credential string
	started    chan error
}

// StartInGroup starts cmd as Start does, but in the domain of group:
// commands started with the same workspace and group share one domain,
// so each can signal the others' processes (a conversation's services
// and commands), and none can signal anything else. An empty group is
// Start.
func (c *Confiner) StartInGroup(cmd *exec.Cmd, workspace, group string) (release func(), err error) {
	return c.startInGroup(cmd, workspace, group, "", nil)
}

func (c *Confiner) startInGroup(cmd *exec.Cmd, workspace, group, credential string, readOnly []string) (release func(), err error) {
	if group == "" {
		return c.start(cmd, workspace, credential, readOnly)
	}
	if err := c.fenceOff(cmd); err != nil {
		return nil, err
	}
	rs, netns, err := c.domainFor(workspace)
	if err != nil {
		return nil, err
	}
	key := launcherKey{workspace: realWorkspace(workspace), net: netns, group: group}
	if c.noMountns == nil {
		key.readOnly = strings.Join(readOnly, "\x00")
	}
	l, err := c.launcherFor(key, rs)
	if err != nil {
		if netns != nil {
			c.releaseNetwork(netns)
		}
		return nil, err
	}
	started := make(chan error, 1)
	l.requests <- launchRequest{cmd: cmd, credential: credential, started: started}
	var once sync.Once
	release = func() {
		once.Do(func() {
			c.releaseLauncher(l)
			if netns != nil {
				c.releaseNetwork(netns)
			}
		})
	}
	if err := <-started; err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// launcherFor returns key's running launcher, or starts one confined
// with rs, and counts one more user of it. Either way it ends the
// caller's use of rs (see rulesetFor).
func (c *Confiner) launcherFor(key launcherKey, rs *ruleset) (*launcher, error) {
	c.launchMu.Lock()
	defer c.launchMu.Unlock()
	if l, ok := c.launchers[key]; ok {
		c.doneWith(rs)
		l.users++
		return l, nil
	}
	l := &launcher{key: key, requests: make(chan launchRequest), users: 1}
	confined := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, so no other
		// goroutine ever runs in the domain.
		runtime.LockOSThread()
		var readOnly []string
		if key.readOnly != "" {
			readOnly = strings.Split(key.readOnly, "\x00")
		}
		err := c.confineThread(rs, key.net, key.workspace, readOnly)
		confined <- err
		if err != nil {
			return
		}
		for req := range l.requests {
			c.pointAtProxies(req.cmd, key.net, req.credential)
			req.started <- req.cmd.Start()
		}
	}()
	if err := <-confined; err != nil {
		return nil, err
	}
	if c.launchers == nil {
		c.launchers = map[launcherKey]*launcher{}
	}
	c.launchers[key] = l
	return l, nil
}

// releaseLauncher ends one command's use of l; the last one ends l's
// thread.
func (c *Confiner) releaseLauncher(l *launcher) {
	c.launchMu.Lock()
	defer c.launchMu.Unlock()
	l.users--
	if l.users == 0 {
		delete(c.launchers, l.key)
		close(l.requests)
	}
}
