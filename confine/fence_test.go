package confine

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/netguard"
)

// TestSandboxProxiesRefuseTheFrontendToo: a sandbox's proxies dial for
// the command from the worker, outside the command's cgroup; an allow
// list that lets localhost through still does not reach the frontend,
// under any name for it, while another port there is reached.
func TestSandboxProxiesRefuseTheFrontendToo(t *testing.T) {
	frontend, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer frontend.Close()
	go acceptAll(frontend)
	other := listenElsewhere(t)
	port := strconv.Itoa(frontend.Addr().(*net.TCPAddr).Port)
	endpoints, err := EndpointsOf(context.Background(), "localhost:"+port)
	require.NoError(t, err)
	var d net.Dialer
	dial := fenceDial(d.DialContext, endpoints)
	for _, address := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		conn, err := dial(context.Background(), "tcp", address)
		if conn != nil {
			conn.Close()
		}
		assert.True(t, errors.Is(err, netguard.ErrBlocked), "%s: %v", address, err)
		if err != nil {
			assert.Contains(t, err.Error(), "FENIX_COMMAND_UNREACHABLE")
		}
	}
	conn, err := dial(context.Background(), "tcp", other)
	require.NoError(t, err)
	conn.Close()
}

// listenElsewhere is the loopback address of a listener in a process of
// its own: a port the test process's own listeners do not make a
// sibling of theirs (see siblingPorts).
func listenElsewhere(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the other server is python3's")
	}
	cmd := exec.Command("python3", "-c", `
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.close()
`)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	return "127.0.0.1:" + strings.TrimSpace(line)
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
