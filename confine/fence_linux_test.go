//go:build linux

package confine

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/proctree"
)

// fencedCgroup is a command cgroup with fence applied, or a skip where
// this machine cannot make one.
func fencedCgroup(t *testing.T, endpoints []Endpoint) *proctree.Cgroup {
	t.Helper()
	fence, err := NewFence(endpoints)
	if err != nil {
		t.Skipf("no cgroup connect programs here: %v", err)
	}
	t.Cleanup(fence.Close)
	if proctree.Parent() == "" {
		t.Skip("no writable cgroup v2 here")
	}
	cg, err := proctree.New(proctree.Parent(), proctree.PrefixCommand)
	require.NoError(t, err)
	t.Cleanup(cg.Close)
	require.NoError(t, fence.Apply(cg.FD()))
	return cg
}

// connectFrom runs a python probe in cg that connects to each address
// and prints one line per address: "ok" or the error's text.
func connectFrom(t *testing.T, cg *proctree.Cgroup, addrs ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the probe needs python3")
	}
	probe := `
import socket, sys
for a in sys.argv[1:]:
    host, port = a.rsplit(":", 1)
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.connect((host, int(port)))
        print("ok")
    except OSError as e:
        print(e.strerror)
    finally:
        s.close()
`
	cmd := exec.Command("python3", append([]string{"-c", probe}, addrs...)...)
	cmd.SysProcAttr = sysProcAttrInCgroup(cg)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestFenceRefusesTheFrontendToTheCgroupOnly: a server on the worker's
// host listening on every address is out of reach of a fenced cgroup's
// processes through loopback (IPv4 anywhere in 127/8, IPv6, and IPv4
// mapped into an IPv6 socket) and through the host's own addresses, and
// so is the server's other port (the dev server's HTTP API on a random
// port), while the worker reaches them, and the cgroup reaches another
// process's port.
func TestFenceRefusesTheFrontendToTheCgroupOnly(t *testing.T) {
	frontend, err := net.Listen("tcp", ":0") // every address, v4 and v6
	require.NoError(t, err)
	defer frontend.Close()
	httpAPI, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer httpAPI.Close()
	go acceptAll(frontend)
	go acceptAll(httpAPI)
	other := listenElsewhere(t)
	port := strconv.Itoa(frontend.Addr().(*net.TCPAddr).Port)

	endpoints, err := EndpointsOf(context.Background(), "localhost:"+port)
	require.NoError(t, err)
	cg := fencedCgroup(t, endpoints)

	targets := []string{"127.0.0.1:" + port, "127.0.0.2:" + port, "[::1]:" + port, "[::ffff:127.0.0.1]:" + port,
		// Linux takes the unspecified address as the host itself.
		"0.0.0.0:" + port, "[::]:" + port, "[::ffff:0.0.0.0]:" + port}
	// Recent kernels route all of 0.0.0.0/8 to the host.
	if c, err := net.DialTimeout("tcp", "0.1.2.3:"+port, time.Second); err == nil {
		c.Close()
		targets = append(targets, "0.1.2.3:"+port)
	}
	if own := hostAddresses(); len(own) > 0 {
		for _, a := range own {
			if a.Is4() && !a.IsLoopback() {
				targets = append(targets, netip.AddrPortFrom(a, frontend.Addr().(*net.TCPAddr).AddrPort().Port()).String())
				break
			}
		}
	}
	targets = append(targets, httpAPI.Addr().String())
	got := connectFrom(t, cg, append(targets, other)...)
	require.Len(t, got, len(targets)+1, "%q", got)
	for i, target := range targets {
		assert.Equal(t, "Operation not permitted", got[i], "connect to %s from the fenced cgroup", target)
	}
	assert.Equal(t, "ok", got[len(targets)], "another port on loopback stays reachable")

	for _, target := range targets {
		c, err := net.Dial("tcp", target)
		if assert.NoError(t, err, "the worker reaches %s", target) {
			c.Close()
		}
	}
}

// TestFenceOfARemoteFrontendNamesItsAddressOnly: a frontend elsewhere is
// fenced at its own address; the host's loopback stays open on that port.
func TestFenceOfARemoteFrontendNamesItsAddressOnly(t *testing.T) {
	endpoints, err := EndpointsOf(context.Background(), "192.0.2.10:7233")
	require.NoError(t, err)
	assert.Equal(t, []Endpoint{{Prefix: netip.MustParsePrefix("192.0.2.10/32"), Port: 7233}}, endpoints)

	local, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer local.Close()
	go acceptAll(local)
	endpoints = append(endpoints, Endpoint{Prefix: netip.MustParsePrefix("192.0.2.10/32"), Port: uint16(local.Addr().(*net.TCPAddr).Port)})
	cg := fencedCgroup(t, endpoints)
	got := connectFrom(t, cg, local.Addr().String())
	assert.Equal(t, []string{"ok"}, got)
}

// TestFenceOfAPortEverywhere: "*:port" refuses the port at every
// address, IPv4, IPv6 and mapped, and no other port.
func TestFenceOfAPortEverywhere(t *testing.T) {
	fenced, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer fenced.Close()
	other, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer other.Close()
	go acceptAll(fenced)
	go acceptAll(other)
	port := strconv.Itoa(fenced.Addr().(*net.TCPAddr).Port)
	endpoints, err := EndpointsOf(context.Background(), "*:"+port)
	require.NoError(t, err)
	cg := fencedCgroup(t, endpoints)
	otherPort := strconv.Itoa(other.Addr().(*net.TCPAddr).Port)
	got := connectFrom(t, cg, "127.0.0.1:"+port, "[::1]:"+port, "[::ffff:127.0.0.1]:"+port, "127.0.0.1:"+otherPort, "[::1]:"+otherPort)
	assert.Equal(t, []string{"Operation not permitted", "Operation not permitted", "Operation not permitted", "ok", "ok"}, got)
}

func TestEndpointsOfRefusesWhatIsNoEndpoint(t *testing.T) {
	for _, bad := range []string{"localhost", "localhost:http", "localhost:0", "localhost:70000"} {
		_, err := EndpointsOf(context.Background(), bad)
		assert.Error(t, err, bad)
	}
}

func sysProcAttrInCgroup(cg *proctree.Cgroup) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	cg.Attach(attr)
	return attr
}

// What the fence adds to a command's start: attaching both programs to a
// fresh cgroup, next to making and removing the cgroup itself.
//
//	go test -run '^$' -bench FenceApply -benchtime 300x ./confine
func BenchmarkFenceApply(b *testing.B) {
	endpoints, err := EndpointsOf(context.Background(), "localhost:7233")
	require.NoError(b, err)
	fence, err := NewFence(endpoints)
	if err != nil || proctree.Parent() == "" {
		b.Skipf("no fence here: %v", err)
	}
	defer fence.Close()
	for _, apply := range []bool{false, true} {
		name := "cgroup"
		if apply {
			name = "cgroup+fence"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				cg, err := proctree.New(proctree.Parent(), proctree.PrefixCommand)
				require.NoError(b, err)
				if apply {
					require.NoError(b, fence.Apply(cg.FD()))
				}
				cg.Close()
			}
		})
	}
}
