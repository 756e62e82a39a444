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

// StartInGroupAsking is StartInGroup for a command whose proxies ask ask
// about a host its policy neither allows nor denies; the credential lives
// until release.
func (c *Confiner) StartInGroupAsking(cmd *exec.Cmd, workspace, group string, ask netguard.Asker) (release func(), err error) {
	if ask == nil || c.network == nil || !c.network.Ask {
		return c.StartInGroup(cmd, workspace, group)
	}
	credential := rand.Text()
	c.askers.mu.Lock()
	if c.askers.by == nil {
		c.askers.by = map[string]netguard.Asker{}
	}
	c.askers.by[credential] = ask
	c.askers.mu.Unlock()
	forget := func() {
		c.askers.mu.Lock()
		delete(c.askers.by, credential)
		c.askers.mu.Unlock()
	}
	inner, err := c.startInGroup(cmd, workspace, group, credential)
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
