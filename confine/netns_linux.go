package confine

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

	"github.com/fenixrt/fenix/netguard"
	"golang.org/x/sys/unix"
)

// A network-sandboxed command starts from a thread that joined the
// network namespace of its workspace, made the first time a command of
// that workspace starts (unshare(CLONE_NEWNET), which needs
// CAP_SYS_ADMIN: a root worker). The namespace has a loopback interface
// and nothing else, so its commands connect nowhere directly, but they
// share that loopback the way commands on one machine do: a service
// process_exec started answers the next exec_command's curl, while
// another workspace's commands cannot reach it. The thread that made the
// namespace opened two proxy listeners on its loopback; the worker's
// other threads serve them and dial from the worker's own namespace.
// The sockets stay in the namespace they were made in, and an open file
// of the namespace keeps it, so nothing else of the worker moves.

// maxNetworks bounds the namespaces kept, one per workspace; one that no
// command uses is dropped first.
const maxNetworks = 64

// network is one workspace's namespace and its proxies.
type network struct {
	fd int // the namespace (an open /proc/thread-self/ns/net)
	*proxies
	// users counts the commands started in it and not yet reaped; under
	// Confiner.netMu.
	users int
}

// probeNetns reports why commands cannot get a network namespace, or nil.
// It unshares on a throwaway thread that dies with its goroutine.
func probeNetns() error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("unshare(CLONE_NEWNET): %w (a network namespace per workspace needs a root worker)", err)
			return
		}
		done <- loopbackUp()
	}()
	return <-done
}

// networkFor returns workspace's namespace, made now if it has none, and
// counts one more user of it; release the use with c.releaseNetwork.
func (c *Confiner) networkFor(workspace string) (*network, error) {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	if n, ok := c.nets[workspace]; ok {
		n.users++
		return n, nil
	}
	if len(c.nets) >= maxNetworks {
		for ws, old := range c.nets {
			if old.users == 0 {
				delete(c.nets, ws)
				old.close()
				break
			}
		}
	}
	n, err := newNetwork(c.network, workspace, c.identify)
	if err != nil {
		return nil, err
	}
	n.users = 1
	c.nets[workspace] = n
	return n, nil
}

func (c *Confiner) releaseNetwork(n *network) {
	c.netMu.Lock()
	n.users--
	c.netMu.Unlock()
}

// closeNetworks drops every namespace; commands still running in one keep
// it, without proxies.
func (c *Confiner) closeNetworks() {
	c.netMu.Lock()
	defer c.netMu.Unlock()
	for ws, n := range c.nets {
		delete(c.nets, ws)
		n.close()
	}
}

// newNetwork makes a namespace on a throwaway thread: loopback up, the
// proxies' listeners opened there, and the namespace kept open by a file.
func newNetwork(policy *Network, workspace string, identify netguard.Identify) (*network, error) {
	type made struct {
		n   *network
		err error
	}
	done := make(chan made, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine.
		runtime.LockOSThread()
		n, err := makeNetwork(policy, workspace, identify)
		done <- made{n, err}
	}()
	m := <-done
	return m.n, m.err
}

func makeNetwork(policy *Network, workspace string, identify netguard.Identify) (*network, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("isolating the command's network: unshare(CLONE_NEWNET): %w", err)
	}
	if err := loopbackUp(); err != nil {
		return nil, err
	}
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("isolating the command's network: keeping its namespace: %w", err)
	}
	p, err := startProxies(policy, workspace, identify)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("isolating the command's network: %w", err)
	}
	return &network{fd: fd, proxies: p}, nil
}

// proxies are the HTTP and SOCKS5 proxies a network-sandboxed command
// reaches other hosts through.
type proxies struct {
	http       *netguard.Proxy
	socks      net.Listener
	httpPort   int
	socksPort  int
	closeProxy sync.Once
}

// startProxies listens on 127.0.0.1 of the calling thread's network
// namespace and serves both proxies, dialing through policy; refusals go
// to policy.OnRefused with workspace. identify maps a command's proxy
// credentials to whom it asks about a host its policy does not list.
func startProxies(policy *Network, workspace string, identify netguard.Identify) (*proxies, error) {
	httpListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the HTTP proxy's listener: %w", err)
	}
	socksListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		httpListener.Close()
		return nil, fmt.Errorf("the SOCKS proxy's listener: %w", err)
	}
	var onRefused func(error)
	if policy.OnRefused != nil {
		onRefused = func(err error) { policy.OnRefused(workspace, err) }
	}
	p := &proxies{http: netguard.NewProxy("the command sandbox's proxy", policy.Dial, onRefused), socks: socksListener,
		httpPort: httpListener.Addr().(*net.TCPAddr).Port, socksPort: socksListener.Addr().(*net.TCPAddr).Port}
	if !policy.Ask {
		identify = nil
	}
	if identify != nil {
		p.http.Identify(identify)
	}
	p.http.Serve(httpListener)
	netguard.ServeSOCKS5(socksListener, policy.Dial, onRefused, identify)
	return p, nil
}

// point sets cmd's environment to reach the proxies, with credential
// (when set) naming the command to them.
func (p *proxies) point(cmd *exec.Cmd, credential string) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, proxyEnv(p.httpPort, p.socksPort, credential)...)
}

// stop closes the listeners; connections already made end with their
// ends.
func (p *proxies) stop() {
	p.closeProxy.Do(func() {
		p.http.Close()
		p.socks.Close()
	})
}

// join moves the calling (locked, single-use) thread into the namespace.
func (n *network) join() error {
	if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("isolating the command's network: setns: %w", err)
	}
	return nil
}

// proxyEnv points the usual proxy variables at the sandbox's proxies;
// loopback is the workspace's own and stays direct. A credential goes in
// the URLs' user part (curl, git, pip, npm and Go send it).
func proxyEnv(httpPort, socksPort int, credential string) []string {
	user := ""
	if credential != "" {
		user = netguard.ProxyUser + ":" + credential + "@"
	}
	httpURL := "http://" + user + "127.0.0.1:" + strconv.Itoa(httpPort)
	socksURL := "socks5h://" + user + "127.0.0.1:" + strconv.Itoa(socksPort)
	const direct = "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + httpURL, "http_proxy=" + httpURL,
		"HTTPS_PROXY=" + httpURL, "https_proxy=" + httpURL,
		"ALL_PROXY=" + socksURL, "all_proxy=" + socksURL,
		"NO_PROXY=" + direct, "no_proxy=" + direct,
	}
}

// close stops the proxies and lets the namespace go once its last process
// has.
func (n *network) close() {
	n.stop()
	unix.Close(n.fd)
}

// loopbackUp brings up the new namespace's loopback interface, which
// starts down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("isolating the command's network: a socket for configuring lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("isolating the command's network: reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("isolating the command's network: bringing lo up: %w", err)
	}
	return nil
}

// DialIn dials address from the network namespace of process pid: a
// network-sandboxed service listens on its own loopback, which the
// worker's readiness checks and reverse proxy reach only from inside.
// For a process in the worker's own namespace it is a plain dial. The
// socket is made on a throwaway thread that joined the namespace; the
// connection then works from any thread.
func DialIn(ctx context.Context, pid int, network, address string) (net.Conn, error) {
	var d net.Dialer
	nsPath := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	theirs, err := os.Stat(nsPath)
	if err != nil {
		return d.DialContext(ctx, network, address)
	}
	if ours, err := os.Stat("/proc/thread-self/ns/net"); err == nil && os.SameFile(ours, theirs) {
		return d.DialContext(ctx, network, address)
	}
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, namespace and
		// all.
		runtime.LockOSThread()
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{err: fmt.Errorf("dialing %s in process %d's network: %w", address, pid, err)}
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			done <- result{err: fmt.Errorf("dialing %s in process %d's network: setns: %w", address, pid, err)}
			return
		}
		conn, err := d.DialContext(ctx, network, address)
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}
