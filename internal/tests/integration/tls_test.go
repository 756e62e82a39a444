package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
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
)

// certAuthority issues certificates for a TLS test.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *certAuthority {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fenix test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &certAuthority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a leaf certificate and key to dir and returns their paths.
func (ca *certAuthority) issue(t *testing.T, dir, name string, usage x509.ExtKeyUsage) (certPath, keyPath string, pair tls.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	require.NoError(t, os.WriteFile(certPath, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyPath, keyPEM, 0o600))
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return certPath, keyPath, pair
}

// mtlsProxy terminates TLS (requiring a client certificate from the CA)
// and forwards to the dev server, which speaks plain gRPC.
func mtlsProxy(t *testing.T, ca *certAuthority, serverCert tls.Certificate, upstream string) string {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
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
	ca := newCA(t)
	caPath := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caPath, ca.pem, 0o600))
	_, _, serverPair := ca.issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey, _ := ca.issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	addr := mtlsProxy(t, ca, serverPair, server.HostPort)

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
