package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnsureIssuesOnceAndKeepsWhatIsGood(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	report, err := Ensure(Options{Dir: dir, Owners: map[string]int{"worker": os.Getuid()}})
	require.NoError(t, err)
	require.Len(t, report, 1+len(Identities), "%q", report)
	assert.Contains(t, report[0], "created the certificate authority")

	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the directory holding every key is its owner's alone")
	for id, want := range map[string]os.FileMode{"worker": 0o400, "server": 0o444, "operator": 0o444} {
		info, err := os.Stat(filepath.Join(dir, id, KeyFile))
		require.NoError(t, err)
		assert.Equal(t, want, info.Mode().Perm(), id)
	}
	before, err := os.ReadFile(filepath.Join(dir, "worker", CertFile))
	require.NoError(t, err)

	report, err = Ensure(Options{Dir: dir})
	require.NoError(t, err)
	for _, line := range report {
		assert.Contains(t, line, "kept ")
	}

	// A new server name issues the server's certificate again, and only it.
	report, err = Ensure(Options{Dir: dir, ServerNames: []string{"temporal", "frontend.internal", "10.0.0.7"}})
	require.NoError(t, err)
	require.Len(t, report, len(Identities))
	assert.Contains(t, report[0], "issued "+filepath.Join(dir, "server")+" (temporal; x509: certificate is valid for")
	for _, line := range report[1:] {
		assert.Contains(t, line, "kept ")
	}
	after, err := os.ReadFile(filepath.Join(dir, "worker", CertFile))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	server := readCert(t, filepath.Join(dir, "server", CertFile))
	assert.NoError(t, server.VerifyHostname("frontend.internal"))
	assert.NoError(t, server.VerifyHostname("10.0.0.7"))

	// Close to expiry, every leaf is issued again under the same CA.
	report, err = Ensure(Options{Dir: dir, ServerNames: []string{"temporal", "frontend.internal", "10.0.0.7"},
		Now: func() time.Time { return time.Now().Add(leafLifetime - 10*24*time.Hour) }})
	require.NoError(t, err)
	assert.Len(t, report, len(Identities))
	for _, line := range report {
		assert.Contains(t, line, "issued ")
	}
}

func TestOnlyTheCAsClientsGetThrough(t *testing.T) {
	dir := t.TempDir()
	_, err := Ensure(Options{Dir: dir})
	require.NoError(t, err)
	other := t.TempDir()
	_, err = Ensure(Options{Dir: other})
	require.NoError(t, err)

	serverPair, err := tls.LoadX509KeyPair(filepath.Join(dir, "server", CertFile), filepath.Join(dir, "server", KeyFile))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dir, "server", CAFile))
	require.NoError(t, err)
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverPair},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	handshake := func(cfg *tls.Config) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		// TLS 1.3 reports a refused client certificate on the first read.
		_, err = c.Read(make([]byte, 1))
		if err != nil && err.Error() == "EOF" {
			return nil
		}
		return err
	}
	for _, id := range []string{"worker", "operator", "ui"} {
		cfg, err := ClientTLS(filepath.Join(dir, id), "temporal")
		require.NoError(t, err)
		assert.NoError(t, handshake(cfg), id)
	}
	stranger, err := ClientTLS(filepath.Join(other, "worker"), "temporal")
	require.NoError(t, err)
	stranger.RootCAs = pool
	assert.Error(t, handshake(stranger), "a client of another CA is refused")
	anonymous := &tls.Config{RootCAs: pool, ServerName: "temporal"}
	assert.Error(t, handshake(anonymous), "a client without a certificate is refused")
}

func TestHalfACertificateAuthorityIsAnError(t *testing.T) {
	dir := t.TempDir()
	_, err := Ensure(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, caDir, caKey)))
	_, err = Ensure(Options{Dir: dir})
	require.ErrorContains(t, err, "half a certificate authority")
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cert, err := parseCert(data)
	require.NoError(t, err)
	return cert
}
