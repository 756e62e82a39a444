package confine

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"github.com/fenixrt/fenix/netguard"
	"golang.org/x/sys/unix"
)

// A network-sandboxed command starts from a thread that left the worker's
// network namespace for a new one (unshare(CLONE_NEWNET), which needs
// CAP_SYS_ADMIN: a root worker). The new namespace has a loopback
// interface and nothing else, so the command connects nowhere directly.
// Before the command starts, the same thread opens the two proxy
// listeners on that loopback; the worker's other threads serve them, and
// dial from the worker's own namespace. The sockets stay in the namespace
// they were made in, so nothing else of the worker moves.

// netSandbox is one command's proxies.
type netSandbox struct {
	http  *netguard.Proxy
	socks net.Listener
}

// probeNetns reports why commands cannot get a network namespace, or nil.
// It unshares on a throwaway thread that dies with its goroutine.
func probeNetns() error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("unshare(CLONE_NEWNET): %w (a network namespace per command needs a root worker)", err)
			return
		}
		done <- loopbackUp()
	}()
	return <-done
}

// isolateNetwork moves the calling (locked, single-use) thread into a new
// network namespace, starts the proxies there and points cmd's
// environment at them.
func isolateNetwork(n *Network, cmd *exec.Cmd) (*netSandbox, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("isolating the command's network: unshare(CLONE_NEWNET): %w", err)
	}
	if err := loopbackUp(); err != nil {
		return nil, err
	}
	httpListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("isolating the command's network: the HTTP proxy's listener: %w", err)
	}
	socksListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		httpListener.Close()
		return nil, fmt.Errorf("isolating the command's network: the SOCKS proxy's listener: %w", err)
	}
	s := &netSandbox{http: netguard.NewProxy("the command sandbox's proxy", n.Dial, nil), socks: socksListener}
	s.http.Serve(httpListener)
	netguard.ServeSOCKS5(socksListener, n.Dial, nil)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, proxyEnv(httpListener.Addr().(*net.TCPAddr).Port, socksListener.Addr().(*net.TCPAddr).Port)...)
	return s, nil
}

// proxyEnv points the usual proxy variables at the sandbox's proxies;
// loopback is the command's own and stays direct.
func proxyEnv(httpPort, socksPort int) []string {
	httpURL := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	socksURL := "socks5h://127.0.0.1:" + strconv.Itoa(socksPort)
	const direct = "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + httpURL, "http_proxy=" + httpURL,
		"HTTPS_PROXY=" + httpURL, "https_proxy=" + httpURL,
		"ALL_PROXY=" + socksURL, "all_proxy=" + socksURL,
		"NO_PROXY=" + direct, "no_proxy=" + direct,
	}
}

// close stops the proxies; connections a command left open end with it.
func (s *netSandbox) close() {
	if s == nil {
		return
	}
	s.http.Close()
	s.socks.Close()
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
