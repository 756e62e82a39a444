package integration

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/internal/pki"
)

// mtlsProxy terminates TLS (requiring a client certificate from the CA)
// and forwards to the dev server, which speaks plain gRPC.
func mtlsProxy(t *testing.T, tlsDir string, upstream string) string {
	serverCert, err := tls.LoadX509KeyPair(filepath.Join(tlsDir, "server", pki.CertFile), filepath.Join(tlsDir, "server", pki.KeyFile))
	require.NoError(t, err)
	caPEM, err := os.ReadFile(filepath.Join(tlsDir, "server", pki.CAFile))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12,
	})
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				if err := conn.(*tls.Conn).Handshake(); err != nil {
					return
				}
				up, err := net.Dial("tcp", upstream)
				if err != nil {
					return
				}
				defer up.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(up, conn); done <- struct{}{} }()
				go func() { io.Copy(conn, up); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return l.Addr().String()
}

// TestWorkerAndStarterOverMutualTLS runs the worker and starter binaries
// against a server that requires mutual TLS, configured only through
// envconfig's TEMPORAL_TLS_* variables.
func TestWorkerAndStarterOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	_, err := pki.Ensure(pki.Options{Dir: dir})
	require.NoError(t, err)
	operator := filepath.Join(dir, "operator")
	caPath := filepath.Join(operator, pki.CAFile)
	clientCert, clientKey := filepath.Join(operator, pki.CertFile), filepath.Join(operator, pki.KeyFile)
	addr := mtlsProxy(t, dir, server.HostPort)

	tlsEnv := []string{
		"TEMPORAL_ADDRESS=" + addr, "TEMPORAL_TLS=true", "TEMPORAL_TLS_SERVER_NAME=localhost",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH=" + caPath,
		"TEMPORAL_TLS_CLIENT_CERT_PATH=" + clientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH=" + clientKey,
	}
	queue := newTaskQueue(t)
	worker := exec.Command(filepath.Join(binDir, "worker"), "-task-queue", queue, "-data-dir", t.TempDir(), "-log-format", "text", "-http-addr", "off")
	worker.Env = append(os.Environ(), tlsEnv...)
	var logs lockedBuffer
	worker.Stdout, worker.Stderr = &logs, &logs
	require.NoError(t, worker.Start())
	defer func() { _ = worker.Process.Signal(syscall.SIGTERM); _ = worker.Wait() }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "fenix worker started") }, 30*time.Second, 50*time.Millisecond, "logs:\n%s", logs.String())

	run := func(id string, env ...string) (string, int) {
		cmd := exec.Command(filepath.Join(binDir, "starter"), "run", "-id", id, "examples/calculator.json")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), append([]string{"FENIX_TASK_QUEUE=" + queue}, env...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if exitErr, ok := err.(*exec.ExitError); ok {
			code = exitErr.ExitCode()
		}
		return string(out), code
	}
	out, code := run("it-mtls", tlsEnv...)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "The calculator returned 4.")

	// Without a client certificate the server refuses the connection.
	out, code = run("it-mtls-no-client-cert", "TEMPORAL_ADDRESS="+addr, "TEMPORAL_TLS=true", "TEMPORAL_TLS_SERVER_NAME=localhost", "TEMPORAL_TLS_SERVER_CA_CERT_PATH="+caPath)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "cannot connect to Temporal at "+addr)
}
