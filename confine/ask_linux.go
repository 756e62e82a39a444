package confine

import (
	"crypto/rand"
	"os/exec"
	"sync"

	"github.com/fenixrt/fenix/netguard"
)

// A network-sandboxed command's proxies refuse a host its policy does not
// list. A command started with an Asker gets proxy credentials naming it
// (in its proxy variables' URLs), and the proxies ask that Asker instead
// of refusing: a person can then allow the host, as Claude Code asks its
// user. A command without credentials, or whose run has ended, is refused
// as before.

// askers are the Askers of the commands running with credentials.
type askers struct {
	mu sync.Mutex
	by map[string]netguard.Asker
}

// identify is the proxies' netguard.Identify.
func (c *Confiner) identify(user, password string) netguard.Asker {
	if user != netguard.ProxyUser {
		return nil
	}
	c.askers.mu.Lock()
	defer c.askers.mu.Unlock()
	return c.askers.by[password]
}

// StartCommand is StartInGroup for an agent's command (exec_command,
// process_exec) with the options o: its read-only paths, and the Asker its
// proxies ask about a host its policy neither allows nor denies (the
// credential naming it lives until release).
func (c *Confiner) StartCommand(cmd *exec.Cmd, o CommandOptions) (release func(), err error) {
	if o.Ask == nil || c.network == nil || !c.network.Ask {
		return c.startInGroup(cmd, o.Workspace, o.Group, "", o.ReadOnly)
	}
	credential := rand.Text()
	c.askers.mu.Lock()
	if c.askers.by == nil {
		c.askers.by = map[string]netguard.Asker{}
	}
	c.askers.by[credential] = o.Ask
	c.askers.mu.Unlock()
	forget := func() {
		c.askers.mu.Lock()
		delete(c.askers.by, credential)
		c.askers.mu.Unlock()
	}
	inner, err := c.startInGroup(cmd, o.Workspace, o.Group, credential, o.ReadOnly)
	if err != nil {
		forget()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			inner()
			forget()
		})
	}, nil
}
