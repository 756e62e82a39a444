package confine

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fenixrt/fenix/netguard"
)

// Where commands cannot get a network namespace (a worker without
// CAP_SYS_ADMIN, as in the shipped container) but Landlock handles TCP
// (ABI 4, Linux 6.7), a network-sandboxed command is held to the proxies
// another way: the proxies listen on the worker's own loopback, a third
// Landlock domain lets the command connect over TCP to their two ports
// only, and the socket filter refuses UDP and raw sockets besides Unix
// ones. That is narrower than a namespace: Landlock's rules name ports,
// not hosts, so a command can still open a TCP connection to another host
// on one of those two port numbers; the start log says so. Commands may
// still bind ports (a dev server), but another command cannot connect to
// them: only the proxies' ports are open to connect to.

// landlockRuleNetPort is LANDLOCK_RULE_NET_PORT; netPortAttr is struct
// landlock_net_port_attr.
const landlockRuleNetPort = 2

type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// portProxies are the proxies of the Landlock-ports mode and the ruleset
// that holds a command to them.
type portProxies struct {
	*proxies
	rulesetFD int
	closeOnce sync.Once
}

// newPortProxies starts the proxies on the worker's loopback and cuts the
// ruleset that lets a command connect to their ports only.
func newPortProxies(policy *Network, identify netguard.Identify) (*portProxies, error) {
	p, err := startProxies(policy, "", identify)
	if err != nil {
		return nil, fmt.Errorf("the command sandbox's proxies: %w", err)
	}
	fd, err := portRuleset(p.httpPort, p.socksPort)
	if err != nil {
		p.stop()
		return nil, err
	}
	return &portProxies{proxies: p, rulesetFD: fd}, nil
}

// portRuleset is a Landlock ruleset that handles TCP connect and allows
// it to the given ports only.
func portRuleset(ports ...int) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("confining commands' TCP: landlock_create_ruleset: %w", errno)
	}
	for _, port := range ports {
		rule := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, landlockRuleNetPort, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			unix.Close(int(fd))
			return -1, fmt.Errorf("confining commands' TCP: landlock_add_rule(port %d): %w", port, errno)
		}
	}
	return int(fd), nil
}

func (p *portProxies) close() {
	p.closeOnce.Do(func() {
		p.stop()
		unix.Close(p.rulesetFD)
	})
}
